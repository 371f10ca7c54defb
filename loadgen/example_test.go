package loadgen_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/llmload/llmload/loadgen"
)

// Stream one request from a test server that takes 300 ms to the first
// token, and print its time to first token and its token count.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond) // "prefill"
		for _, word := range []string{"Hello", ",", " world", "!"} {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", word)
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()

	c := &loadgen.Client{BaseURL: srv.URL + "/v1"}
	resp, err := c.Do(context.Background(), &loadgen.Request{Model: "bench", Prompt: "Say hello", MaxTokens: 16})
	if err != nil {
		fmt.Println("failed:", err)
		return
	}
	fmt.Println("TTFT:", resp.TTFT().Truncate(100*time.Millisecond))
	fmt.Println("tokens:", resp.OutputTokens(), "counted by", resp.Source)
	fmt.Println("finish:", resp.FinishReason, "text:", resp.Text)
	// Output:
	// TTFT: 300ms
	// tokens: 4 counted by chunks
	// finish: stop text: Hello, world!
}

// Iterate over the chunks of one stream as they arrive.
func ExampleClient_Stream() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 1; i <= 3; i++ {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" %d\"}}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":%d}}\n\n", i, i)
		}
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()

	c := &loadgen.Client{BaseURL: srv.URL + "/v1"}
	for ch, err := range c.Stream(context.Background(), &loadgen.Request{API: loadgen.Completions, Prompt: "Count", MaxTokens: 3}) {
		if err != nil {
			fmt.Println("failed:", err)
			return
		}
		fmt.Printf("%q tokens=%d finish=%q\n", ch.Text, ch.Tokens, ch.FinishReason)
	}
	// Output:
	// " 1" tokens=1 finish=""
	// " 2" tokens=1 finish=""
	// " 3" tokens=1 finish=""
	// "" tokens=0 finish="length"
}

// A client for many streams: StreamTransport reads each response in the
// goroutine that asked for it, with no goroutines of its own.
func ExampleStreamTransport() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, word := range []string{"one", " two", " three"} {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", word)
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()

	tr := loadgen.NewStreamTransport(1000)
	defer tr.CloseIdleConnections()
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: tr}}
	for range 2 {
		resp, err := c.Do(context.Background(), &loadgen.Request{Model: "bench", Prompt: "Count", MaxTokens: 3})
		if err != nil {
			fmt.Println("failed:", err)
			return
		}
		fmt.Println(resp.OutputTokens(), "tokens:", resp.Text)
	}
	// Output:
	// 3 tokens: one two three
	// 3 tokens: one two three
}
