package metrics_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

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
	sp := r.SplitOf(metrics.ScopeAll)
	assert.EqualValues(t, 1, sp.Requests)
	assert.InDelta(t, 0.3, float64(sp.Rest.Mean)/float64(sp.TTFT.Mean), 0.01, "the rest is 30% of the mean TTFT")
}
