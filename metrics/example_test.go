package metrics_test

import (
	"encoding/json"
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

	s := rec.Recording(metrics.ScopeWindow).Summary
	fmt.Println("output tokens:", s.OutputTokens)
	fmt.Println("measured for:", s.MeasuredFor.Round(time.Millisecond))
	fmt.Printf("total tok/s: %.1f\n", s.OutputTokensPerSec)
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
	fmt.Println(h.Summary().Count, h.Quantile(0.5).Round(time.Millisecond), h.Quantile(0.99).Round(time.Millisecond))
	// Output: 1000 500ms 990ms
}

// A window's summary sets the warm-up apart: a cold first request that
// ended before the window opened moves none of its figures, and is
// summarised on its own. ScopeAll is the speed-test matrix's view, where
// TTFT is over every request a cell launched.
func ExampleRecorder_Recording_warmup() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var rec metrics.Recorder
	request := func(sent, ttft time.Duration) {
		tl := &metrics.Timeline{Start: t0.Add(sent), Sent: t0.Add(sent)}
		for i := range 10 {
			rec.Observe(tl, t0.Add(sent+ttft+time.Duration(i)*10*time.Millisecond), 1)
		}
		tl.End, tl.FinishReason = tl.Last, "length"
		rec.Record(tl)
	}
	request(0, 900*time.Millisecond) // a cold start, during the warm-up
	rec.SetWindow(metrics.Window{Start: t0.Add(2 * time.Second), End: t0.Add(4 * time.Second)})
	request(2*time.Second, 50*time.Millisecond)
	request(3*time.Second, 50*time.Millisecond)

	for _, scope := range []metrics.Scope{metrics.ScopeWindow, metrics.ScopeWarmup, metrics.ScopeAll} {
		s := rec.Recording(scope).Summary
		fmt.Printf("%-6s requests %d (warm-up %d, completed %d, outside %d), TTFT max %v\n",
			scope, s.Requests, s.WarmupRequests, s.Completed, s.CompletedOutside, s.TTFT.Max)
	}
	// Output:
	// window requests 3 (warm-up 1, completed 2, outside 0), TTFT max 50ms
	// warmup requests 1 (warm-up 0, completed 0, outside 1), TTFT max 900ms
	// all    requests 3 (warm-up 0, completed 2, outside 1), TTFT max 900ms
}

// Two load generators measured one window, each with its own streams; the
// leader merges what they sent (as JSON) into the measurement of both.
func ExampleMergeRecordings() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	window := metrics.Window{Start: t0, End: t0.Add(10 * time.Second)}
	shard := func(step time.Duration, streams int) []byte {
		var rec metrics.Recorder
		rec.SetWindow(window)
		for range streams {
			tl := &metrics.Timeline{Sent: t0}
			for t := t0.Add(100 * time.Millisecond); t.Before(t0.Add(5 * time.Second)); t = t.Add(step) {
				rec.Observe(tl, t, 1)
			}
			tl.End, tl.FinishReason = tl.Last, "length"
			rec.Record(tl)
		}
		b, _ := json.Marshal(rec.Recording(metrics.ScopeWindow)) // sent to the leader
		return b
	}
	var recs []metrics.Recording
	for _, b := range [][]byte{shard(10*time.Millisecond, 3), shard(20*time.Millisecond, 2)} {
		var r metrics.Recording
		if err := json.Unmarshal(b, &r); err != nil {
			fmt.Println(err)
			return
		}
		recs = append(recs, r)
	}
	all, err := metrics.MergeRecordings(recs...)
	if err != nil {
		fmt.Println(err)
		return
	}
	s := all.Summary
	fmt.Println("requests:", s.Requests, "tokens:", s.OutputTokens)
	fmt.Println("TBT p50:", s.TBT.P50.Round(time.Millisecond), "p99:", s.TBT.P99.Round(time.Millisecond))
	fmt.Println("TBT values:", all.Histograms.TBT.Summary().Count)
	// Output:
	// requests: 5 tokens: 1960
	// TBT p50: 10ms p99: 20ms
	// TBT values: 5
}

// A Recorder with Every set keeps the run over time: here two requests
// a second, each 50 tokens 10 ms apart after a first token at 100 ms (300
// ms in the second second: a bucket's percentiles are within 1.6%, so
// 298). The last bucket's rate is over the part of it the run covered.
func ExampleRecorder_Series() {
	rec := &metrics.Recorder{Every: time.Second}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for i := range 6 {
		sent := t0.Add(time.Duration(i) * 500 * time.Millisecond)
		ttft := 100 * time.Millisecond
		if i/2 == 1 {
			ttft = 300 * time.Millisecond
		}
		tl := metrics.Timeline{Start: sent, Sent: sent}
		for k := range 50 {
			rec.Observe(&tl, sent.Add(ttft+time.Duration(k)*10*time.Millisecond), 1)
		}
		tl.End, tl.Done = tl.Last, true
		rec.Record(&tl)
	}
	s := rec.Series()
	for i := range s.TokensPerSec {
		fmt.Printf("%ds: %.0f tok/s, %d started, %d finished, TTFT p50 %.0f ms, inter-token p50 %.0f ms\n",
			i, s.TokensPerSec[i], s.Started[i], s.Finished[i], s.TTFTP50[i], s.ITLP50[i])
	}
	// Output:
	// 0s: 90 tok/s, 2 started, 1 finished, TTFT p50 100 ms, inter-token p50 10 ms
	// 1s: 80 tok/s, 2 started, 2 finished, TTFT p50 298 ms, inter-token p50 10 ms
	// 2s: 120 tok/s, 2 started, 2 finished, TTFT p50 100 ms, inter-token p50 10 ms
	// 3s: 111 tok/s, 0 started, 1 finished, TTFT p50 0 ms, inter-token p50 10 ms
}
