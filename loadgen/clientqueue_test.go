package loadgen_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// An open loop faster than its in-flight cap allows: arrivals wait on the
// client for a slot. They are counted, every arrival's wait is in Lateness,
// and latency from the scheduled arrival exceeds latency from the send by
// the time each request waited on the client.
func TestClientQueueTime(t *testing.T) {
	_, client := simulated(t, 2*time.Millisecond, 4)
	const n = 120
	var mu sync.Mutex
	var waited, fromDue, fromSend time.Duration
	var completed int
	g := &loadgen.Generator{Client: client, Load: loadgen.Open{Rate: 2000, MaxInFlight: 4, Seed: 7}, Requests: n,
		Source: loadgen.Repeat(completion(16)),
		OnRequest: func(_ *loadgen.Request, tl *metrics.Timeline) {
			if !tl.OK() {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			completed++
			waited += tl.Sent.Sub(tl.Due)
			fromDue += tl.End.Sub(tl.Due)
			fromSend += tl.Latency()
		}}
	run, err := g.Run(t.Context())
	require.NoError(t, err)
	s := run.Summary
	assert.Equal(t, n, run.Launched)
	assert.Equal(t, n, s.Requests)
	assert.Equal(t, n, completed)
	assert.Equal(t, n, s.Completed+s.CompletedOutside+s.WarmupRequests)
	assert.EqualValues(t, n, run.Lateness.Count, "every arrival's wait")
	assert.Positive(t, run.Queued, "arrivals at 2,000/s on 4 slots of 16-token requests wait for one")
	assert.LessOrEqual(t, run.Queued, n)
	assert.Greater(t, run.Lateness.P50, 5*time.Millisecond, "the client's queue")

	due := run.Recorder.Recording(metrics.ScopeAll).Summary.LatencyFromDue
	assert.EqualValues(t, n, due.Count)
	assert.Greater(t, due.P50, s.Latency.P50+5*time.Millisecond)
	// Means add up, to the histograms' precision: from the arrival = from
	// the send + the wait on the client.
	mean := func(d time.Duration) time.Duration { return d / time.Duration(completed) }
	assert.InDelta(t, float64(mean(fromSend)+mean(waited)), float64(mean(fromDue)), float64(50*time.Microsecond))
	assert.InEpsilon(t, float64(mean(fromDue)), float64(due.Mean), 0.01)
	assert.InEpsilon(t, float64(mean(fromSend)), float64(s.Latency.Mean), 0.01)
	t.Logf("%d arrivals, %d queued for a slot; latency p50 %v from the send, %v from the arrival; client wait mean %v",
		n, run.Queued, s.Latency.P50, due.P50, mean(waited))
}
