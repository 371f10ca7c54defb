// Command clientbench is llmload's side of the client comparison that
// run.sh makes by hand: it keeps N streams of long completions open against
// a paced server for a while, in a closed loop, and prints what it counted.
// The script measures its CPU from outside, as it does the other clients'.
//
//	go run ./internal/harness/clientbench -url http://127.0.0.1:8000/v1 -streams 64 -duration 20s -read poll
//
// -read picks how the bodies are read: poll (StreamTransport on its
// pollers), goroutine (StreamTransport, a goroutine a stream) or http
// (net/http's transport).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8000/v1", "the server's API root")
	streams := flag.Int("streams", 64, "streams kept open")
	duration := flag.Duration("duration", 20*time.Second, "how long to stream")
	maxTokens := flag.Int("max-tokens", 256, "tokens a request")
	read := flag.String("read", "poll", "how bodies are read: poll, goroutine or http")
	flag.Parse()
	if err := run(*url, *streams, *duration, *maxTokens, *read); err != nil {
		fmt.Fprintln(os.Stderr, "clientbench:", err)
		os.Exit(1)
	}
}

func run(url string, streams int, duration time.Duration, maxTokens int, read string) error {
	var tr http.RoundTripper
	switch read {
	case "poll", "goroutine":
		st := loadgen.NewStreamTransport(streams)
		st.Poll = read == "poll"
		tr = st
	case "http":
		tr = loadgen.NewTransport(streams)
	default:
		return fmt.Errorf("-read %q: want poll, goroutine or http", read)
	}
	c := &loadgen.Client{BaseURL: url, HTTPClient: &http.Client{Transport: tr}}
	defer c.CloseIdleConnections()
	req := &loadgen.Request{Model: "bench", Prompt: "Write a story.", MaxTokens: maxTokens, IgnoreEOS: true}
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var tokens, done, failed atomic.Int64
	var (
		mu       sync.Mutex
		firstErr error
	)
	var wg sync.WaitGroup
	for range streams {
		wg.Go(func() {
			for ctx.Err() == nil {
				var tl metrics.Timeline
				err := c.Measure(ctx, req, &tl, nil)
				tokens.Add(int64(tl.Tokens))
				switch {
				case err == nil:
					done.Add(1)
				case ctx.Err() == nil:
					failed.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	fmt.Printf("llmload-%s: %d tokens read, %d requests completed, %d failed\n", read, tokens.Load(), done.Load(), failed.Load())
	if firstErr != nil {
		return fmt.Errorf("%d requests failed; the first: %w", failed.Load(), firstErr)
	}
	return nil
}
