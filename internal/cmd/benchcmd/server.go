package benchcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/keyed"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/sweep"
)

// identifyTimeout bounds asking a real server who it is.
const identifyTimeout = 5 * time.Second

// Identify asks the server at url which engine and version it runs and
// what it publishes of its limits, with the client's key and headers,
// and records the answer, and the notes on it, in s. A server that does
// not say is left unknown, and Identify returns why: the benchmark does
// not depend on it, so the caller tells the user and goes on.
func Identify(ctx context.Context, client *loadgen.Client, url string, s *capacity.Server) error {
	ctx, cancel := context.WithTimeout(ctx, identifyTimeout)
	defer cancel()
	d, err := capacity.DiscoverModel(ctx, keyed.Client(client.HTTPClient, client, url), url, s.Model)
	if d != nil {
		for _, n := range d.Notes {
			if !slices.Contains(s.Notes, n) {
				s.Notes = append(s.Notes, n)
			}
		}
	}
	if d == nil || d.Engine == capacity.EngineUnknown {
		if err == nil {
			err = errors.New("it publishes none of what llmload reads")
		}
		return fmt.Errorf("the server's engine is unknown: %w", err)
	}
	s.Engine, s.Version, s.Limits = d.Engine, d.Version, d.Limits
	return nil
}

// progress returns what prints a line on w as each run ends: its rate,
// its throughput and its median latencies (for api Embeddings and Rerank,
// input tokens and the latency alone), and why a rate was stopped as
// over capacity.
func progress(w io.Writer, api loadgen.API) func(sweep.Result) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }
	return func(r sweep.Result) {
		if api == loadgen.Embeddings || api == loadgen.Rerank {
			fmt.Fprintf(w, "%-28s %6.2f req/s  %8.1f in tok/s  latency p50 %s ms  %d completed, %d failed\n",
				r.Label, r.RequestRate, r.InputTokensPerSec, ms(r.Summary.Latency.P50), r.Summary.Completed, r.Summary.Failed)
		} else {
			fmt.Fprintf(w, "%-28s %6.2f req/s  %8.1f out tok/s  TTFT p50 %s ms  TPOT p50 %s ms  %d completed, %d failed\n",
				r.Label, r.RequestRate, r.OutputTokensPerSec, ms(r.Summary.TTFT.P50), ms(r.Summary.TPOT.P50), r.Summary.Completed, r.Summary.Failed)
		}
		if r.OverCapacity != "" {
			fmt.Fprintf(w, "%-28s over capacity: %s\n", "", r.OverCapacity)
		}
	}
}
