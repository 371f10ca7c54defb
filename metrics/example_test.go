package metrics_test

import (
	"fmt"
	"time"

	"github.com/llmload/llmload/metrics"
)

// Compute a cell's columns from hand-made timelines: the way to unit-test
// throughput math against llmload's definitions.
func Example() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var rec metrics.Recorder
	rec.SetWindow(metrics.Window{Start: t0, End: t0.Add(10 * time.Second)})

	// Two streams: one token every 20 ms and every 40 ms until 4 s, first
	// tokens 250 ms and 500 ms after their requests were written. With two
	// requests the median is the lower one (quantiles are nearest-rank).
	for i, step := range []time.Duration{20 * time.Millisecond, 40 * time.Millisecond} {
		tl := &metrics.Timeline{Sent: t0}
		first := t0.Add(time.Duration(i+1) * 250 * time.Millisecond)
		for t := first; t.Before(t0.Add(4 * time.Second)); t = t.Add(step) {
			rec.Observe(tl, t, 1)
		}
		tl.End, tl.FinishReason = tl.Last, "length"
		rec.Record(tl)
	}

	s := rec.Summary()
	fmt.Println("output tokens:", s.OutputTokens)
	fmt.Println("measured for:", s.MeasuredFor.Round(time.Millisecond))
	fmt.Printf("total tok/s: %.1f\n", s.TotalTokensPerSec)
	fmt.Printf("per request tok/s (median): %.1f\n", s.PerRequestTokensPerSec)
	fmt.Println("TTFT p50:", s.TTFT.P50.Round(time.Millisecond))
	fmt.Println("completed:", s.Completed)
	// Output:
	// output tokens: 276
	// measured for: 3.99s
	// total tok/s: 69.2
	// per request tok/s (median): 50.0
	// TTFT p50: 250ms
	// completed: 2
}

// Quantiles are fractions: 0.5 is the median.
func ExampleHistogram() {
	var h metrics.Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	fmt.Println(h.Count(), h.Quantile(0.5).Round(time.Millisecond), h.Quantile(0.99).Round(time.Millisecond))
	// Output: 1000 500ms 990ms
}
