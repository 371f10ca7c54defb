// Quickstart measures a server with four streams (ten seconds by default) and prints
// its time to first token and tokens per second (without -url, llmload's
// simulated server): go run ./examples/quickstart -url http://HOST:8000/v1
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
)

func main() {
	url := flag.String("url", "", "base URL of an OpenAI-compatible API (empty: a simulated server)")
	model := flag.String("model", "", "model name")
	duration := flag.Duration("duration", 10*time.Second, "how long to measure, after a 2 s warm-up")
	flag.Parse()
	if *url == "" {
		srv := loadgentest.NewServer(loadgentest.FastProfile())
		defer srv.Close()
		*url = srv.URL + "/v1"
	}
	g := &loadgen.Generator{
		Client:   &loadgen.Client{BaseURL: *url},
		Source:   loadgen.Repeat(&loadgen.Request{Model: *model, Prompt: "Tell me a long story.", MaxTokens: 256}),
		Load:     loadgen.Closed{Streams: 4},
		Warmup:   2 * time.Second,
		Duration: *duration,
	}
	run, err := g.Run(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	s := run.Summary
	fmt.Printf("%d requests: TTFT p50 %v, p99 %v; %.1f tok/s in all, %.1f a stream\n", s.Completed, s.TTFT.P50.Round(time.Microsecond), s.TTFT.P99.Round(time.Microsecond), s.OutputTokensPerSec, s.PerRequestTokensPerSec)
}
