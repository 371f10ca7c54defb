package metrics_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/metrics"
)

// TestHistogramExactFigures: count, minimum, maximum and mean come back as
// recorded, to the nanosecond, not as a bucket's bound (100 ms used to read
// back as a 99.968 ms minimum).
func TestHistogramExactFigures(t *testing.T) {
	var h metrics.Histogram
	h.Record(100 * time.Millisecond)
	h.Record(150 * time.Millisecond)
	h.RecordN(200*time.Millisecond+500*time.Nanosecond, 2)
	assert.EqualValues(t, 4, h.Count())
	assert.Equal(t, 100*time.Millisecond, h.Min())
	assert.Equal(t, 200*time.Millisecond+500*time.Nanosecond, h.Max())
	assert.Equal(t, (100*time.Millisecond+150*time.Millisecond+2*(200*time.Millisecond+500*time.Nanosecond))/4, h.Mean())
	assert.Equal(t, h.Min(), h.Quantile(0), "the 0th quantile is the minimum")
	assert.Equal(t, h.Max(), h.Quantile(1), "the 100th is the maximum")

	s := h.Summary()
	assert.Equal(t, h.Min(), s.Min)
	assert.Equal(t, h.Max(), s.Max)
	assert.Equal(t, h.Mean(), s.Mean)

	// Equal values read back exactly at every quantile.
	var same metrics.Histogram
	same.RecordN(100*time.Millisecond, 1000)
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 1} {
		assert.Equal(t, 100*time.Millisecond, same.Quantile(q), "q=%v", q)
	}

	// Below a microsecond, where the buckets cannot tell values apart.
	var tiny metrics.Histogram
	tiny.Record(300 * time.Nanosecond)
	tiny.Record(700 * time.Nanosecond)
	assert.Equal(t, 300*time.Nanosecond, tiny.Min())
	assert.Equal(t, 700*time.Nanosecond, tiny.Max())
	assert.Equal(t, 500*time.Nanosecond, tiny.Mean())
}

// TestHistogramMeanDoesNotOverflow: a million hour-long values sum to more
// than an int64 of nanoseconds holds.
func TestHistogramMeanDoesNotOverflow(t *testing.T) {
	var h metrics.Histogram
	h.RecordN(time.Hour, 5_000_000) // 1.8e22 ns in all
	h.Record(0)
	assert.Equal(t, time.Hour/5_000_001*5_000_000+time.Hour%5_000_001*5_000_000/5_000_001, h.Mean())
	assert.Equal(t, time.Duration(0), h.Min())
	assert.Equal(t, time.Hour, h.Max())
}

// TestHistogramQuantileResolution checks the resolution Quantile documents
// against the exact nearest-rank quantiles of random values from 1 µs to an
// hour: at most 1 µs low below 2.048 ms, at most 0.1% high above it.
func TestHistogramQuantileResolution(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		var h metrics.Histogram
		n := 1 + r.IntN(5000)
		values := make([]time.Duration, n)
		for i := range values {
			// log-uniform over 1 µs … 1 h
			values[i] = time.Duration(float64(time.Microsecond) * math.Pow(3.6e9, r.Float64()))
			h.Record(values[i])
		}
		slices.Sort(values)
		for _, q := range []float64{0, 0.01, 0.1, 0.25, 0.5, 0.9, 0.99, 0.999, 1} {
			rank := max(int(q*float64(n)+0.5), 1)
			want := values[rank-1]
			got := h.Quantile(q)
			if want < 2048*time.Microsecond {
				assert.InDelta(t, float64(want), float64(got), float64(time.Microsecond), "q=%v of %d values", q, n)
			} else {
				assert.GreaterOrEqual(t, float64(got), float64(want)-float64(time.Microsecond), "q=%v", q)
				assert.LessOrEqual(t, float64(got), float64(want)*1.001, "q=%v", q)
			}
		}
	}
}

// TestHistogramMergeKeepsExactFigures: merging exact histograms stays exact;
// merging one decoded from text (which carries only buckets) falls back to
// the buckets' estimates.
func TestHistogramMergeKeepsExactFigures(t *testing.T) {
	a, b := metrics.NewHistogram(), metrics.NewHistogram()
	a.Record(100 * time.Millisecond)
	b.Record(300 * time.Millisecond)
	require.NoError(t, a.Merge(b))
	assert.Equal(t, 100*time.Millisecond, a.Min())
	assert.Equal(t, 300*time.Millisecond, a.Max())
	assert.Equal(t, 200*time.Millisecond, a.Mean())

	text, err := b.EncodeV2()
	require.NoError(t, err)
	var decoded metrics.Histogram
	require.NoError(t, decoded.DecodeV2(text))
	require.NoError(t, a.Merge(&decoded))
	assert.EqualValues(t, 3, a.Count())
	assert.InEpsilon(t, float64(100*time.Millisecond), float64(a.Min()), 1e-3)
	assert.InEpsilon(t, float64(300*time.Millisecond), float64(a.Max()), 1e-3)
}

// TestNilHistogramDoesNotPanic: every method of a nil *Histogram answers as
// an empty one, and Merge into it says why it cannot.
func TestNilHistogramDoesNotPanic(t *testing.T) {
	var h *metrics.Histogram
	assert.Zero(t, h.Count())
	assert.Zero(t, h.Quantile(0.5))
	assert.Zero(t, h.Mean())
	assert.Zero(t, h.Min())
	assert.Zero(t, h.Max())
	assert.Zero(t, h.Clamped())
	assert.Equal(t, metrics.Distribution{}, h.Summary())
	assert.Zero(t, h.Clone().Count())
	h.Reset()
	text, err := h.EncodeV2()
	require.NoError(t, err)
	var back metrics.Histogram
	require.NoError(t, back.DecodeV2(text))
	assert.Zero(t, back.Count())

	some := metrics.NewHistogram()
	some.Record(time.Second)
	assert.ErrorIs(t, h.Merge(some), metrics.ErrNilHistogram)
	require.NoError(t, some.Merge(nil))
	assert.EqualValues(t, 1, some.Count())
}

// TestZeroHistogramsMerge: a zero Histograms is a total that runs merge
// into, as a user adding up two runs would.
func TestZeroHistogramsMerge(t *testing.T) {
	run := func() metrics.Histograms {
		var rec metrics.Recorder
		rec.SetWindow(metrics.Window{Start: at(0), End: at(10_000)})
		req{sent: 100, chunks: every(200, 10, 5), end: 300, done: true}.record(&rec)
		return rec.Recording(metrics.ScopeWindow).Histograms
	}
	var total metrics.Histograms
	require.NoError(t, total.Merge(run()))
	require.NoError(t, total.Merge(run()))
	assert.EqualValues(t, 2, total.TTFT.Count())
	assert.EqualValues(t, 8, total.ITL.Count())
	assert.EqualValues(t, 2, total.Latency.Count())
	assert.Equal(t, 100*time.Millisecond, total.TTFT.Min())

	js, err := json.Marshal(metrics.Histograms{})
	require.NoError(t, err)
	var back metrics.Histograms
	require.NoError(t, json.Unmarshal(js, &back))
	require.NoError(t, back.Merge(total))
	assert.EqualValues(t, 2, back.TTFT.Count())
}

// TestRecorderWithoutWindow: a Recorder that was never given a window
// measures everything it recorded, over the span of its requests, instead
// of reporting no tokens.
func TestRecorderWithoutWindow(t *testing.T) {
	var rec metrics.Recorder
	// Two requests of 11 tokens, 100 ms apart, over 0 … 2.1 s.
	req{sent: 0, chunks: every(100, 100, 11), end: 1100, done: true}.record(&rec)
	req{sent: 1000, chunks: every(1100, 100, 11), end: 2100, done: true}.record(&rec)
	s := rec.Recording(metrics.ScopeWindow).Summary
	assert.Equal(t, metrics.Window{Start: at(0), End: at(2100)}, s.Window, "the span of the requests")
	assert.Equal(t, 2, s.Requests)
	assert.Equal(t, 2, s.Completed)
	assert.Zero(t, s.WarmupRequests)
	assert.Equal(t, 22, s.OutputTokens)
	assert.Equal(t, 2100*time.Millisecond, s.MeasuredFor)
	assert.InDelta(t, 22/2.1, s.OutputTokensPerSec, 1e-9)
	assert.InDelta(t, 2.0/2.1, s.AvgActive, 1e-9, "each request active for 1 s of 2.1")
	assert.EqualValues(t, 2, s.TTFT.Count)
	assert.EqualValues(t, 20, s.ITL.Count)
	assert.Equal(t, s, rec.Recording(metrics.ScopeAll).Summary)
	assert.Zero(t, rec.Recording(metrics.ScopeWarmup).Summary.Requests, "no window, no warm-up")
}

// TestWarmupIsSetApart: slow first requests that end before the window
// opens move none of the window's figures; they are summarised apart, and
// the whole recording holds both.
func TestWarmupIsSetApart(t *testing.T) {
	coldStarts := func(rec *metrics.Recorder) {
		// Four cold starts: TTFT 400 ms, ended before the window opened.
		for range 4 {
			req{sent: 0, chunks: every(400, 10, 10), end: 490, done: true}.record(rec)
		}
		req{sent: 0, end: 5, kind: metrics.KindRateLimited}.record(rec)
	}
	steadyState := func(rec *metrics.Recorder) {
		// TTFT 50 ms, inside the window.
		for i := range 20 {
			sent := 1000 + 100*float64(i)
			req{sent: sent, chunks: every(sent+50, 10, 10), end: sent + 140, done: true}.record(rec)
		}
	}
	window := metrics.Window{Start: at(1000), End: at(4000)}
	var steady, warmed metrics.Recorder
	steady.SetWindow(window)
	steadyState(&steady)
	coldStarts(&warmed) // recorded before the window opens
	warmed.SetWindow(window)
	steadyState(&warmed)

	s, w := warmed.Recording(metrics.ScopeWindow).Summary, steady.Recording(metrics.ScopeWindow).Summary
	assert.Equal(t, 5, s.WarmupRequests)
	assert.Equal(t, 25, s.Requests)
	w.WarmupRequests, w.Requests = s.WarmupRequests, s.Requests
	assert.Equal(t, w, s, "the window's summary is the steady state's")
	assert.Equal(t, 50*time.Millisecond, s.TTFT.Max)
	assert.Zero(t, s.Failed, "the warm-up's failure is the warm-up's")

	wu := warmed.Recording(metrics.ScopeWarmup).Summary
	assert.Equal(t, 5, wu.Requests)
	assert.Equal(t, 4, wu.CompletedOutside)
	assert.Zero(t, wu.Completed)
	assert.Equal(t, 1, wu.Failed)
	assert.Equal(t, map[metrics.ErrorKind]int{metrics.KindRateLimited: 1}, wu.Errors)
	assert.Equal(t, 400*time.Millisecond, wu.TTFT.Min)
	assert.EqualValues(t, 4*9, wu.ITL.Count)
	assert.Zero(t, wu.OutputTokens, "the warm-up has no throughput")

	all := warmed.Recording(metrics.ScopeAll).Summary
	assert.Equal(t, 25, all.Requests)
	assert.Zero(t, all.WarmupRequests)
	assert.Equal(t, 20, all.Completed)
	assert.Equal(t, 4, all.CompletedOutside)
	assert.Equal(t, 1, all.Failed)
	assert.EqualValues(t, 24, all.TTFT.Count)
	assert.Equal(t, 400*time.Millisecond, all.TTFT.Max)
	assert.Equal(t, s.OutputTokens, all.OutputTokens, "the window's throughput")
	assert.EqualValues(t, 24, warmed.Recording(metrics.ScopeAll).Histograms.TTFT.Count())
	assert.EqualValues(t, 20, warmed.Recording(metrics.ScopeWindow).Histograms.TTFT.Count())
}

// TestEveryRequestInOneOutcome: whatever happened to a request, it is
// counted once, in every scope.
func TestEveryRequestInOneOutcome(t *testing.T) {
	var rec metrics.Recorder
	reqs := []req{
		{sent: 0, chunks: every(100, 10, 3), end: 200, done: true},                   // completed in the warm-up
		{sent: 0, end: 10, kind: metrics.KindConnect},                                // failed in the warm-up
		{sent: 500, chunks: every(600, 10, 50), end: 1500, done: true},               // began in the warm-up, completed in the window
		{sent: 1000, chunks: every(1100, 10, 5), end: 1200, done: true},              // completed in the window
		{sent: 1000, chunks: every(1100, 10, 5), end: 1200, kind: metrics.KindStall}, // failed in the window
		{sent: 1000, chunks: every(1100, 100, 50), end: 3000, kind: metrics.KindCanceled},
		{sent: 2000, chunks: every(2100, 100, 20), end: 4200, done: true}, // drained after the window
		{sent: 2000, chunks: every(2100, 10, 3), end: 2200},               // its reader stopped: no error, no finish
	}
	for i, q := range reqs {
		if i == 2 {
			rec.SetWindow(metrics.Window{Start: at(1000), End: at(3000)})
		}
		q.record(&rec)
	}
	for _, scope := range []metrics.Scope{metrics.ScopeWindow, metrics.ScopeWarmup, metrics.ScopeAll} {
		s := rec.Recording(scope).Summary
		assert.Equal(t, s.Requests, s.WarmupRequests+s.Completed+s.CompletedOutside+s.Failed+s.Canceled, "%s: %+v", scope, s)
	}
	s := rec.Recording(metrics.ScopeWindow).Summary
	assert.Equal(t, 8, s.Requests)
	assert.Equal(t, 2, s.WarmupRequests)
	assert.Equal(t, 2, s.Completed)
	assert.Equal(t, 1, s.CompletedOutside, "the drained one")
	assert.Equal(t, 1, s.Failed)
	assert.Equal(t, 2, s.Canceled)
	assert.Equal(t, 2, rec.Recording(metrics.ScopeWarmup).Summary.Requests)
	assert.Equal(t, 8, rec.Recording(metrics.ScopeAll).Summary.Requests)
}
