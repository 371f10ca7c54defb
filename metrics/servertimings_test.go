package metrics_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/metrics"
)

func TestSplit(t *testing.T) {
	t0 := time.Now()
	tl := &metrics.Timeline{Sent: t0, First: t0.Add(50 * time.Millisecond), Done: true}
	_, _, _, ok := tl.Split()
	assert.False(t, ok, "no server timings")
	tl.Server = metrics.ServerTimings{Source: "tgi", Queue: 5 * time.Millisecond, Generation: time.Second}
	_, _, _, ok = tl.Split()
	assert.False(t, ok, "a queue without a prefill does not split")
	tl.Server = metrics.ServerTimings{Source: "vllm", Queue: 5 * time.Millisecond, Prefill: 30 * time.Millisecond}
	q, p, rest, ok := tl.Split()
	assert.True(t, ok)
	assert.Equal(t, []time.Duration{5 * time.Millisecond, 30 * time.Millisecond, 15 * time.Millisecond}, []time.Duration{q, p, rest})

	var r metrics.Recorder
	r.Record(tl)
	r.Record(&metrics.Timeline{Sent: t0, First: t0.Add(time.Millisecond), Done: true}) // no timings: not split
	sp := r.Recording(metrics.ScopeAll).Summary.Split
	assert.EqualValues(t, 1, sp.Requests)
	assert.InDelta(t, 0.3, float64(sp.Rest.Mean)/float64(sp.TTFT.Mean), 0.01, "the rest is 30% of the mean TTFT")
	assert.True(t, sp.Outside, "15 ms of 50 outside the server is large")

	var small metrics.Recorder
	tl.First = t0.Add(36 * time.Millisecond) // 1 ms outside the server: below the floor
	small.Record(tl)
	assert.False(t, small.Recording(metrics.ScopeAll).Summary.Split.Outside)
}

// The split and the latency from the due time are in a recording's
// histograms and merge exactly: two recorders' merge is the recording of
// one that saw every request, and a recording without them (as written
// before they were kept) merges with one with them.
func TestSplitMerges(t *testing.T) {
	t0 := time.Now()
	var a, b, all metrics.Recorder
	for i := range 200 {
		tl := &metrics.Timeline{Due: t0, Start: t0.Add(time.Duration(i%7) * time.Millisecond), Done: true}
		tl.Sent = tl.Start
		tl.First = tl.Sent.Add(time.Duration(20+i) * time.Millisecond)
		tl.Last, tl.End = tl.First, tl.First.Add(time.Millisecond)
		tl.Chunks, tl.Tokens = 1, 1
		if i%3 != 0 {
			tl.Server = metrics.ServerTimings{Source: "vllm", Queue: time.Duration(i) * time.Millisecond / 2, Prefill: 10 * time.Millisecond}
		}
		r := &a
		if i%2 == 1 {
			r = &b
		}
		r.Record(tl)
		all.Record(tl)
	}
	m, err := metrics.MergeRecordings(a.Recording(metrics.ScopeAll), b.Recording(metrics.ScopeAll))
	require.NoError(t, err)
	want := all.Recording(metrics.ScopeAll).Summary
	assert.Equal(t, want.Split, m.Summary.Split)
	assert.Equal(t, want.LatencyFromDue, m.Summary.LatencyFromDue)
	assert.EqualValues(t, 133, m.Summary.Split.Requests)
	assert.EqualValues(t, 200, m.Summary.LatencyFromDue.Count)

	// Through JSON, as a shard's report travels.
	j, err := json.Marshal(a.Recording(metrics.ScopeAll))
	require.NoError(t, err)
	var back metrics.Recording
	require.NoError(t, json.Unmarshal(j, &back))
	m, err = metrics.MergeRecordings(back, b.Recording(metrics.ScopeAll))
	require.NoError(t, err)
	assert.Equal(t, want.Split, m.Summary.Split)

	// An old recording: no split, no latency from the due time.
	var old metrics.Recorder
	old.Record(&metrics.Timeline{Sent: t0, First: t0.Add(time.Millisecond), Last: t0.Add(time.Millisecond), End: t0.Add(2 * time.Millisecond), Chunks: 1, Tokens: 1, Done: true})
	or := old.Recording(metrics.ScopeAll)
	assert.Nil(t, or.Histograms.SplitTTFT, "an empty split is absent")
	j, err = json.Marshal(or)
	require.NoError(t, err)
	assert.NotContains(t, string(j), "split")
	m, err = metrics.MergeRecordings(or, all.Recording(metrics.ScopeAll))
	require.NoError(t, err)
	assert.Equal(t, want.Split, m.Summary.Split)

	// A summary that claims a split its histograms do not hold is refused.
	bad := all.Recording(metrics.ScopeAll)
	bad.Histograms.SplitQueue = nil
	_, err = metrics.MergeRecordings(bad)
	require.Error(t, err)
}
