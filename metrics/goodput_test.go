package metrics_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/llmload/llmload/metrics"
)

// CompletedTokens counts the whole output of each request completed in
// the window, tokens before the window included, and nothing of the
// others.
func TestCompletedTokens(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var rec metrics.Recorder
	rec.SetWindow(metrics.Window{Start: t0, End: t0.Add(time.Second)})
	add := func(from time.Duration, tokens int, finish string) {
		tl := &metrics.Timeline{Sent: t0.Add(from)}
		for i := range tokens {
			rec.Observe(tl, t0.Add(from+time.Duration(i+1)*10*time.Millisecond), 1)
		}
		tl.End, tl.FinishReason = tl.Last, finish
		if finish == "" {
			tl.Kind = metrics.KindCanceled
		}
		rec.Record(tl)
	}
	add(-200*time.Millisecond, 30, "length") // began before the window, ends in it
	add(100*time.Millisecond, 12, "length")
	add(200*time.Millisecond, 5, "")        // cut
	add(-900*time.Millisecond, 4, "length") // the warm-up's
	add(900*time.Millisecond, 20, "length") // ends after the window
	s := rec.Recording(metrics.ScopeWindow).Summary
	assert.Equal(t, 2, s.Completed)
	assert.Equal(t, 42, s.CompletedTokens)
	assert.Equal(t, 1, rec.Recording(metrics.ScopeWarmup).Summary.CompletedOutside, "the warm-up's request")
	assert.Zero(t, rec.Recording(metrics.ScopeWarmup).Summary.CompletedTokens)
}

// A request cut at the end of the window counts as having missed the SLO
// only when it already had: no first token within TTFT of being written,
// or no end within Latency.
func TestSLOMissed(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	slo := metrics.SLO{TTFT: 100 * time.Millisecond, Latency: time.Second}
	for _, tc := range []struct {
		name   string
		tl     metrics.Timeline
		missed bool
	}{
		{"waiting, within TTFT", metrics.Timeline{Sent: ms(0), End: ms(80)}, false},
		{"waiting, past TTFT", metrics.Timeline{Sent: ms(0), End: ms(150)}, true},
		{"late first token", metrics.Timeline{Sent: ms(0), First: ms(120), End: ms(300)}, true},
		{"on time, still within latency", metrics.Timeline{Sent: ms(0), First: ms(50), End: ms(900)}, false},
		{"past latency", metrics.Timeline{Sent: ms(0), First: ms(50), End: ms(1100)}, true},
		{"never written", metrics.Timeline{End: ms(5000)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.missed, slo.Missed(&tc.tl))
		})
	}
	assert.False(t, metrics.SLO{TPOT: time.Millisecond}.Missed(&metrics.Timeline{Sent: ms(0), First: ms(1), Last: ms(500), Tokens: 3, End: ms(500)}),
		"TPOT is not judged before the end")

	rec := metrics.Recorder{SLO: slo}
	rec.SetWindow(metrics.Window{Start: t0, End: ms(2000)})
	for _, end := range []int{80, 150, 1500} {
		tl := &metrics.Timeline{Sent: ms(0), End: ms(end), Kind: metrics.KindCanceled}
		rec.Record(tl)
	}
	s := rec.Recording(metrics.ScopeWindow).Summary
	assert.Equal(t, 3, s.Canceled)
	assert.Equal(t, 2, s.Missed)
}
