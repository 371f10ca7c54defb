package loadgen_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// cpuTime returns the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// streamBody renders n one-token chunks in OpenAI's chat shape (with vLLM's
// per-chunk usage when usage is set), a finish chunk and [DONE].
func streamBody(n int, usage bool) []byte {
	var b strings.Builder
	for i := range n {
		u := ""
		if usage {
			u = fmt.Sprintf(`,"usage":{"prompt_tokens":42,"total_tokens":%d,"completion_tokens":%d}`, 43+i, i+1)
		}
		fmt.Fprintf(&b, `data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]%s}`+"\n\n", u)
	}
	b.WriteString(`data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]}` + "\n\ndata: [DONE]\n\n")
	return []byte(b.String())
}

// BenchmarkClientStream streams 1-token chunks from a loopback server as
// fast as the client reads them. The server writes a pre-rendered body in
// 64 KiB writes, so nearly all the CPU is the client's; tokens/cpu-s counts
// the whole process's CPU, server included, and so understates the client.
func BenchmarkClientStream(b *testing.B) {
	const tokens = 10000
	for _, tc := range []struct {
		name  string
		usage bool
	}{{"openai-chat", false}, {"vllm-continuous-usage", true}} {
		b.Run(tc.name, func(b *testing.B) {
			body := streamBody(tokens, tc.usage)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				for off := 0; off < len(body); off += 64 << 10 {
					if _, err := w.Write(body[off:min(off+64<<10, len(body))]); err != nil {
						return
					}
				}
			}))
			defer srv.Close()
			c := &loadgen.Client{BaseURL: srv.URL, HTTPClient: srv.Client()}
			r := &loadgen.Request{Model: "m", Prompt: "p"}
			var rec metrics.Recorder
			rec.SetWindow(metrics.Window{Start: time.Now(), End: time.Now().Add(time.Hour)})
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			cpu0 := cpuTime()
			b.ResetTimer()
			n := 0
			for b.Loop() {
				var tl metrics.Timeline
				if err := c.Measure(b.Context(), r, &tl, &rec); err != nil {
					b.Fatal(err)
				}
				rec.Record(&tl)
				n += tl.Tokens
			}
			b.StopTimer()
			cpu := cpuTime() - cpu0
			runtime.ReadMemStats(&ms1)
			if n != b.N*tokens {
				b.Fatalf("counted %d tokens, want %d", n, b.N*tokens)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(n)/cpu.Seconds(), "tokens/cpu-s")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(n), "allocs/token")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(n), "B/token")
		})
	}
}

// BenchmarkParseChunk decodes one chunk, without the network.
func BenchmarkParseChunk(b *testing.B) {
	for _, tc := range []struct{ name, data string }{
		{"openai-chat", `{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]}`},
		{"vllm-continuous-usage", `{"id":"chat-b183bb5829194e8891cacceabfdb5274","object":"chat.completion.chunk","created":1731295402,"model":"meta-llama/Meta-Llama-3.1-70B-Instruct","choices":[{"index":0,"delta":{"content":" Sam"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":46,"total_tokens":48,"completion_tokens":2}}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			data := []byte(tc.data)
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := loadgen.ParseChunkForBenchmark(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
