package loadgen_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmload/llmload/internal/harness/childserver"
	"github.com/llmload/llmload/internal/procstat"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// cpuTime returns the process's user + system CPU time so far, as the
// generator's health monitor reads it.
func cpuTime() time.Duration {
	d, _ := procstat.CPU(0)
	return d
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
// fast as the client reads them: 10,000 tokens a request, in OpenAI's chat
// shape or with vLLM's usage on every chunk. The server writes a
// pre-rendered body in 64 KiB writes. With server=process it is this test
// binary run again as a process of its own, and tokens/cpu-s counts the
// client's CPU alone (the benchmark process's), on net/http's transport and
// on StreamTransport; with server=in-process it counts client and server
// together and so understates the client.
//
//	go test -run '^$' -bench ClientStream -benchtime 3s -count 3 ./loadgen
func BenchmarkClientStream(b *testing.B) {
	const tokens = 10000
	for _, tc := range []struct {
		name  string
		usage bool
	}{{"openai-chat", false}, {"vllm-continuous-usage", true}} {
		b.Run(tc.name+"/server=process", func(b *testing.B) {
			url := startBlastProcess(b) + blastPath(tc.usage)
			b.Run("transport=http", func(b *testing.B) {
				benchClientStream(b, url, loadgen.NewTransport(1), tokens)
			})
			b.Run("transport=stream", func(b *testing.B) {
				benchClientStream(b, url, loadgen.NewStreamTransport(1), tokens)
			})
		})
		b.Run(tc.name+"/server=in-process", func(b *testing.B) {
			srv := httptest.NewServer(blastHandler())
			defer srv.Close()
			benchClientStream(b, srv.URL+blastPath(tc.usage), loadgen.NewTransport(1), tokens)
		})
	}
}

func benchClientStream(b *testing.B, baseURL string, tr http.RoundTripper, tokens int) {
	c := &loadgen.Client{BaseURL: baseURL, HTTPClient: &http.Client{Transport: tr}}
	defer c.CloseIdleConnections()
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
}

// blastServerEnv, set, makes the test binary serve blastHandler instead of
// running tests (see TestMain).
const blastServerEnv = "LLMLOAD_BLAST_SERVER"

// blastPath is the API root under which blastHandler serves bodies with
// vLLM's usage on every chunk, or without.
func blastPath(usage bool) string {
	if usage {
		return "/usage/v1"
	}
	return "/v1"
}

// blastHandler writes 10,000 one-token chunks as fast as the connection
// takes them.
func blastHandler() http.Handler {
	plain, usage := streamBody(10000, false), streamBody(10000, true)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := plain
		if strings.HasPrefix(r.URL.Path, "/usage/") {
			body = usage
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for off := 0; off < len(body); off += 64 << 10 {
			if _, err := w.Write(body[off:min(off+64<<10, len(body))]); err != nil {
				return
			}
		}
	})
}

// serveBlast serves blastHandler on a free loopback port, says where on
// stderr, and returns on SIGTERM or SIGINT.
func serveBlast() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "blast server on http://%s\n", ln.Addr())
	go http.Serve(ln, blastHandler())
	<-ctx.Done()
	return 0
}

// startBlastProcess runs this test binary as the blast server and returns
// its URL; the process ends with the benchmark.
func startBlastProcess(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), blastServerEnv+"=1")
	srv, err := childserver.Start(b.Context(), cmd, servingOn)
	if err != nil {
		b.Skipf("cannot start the server process: %v", err)
	}
	b.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			b.Logf("the server process: %v\n%s", err, srv.Output())
		}
	})
	return "http://" + srv.Addr
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

// BenchmarkRequestReuse is what a request sent again costs before it goes
// out: Body, which returns the encoding made on first use after checking
// that no field changed since. The request is a 128K-token chat (a 512 KiB
// prompt in three messages), with Extra fields and headers, as the matrix's
// largest cells send; the strings are still the ones first encoded, as with
// Repeat.
//
//	go test -run '^$' -bench RequestReuse -count 5 ./loadgen
func BenchmarkRequestReuse(b *testing.B) {
	prompt := strings.Repeat("lorem ", 512<<10/6)
	temp := 0.0
	r := &loadgen.Request{
		Model: "m", MaxTokens: 1024, IgnoreEOS: true, Temperature: &temp,
		Messages: []loadgen.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: prompt}, {Role: "user", Content: "go on"}},
		Extra:    map[string]any{"top_k": 1, "seed": 7, "stop": []string{"\n\n"}},
		Header:   http.Header{"X-Team": {"perf"}, "X-Run": {"42"}},
	}
	if _, err := r.Body(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Body(); err != nil {
			b.Fatal(err)
		}
	}
}
