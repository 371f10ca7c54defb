package loadgen_test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// coldStartServer streams 5 tokens 5 ms apart; its first cold requests wait
// coldTTFT before their first token, the others 5 ms, as a server that
// compiles or loads on its first requests would.
func coldStartServer(t *testing.T, cold int64, coldTTFT time.Duration) *loadgen.Client {
	t.Helper()
	var n atomic.Int64
	_, c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		f := sseHeaders(w)
		ttft := 5 * time.Millisecond
		if n.Add(1) <= cold {
			ttft = coldTTFT
		}
		select {
		case <-time.After(ttft):
		case <-r.Context().Done():
			return
		}
		for i := range 5 {
			if i > 0 {
				time.Sleep(5 * time.Millisecond)
			}
			io.WriteString(w, tokenChunk("a"))
			f.Flush()
		}
		io.WriteString(w, finishChunk)
	})
	return c
}

// TestWarmupDoesNotMoveTheWindow: slow first requests that end during the
// warm-up are summarised apart; the window's TTFT, time between tokens and
// latency are the steady state's, and every request is counted once.
func TestWarmupDoesNotMoveTheWindow(t *testing.T) {
	const workers = 4
	// A cold start of 1 s stands well apart from the steady state's
	// requests of 25 ms even when a loaded machine stops the process for
	// some hundreds of milliseconds.
	const cold = time.Second
	c := coldStartServer(t, workers, cold)
	g := &loadgen.Generator{Client: c, Source: loadgen.Repeat(req()), Load: loadgen.Closed{Streams: workers},
		Warmup: 2 * time.Second, Duration: 1500 * time.Millisecond}
	run, err := g.Run(t.Context())
	require.NoError(t, err)
	s, w := run.Summary, run.WarmupSummary

	// The cold starts are the warm-up's, and only the warm-up's.
	require.GreaterOrEqual(t, w.Requests, workers, "the four cold starts ended in the warm-up")
	assert.GreaterOrEqual(t, w.TTFT.Max, cold)
	assert.EqualValues(t, w.Requests, w.TTFT.Count)
	assert.Equal(t, w.Requests, s.WarmupRequests)

	// The window's figures are the steady state's: a 5 ms first token, where
	// the warm-up's 1 s would be its p99 and its maximum.
	require.Positive(t, s.Completed)
	assert.Less(t, s.TTFT.Max, cold*3/4, "no cold start in the window's TTFT: %+v", s.TTFT)
	assert.Less(t, s.TTFT.P99, cold*3/4)
	assert.Less(t, s.Latency.Max, cold*3/4, "no cold start in the window's latency: %+v", s.Latency)
	// The window's requests with a first token: all but those cut at its
	// end before theirs.
	assert.LessOrEqual(t, s.TTFT.Count, int64(s.Requests-s.WarmupRequests))
	assert.GreaterOrEqual(t, s.TTFT.Count, int64(s.Completed))
	assert.Positive(t, s.OutputTokensPerSec)

	// Every request is counted in exactly one outcome.
	assert.Equal(t, run.Launched, s.Requests)
	assert.Equal(t, s.Requests, s.WarmupRequests+s.Completed+s.CompletedOutside+s.Failed+s.Canceled, "%+v", s)
	assert.Equal(t, w.Requests, w.Completed+w.CompletedOutside+w.Failed+w.Canceled)
	assert.Equal(t, w.Requests, w.CompletedOutside, "the warm-up's completed requests ended before the window")

	// Everything together, as the matrix reads a cell.
	all := run.Recorder.Recording(metrics.ScopeAll).Summary
	assert.Equal(t, s.Requests, all.Requests)
	assert.EqualValues(t, s.TTFT.Count+w.TTFT.Count, all.TTFT.Count)
	assert.Equal(t, w.TTFT.Max, all.TTFT.Max)
}

// TestRunEndedInWarmup: a run cancelled before its window opens reports
// every request as the warm-up's, with an empty window.
func TestRunEndedInWarmup(t *testing.T) {
	c := coldStartServer(t, 0, 0)
	g := &loadgen.Generator{Client: c, Source: loadgen.Repeat(req()), Load: loadgen.Closed{Streams: 2},
		Warmup: time.Minute, Duration: time.Second}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	run, err := g.Run(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotNil(t, run)
	s, w := run.Summary, run.WarmupSummary
	require.Positive(t, w.Requests)
	assert.Equal(t, run.Launched, s.Requests)
	assert.Equal(t, s.Requests, s.WarmupRequests, "every request is the warm-up's")
	assert.Zero(t, s.Window.Duration())
	assert.Zero(t, s.OutputTokens)
	assert.Zero(t, s.TTFT.Count)
	assert.Equal(t, w.Requests, w.CompletedOutside+w.Failed+w.Canceled)
}
