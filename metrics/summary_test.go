package metrics_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/metrics"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// chunk is one chunk of a hand-made request: its arrival (ms after t0) and
// the tokens it carried.
type chunk struct {
	at     float64
	tokens int
}

// req is a hand-made request; times in ms after t0.
type req struct {
	sent   float64
	chunks []chunk
	end    float64
	done   bool
	kind   metrics.ErrorKind
	extra  int
}

func (q req) record(r *metrics.Recorder) {
	tl := &metrics.Timeline{Start: at(q.sent), Sent: at(q.sent), End: at(q.end), Kind: q.kind, Done: q.done, ExtraTokens: q.extra}
	if q.kind != metrics.KindNone {
		tl.Err = errors.New(string(q.kind))
	}
	for _, c := range q.chunks {
		r.Observe(tl, at(c.at), c.tokens)
	}
	tl.Source = metrics.SourceChunks
	if q.extra > 0 {
		tl.Source = metrics.SourceFinalUsage
	}
	r.Record(tl)
}

// every returns n one-token chunks, the first at from, then every step ms.
func every(from, step float64, n int) []chunk {
	cs := make([]chunk, n)
	for i := range cs {
		cs[i] = chunk{at: from + float64(i)*step, tokens: 1}
	}
	return cs
}

func TestSummaryColumns(t *testing.T) {
	win := metrics.Window{Start: at(1000), End: at(11000)} // 10 s
	tests := []struct {
		name string
		reqs []req
		slo  metrics.SLO
		want metrics.Summary // durations compared within 0.1%, rates within 0.1%
	}{
		{
			name: "no requests at all",
			want: metrics.Summary{MeasuredFor: 10 * time.Second},
		},
		{
			name: "request wholly inside the window",
			// sent at 1 s, tokens every 100 ms from 1.2 s to 2.1 s (10 tokens), done at 2.1 s.
			reqs: []req{{sent: 1000, chunks: every(1200, 100, 10), end: 2100, done: true}},
			want: metrics.Summary{
				Requests: 1, Completed: 1, OutputTokens: 10,
				MeasuredFor:        ms(1100), // 1 s → 2.1 s
				OutputTokensPerSec: 10 / 1.1,
				// TBT = (2100 − 1200) ÷ 9 = 100 ms; per request tok/s = 10.
				PerRequestTokensPerSec: 10,
				AvgActive:              0.09, // active 1.2 s → 2.1 s of 10 s
				TTFT:                   metrics.Distribution{Count: 1, P50: ms(200)},
				TBT:                    metrics.Distribution{Count: 1, P50: ms(100)},
				ITL:                    metrics.Distribution{Count: 9, P50: ms(100)},
				TPOT:                   metrics.Distribution{Count: 1, P50: ms(100)},
				Latency:                metrics.Distribution{Count: 1, P50: ms(1100)},
			},
		},
		{
			name: "request started before the window, tokens after it",
			// tokens every 1 s from 0.5 s to 12.5 s: 13 tokens, of which
			// 1.5 … 10.5 s (10 tokens) fall inside [1 s, 11 s).
			reqs: []req{{sent: 0, chunks: every(500, 1000, 13), end: 12500, kind: metrics.KindCanceled}},
			want: metrics.Summary{
				Requests: 1, Canceled: 1, OutputTokens: 10,
				MeasuredFor:            ms(9500), // last counted token at 10.5 s
				OutputTokensPerSec:     10 / 9.5,
				PerRequestTokensPerSec: 1, // TBT over its life: (12500 − 500) ÷ 12 = 1 s
				AvgActive:              1, // active across the whole window
				TTFT:                   metrics.Distribution{Count: 1, P50: ms(500)},
				TBT:                    metrics.Distribution{Count: 1, P50: ms(1000)},
				ITL:                    metrics.Distribution{Count: 12, P50: ms(1000)},
			},
		},
		{
			name: "single-token request",
			reqs: []req{{sent: 2000, chunks: []chunk{{at: 2300, tokens: 1}}, end: 2310, done: true}},
			want: metrics.Summary{
				Requests: 1, Completed: 1, OutputTokens: 1,
				MeasuredFor:        ms(1300),
				OutputTokensPerSec: 1 / 1.3,
				AvgActive:          0.001, // 2.3 s → 2.31 s
				TTFT:               metrics.Distribution{Count: 1, P50: ms(300)},
				Latency:            metrics.Distribution{Count: 1, P50: ms(310)},
			},
		},
		{
			name: "multi-token chunks count k gaps of delta/k",
			// chunks of 1, 4 and 2 tokens at 2.0, 2.4 and 2.6 s: 7 tokens.
			reqs: []req{{sent: 1900, chunks: []chunk{{2000, 1}, {2400, 4}, {2600, 2}}, end: 2600, done: true}},
			want: metrics.Summary{
				Requests: 1, Completed: 1, OutputTokens: 7,
				MeasuredFor:        ms(1600),
				OutputTokensPerSec: 7 / 1.6,
				// TBT = (2600 − 2000) ÷ 6 = 100 ms.
				PerRequestTokensPerSec: 10,
				AvgActive:              0.06,
				TTFT:                   metrics.Distribution{Count: 1, P50: ms(100)},
				TBT:                    metrics.Distribution{Count: 1, P50: ms(100)},
				// gaps: 4 × 100 ms, 2 × 100 ms.
				ITL:     metrics.Distribution{Count: 6, P50: ms(100)},
				TPOT:    metrics.Distribution{Count: 1, P50: ms(100)},
				Latency: metrics.Distribution{Count: 1, P50: ms(700)},
			},
		},
		{
			name: "extra tokens from the final usage are spread over the chunks",
			// 4 chunks counted one each, the final usage said 8: 4 extra.
			// 2 of the 4 chunks are in the window → 2 + 4×2/4 = 4 tokens.
			reqs: []req{{sent: 0, chunks: every(400, 400, 4), end: 1700, done: true, extra: 4}},
			want: metrics.Summary{
				Requests: 1, Completed: 1, OutputTokens: 4,
				MeasuredFor:        ms(600), // last in-window chunk at 1.6 s
				OutputTokensPerSec: 4 / 0.6,
				// TBT = (1600 − 400) ÷ (8 − 1).
				PerRequestTokensPerSec: 7 / 1.2,
				AvgActive:              0.07, // 1.0 s → 1.7 s
				TTFT:                   metrics.Distribution{Count: 1, P50: ms(400)},
				TBT:                    metrics.Distribution{Count: 1, P50: ms(1200.0 / 7)},
				// the gaps ending at 1.2 and 1.6 s; the one at 0.8 s is the warm-up's.
				ITL:     metrics.Distribution{Count: 2, P50: ms(400)},
				TPOT:    metrics.Distribution{Count: 1, P50: ms(1300.0 / 7)},
				Latency: metrics.Distribution{Count: 1, P50: ms(1700)},
			},
		},
		{
			name: "failed requests keep their tokens and are counted by kind",
			reqs: []req{
				// truncated after 3 tokens inside the window
				{sent: 1000, chunks: every(1100, 100, 3), end: 1350, kind: metrics.KindTruncated},
				// rejected before any token
				{sent: 1000, end: 1001, kind: metrics.KindRateLimited},
				{sent: 1000, end: 1001, kind: metrics.KindRateLimited},
			},
			want: metrics.Summary{
				Requests: 3, Failed: 3,
				Errors:       map[metrics.ErrorKind]int{metrics.KindTruncated: 1, metrics.KindRateLimited: 2},
				OutputTokens: 3,
				MeasuredFor:  ms(300), OutputTokensPerSec: 10,
				PerRequestTokensPerSec: 10,
				AvgActive:              0.025, // 1.1 s → 1.35 s
				TTFT:                   metrics.Distribution{Count: 1, P50: ms(100)},
				TBT:                    metrics.Distribution{Count: 1, P50: ms(100)},
				ITL:                    metrics.Distribution{Count: 2, P50: ms(100)},
			},
		},
		{
			name: "a request that ended before the window is warm-up; a window with no tokens measures its whole length",
			reqs: []req{{sent: 0, chunks: every(100, 100, 5), end: 600, done: true}},
			want: metrics.Summary{
				Requests: 1, WarmupRequests: 1, MeasuredFor: 10 * time.Second,
			},
		},
		{
			name: "medians over requests, goodput against an SLO",
			// three requests with TBT 10, 20, 40 ms; TTFT 100, 200, 300 ms.
			reqs: []req{
				{sent: 1000, chunks: every(1100, 10, 11), end: 1200, done: true},
				{sent: 1000, chunks: every(1200, 20, 11), end: 1400, done: true},
				{sent: 1000, chunks: every(1300, 40, 11), end: 1700, done: true},
			},
			slo: metrics.SLO{TTFT: 250 * time.Millisecond},
			want: metrics.Summary{
				Requests: 3, Completed: 3, OutputTokens: 33,
				MeasuredFor: ms(700), OutputTokensPerSec: 33 / 0.7,
				PerRequestTokensPerSec: 50,
				AvgActive:              (0.1 + 0.2 + 0.4) / 10,
				TTFT:                   metrics.Distribution{Count: 3, P50: ms(200)},
				TBT:                    metrics.Distribution{Count: 3, P50: ms(20)},
				ITL:                    metrics.Distribution{Count: 30, P50: ms(20)},
				TPOT:                   metrics.Distribution{Count: 3, P50: ms(20)},
				Latency:                metrics.Distribution{Count: 3, P50: ms(400)},
				Good:                   2, Goodput: 0.2,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &metrics.Recorder{SLO: tc.slo}
			r.SetWindow(win)
			for _, q := range tc.reqs {
				q.record(r)
			}
			got := r.Recording(metrics.ScopeWindow).Summary
			w := tc.want
			assert.Equal(t, win, got.Window)
			assert.Equal(t, w.Requests, got.Requests, "requests")
			assert.Equal(t, w.WarmupRequests, got.WarmupRequests, "warm-up")
			assert.Equal(t, w.CompletedOutside, got.CompletedOutside, "completed outside")
			assert.Equal(t, w.Completed, got.Completed, "completed")
			assert.Equal(t, w.Failed, got.Failed, "failed")
			assert.Equal(t, w.Canceled, got.Canceled, "canceled")
			assert.Equal(t, w.Errors, got.Errors, "errors by kind")
			if w.Sources != nil {
				assert.Equal(t, w.Sources, got.Sources, "requests by token source")
			}
			assert.Equal(t, w.OutputTokens, got.OutputTokens, "output tokens")
			assert.Equal(t, w.MeasuredFor, got.MeasuredFor, "measured for")
			assert.InDelta(t, w.OutputTokensPerSec, got.OutputTokensPerSec, 1e-9+w.OutputTokensPerSec*1e-9, "total tok/s")
			assert.InDelta(t, w.PerRequestTokensPerSec, got.PerRequestTokensPerSec, w.PerRequestTokensPerSec*1e-3, "per request tok/s")
			assert.InDelta(t, w.AvgActive, got.AvgActive, 1e-9, "average active")
			assert.Equal(t, w.Good, got.Good, "good")
			assert.InDelta(t, w.Goodput, got.Goodput, 1e-9, "goodput")
			for _, d := range []struct {
				name      string
				want, got metrics.Distribution
			}{
				{"ttft", w.TTFT, got.TTFT}, {"tbt", w.TBT, got.TBT}, {"itl", w.ITL, got.ITL},
				{"tpot", w.TPOT, got.TPOT}, {"latency", w.Latency, got.Latency},
			} {
				assert.Equal(t, d.want.Count, d.got.Count, "%s count", d.name)
				assert.InDelta(t, float64(d.want.P50), float64(d.got.P50), float64(d.want.P50)*1e-3, "%s p50", d.name)
			}
		})
	}
}

func TestTimelineFigures(t *testing.T) {
	tl := metrics.Timeline{Start: at(0), Sent: at(5), End: at(1000), Done: true}
	for _, c := range []chunk{{100, 1}, {400, 3}, {1000, 1}} {
		tl.Observe(at(c.at), c.tokens)
	}
	tl.Observe(at(2000), 0) // carries nothing: ignored
	require.Equal(t, 5, tl.Tokens)
	assert.Equal(t, 3, tl.Chunks)
	assert.Equal(t, at(100), tl.First)
	assert.Equal(t, at(1000), tl.Last)
	assert.Equal(t, ms(95), tl.TTFT())
	assert.Equal(t, ms(225), tl.TimeBetweenTokens()) // 900 ÷ 4
	assert.Equal(t, ms(995), tl.Latency())
	assert.Equal(t, ms(225), tl.TPOT())
	assert.Equal(t, ms(5), tl.ClientWait())
	assert.True(t, tl.OK())

	var empty metrics.Timeline
	assert.Zero(t, empty.TTFT())
	assert.Zero(t, empty.TimeBetweenTokens())
	assert.Zero(t, empty.TPOT())
	assert.False(t, empty.OK(), "no [DONE] and no finish reason: not complete")
}

func TestOpenWindowWhileObserving(t *testing.T) {
	var r metrics.Recorder
	var tl metrics.Timeline
	r.Observe(&tl, at(0), 1) // before any window: outside
	clock := at(1000)
	w := r.OpenWindow(func() time.Time { return clock }, 10*time.Second)
	assert.Equal(t, metrics.Window{Start: at(1000), End: at(11000)}, w)
	r.Observe(&tl, at(999), 1)   // stamped before the start: outside
	r.Observe(&tl, at(1000), 2)  // at the start: inside
	r.Observe(&tl, at(11000), 1) // at the end: outside
	tl.End, tl.Done = at(11000), true
	snap := r.Snapshot()
	assert.EqualValues(t, 5, snap.Tokens)
	assert.EqualValues(t, 2, snap.WindowTokens)
	r.Record(&tl)
	s := r.Recording(metrics.ScopeWindow).Summary
	assert.Equal(t, 2, s.OutputTokens)
	assert.Equal(t, time.Duration(0)+10*time.Second, s.MeasuredFor, "the only counted token sits at the start")
	assert.EqualValues(t, 1, r.Snapshot().Recorded)
}

func TestRecorderConcurrentUse(t *testing.T) {
	var r metrics.Recorder
	r.SetWindow(metrics.Window{Start: at(0), End: at(1e6)})
	const workers, perWorker, tokens = 16, 50, 40
	done := make(chan struct{})
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range perWorker {
				tl := metrics.Timeline{Sent: at(float64(i))}
				for k := range tokens {
					r.Observe(&tl, at(float64(i)+float64(k+1)), 1)
				}
				tl.End, tl.Done = tl.Last, true
				_ = w
				r.Record(&tl)
			}
		}()
	}
	for range workers {
		<-done
	}
	s := r.Recording(metrics.ScopeWindow).Summary
	assert.Equal(t, workers*perWorker*tokens, s.OutputTokens)
	assert.Equal(t, workers*perWorker, s.Completed)
	assert.EqualValues(t, workers*perWorker*(tokens-1), s.ITL.Count)
	assert.InDelta(t, float64(time.Millisecond), float64(s.ITL.P99), float64(time.Millisecond)*1e-3)
}
