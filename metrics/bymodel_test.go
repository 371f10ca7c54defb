package metrics_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/metrics"
)

// TestRecorderByModel: with ByModel, each model's recording holds its own
// requests, tokens and gaps in the same window, and the models add up to
// the whole.
func TestRecorderByModel(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := &metrics.Recorder{ByModel: true}
	r.SetWindow(metrics.Window{Start: t0, End: t0.Add(10 * time.Second)})
	for i := range 40 {
		model := "a"
		if i%4 == 3 {
			model = "b"
		}
		start := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		tl := &metrics.Timeline{Model: model, Due: start, Start: start, Sent: start}
		for k := range 10 + i%3 {
			r.Observe(tl, start.Add(time.Duration(20+k*5)*time.Millisecond), 1)
		}
		tl.End, tl.FinishReason, tl.Done = tl.Last, "length", true
		r.Record(tl)
	}
	rec := r.Recording(metrics.ScopeWindow)
	require.Len(t, rec.Models, 2)
	a, b := rec.Models["a"].Summary, rec.Models["b"].Summary
	assert.Equal(t, 30, a.Completed)
	assert.Equal(t, 10, b.Completed)
	assert.Equal(t, rec.Summary.Completed, a.Completed+b.Completed)
	assert.Equal(t, rec.Summary.OutputTokens, a.OutputTokens+b.OutputTokens)
	assert.Equal(t, rec.Summary.CompletedTokens, a.CompletedTokens+b.CompletedTokens)
	assert.Equal(t, rec.Summary.ITL.Count, a.ITL.Count+b.ITL.Count)
	assert.Equal(t, rec.Summary.Window, a.Window)

	merged, err := metrics.MergeRecordings(rec, rec)
	require.NoError(t, err)
	assert.Equal(t, 2*b.Completed, merged.Models["b"].Summary.Completed)

	plain := &metrics.Recorder{}
	plain.Record(&metrics.Timeline{Model: "a"})
	assert.Nil(t, plain.Recording(metrics.ScopeAll).Models, "without ByModel")
}

// TestSLOOnTTFO: a TTFO objective judges the first answer token, after
// reasoning: a request that answered late misses it though its first
// token was early, and one that never answered misses it.
func TestSLOOnTTFO(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := &metrics.Recorder{SLO: metrics.SLO{TTFO: 500 * time.Millisecond}}
	for _, answer := range []time.Duration{100 * time.Millisecond, 2 * time.Second, 0} {
		tl := &metrics.Timeline{Start: t0, Sent: t0}
		r.Observe(tl, t0.Add(50*time.Millisecond), 1)
		if answer > 0 {
			tl.FirstAnswer = t0.Add(answer)
			r.Observe(tl, t0.Add(answer), 1)
		}
		tl.ReasoningTokens = 1
		tl.End, tl.FinishReason, tl.Done = tl.Last, "length", true
		r.Record(tl)
	}
	s := r.Recording(metrics.ScopeAll).Summary
	assert.Equal(t, 3, s.Completed)
	assert.Equal(t, 1, s.Good, "only the request that answered within 500 ms")
}
