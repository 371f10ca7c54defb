package metrics_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/metrics"
)

// randomRequests returns n requests of a closed loop around a window from
// 1 s to 11 s: some end in the warm-up, some fail, some are cut, some
// finish after the window, with tokens every few to a few hundred ms.
func randomRequests(r *rand.Rand, n int) []req {
	reqs := make([]req, n)
	for i := range reqs {
		sent := r.Float64() * 9000
		first := sent + 20 + r.Float64()*500
		step := 1 + r.Float64()*200
		tokens := 1 + r.IntN(80)
		q := req{sent: sent, chunks: every(first, step, tokens)}
		q.end = first + step*float64(tokens-1) + r.Float64()*5
		switch r.IntN(10) {
		case 0:
			q.kind = metrics.KindStall
		case 1:
			q.kind = metrics.KindCanceled
		case 2:
			q.chunks[len(q.chunks)-1].tokens = 3 // a bunched chunk
			q.done = true
		default:
			q.done = true
		}
		reqs[i] = q
	}
	return reqs
}

// roundTrip sends a recording through its JSON form, as a shard's report
// or a results file does.
func roundTrip(t *testing.T, rec metrics.Recording) metrics.Recording {
	t.Helper()
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	var back metrics.Recording
	require.NoError(t, json.Unmarshal(b, &back))
	return back
}

// TestMergeRecordingsIsExact: requests spread over several recorders of
// one window merge into exactly what one recorder of them all reports:
// every count, every histogram bucket for bucket with its exact figures,
// and so every quantile, after each recording went through JSON.
func TestMergeRecordingsIsExact(t *testing.T) {
	longtest.Skip(t)
	win := metrics.Window{Start: at(1000), End: at(11000)}
	for _, shards := range []int{1, 2, 3, 7} {
		r := rand.New(rand.NewPCG(uint64(shards), 12))
		reqs := randomRequests(r, 400)
		var all metrics.Recorder
		all.SLO = metrics.SLO{TTFT: 300 * time.Millisecond}
		all.SetWindow(win)
		parts := make([]*metrics.Recorder, shards)
		for i := range parts {
			parts[i] = &metrics.Recorder{SLO: all.SLO}
			parts[i].SetWindow(win)
		}
		for i, q := range reqs {
			q.record(&all)
			q.record(parts[r.IntN(shards)])
			_ = i
		}
		for _, scope := range []metrics.Scope{metrics.ScopeWindow, metrics.ScopeAll} {
			recs := make([]metrics.Recording, shards)
			for i, p := range parts {
				recs[i] = roundTrip(t, p.Recording(scope))
			}
			got, err := metrics.MergeRecordings(recs...)
			require.NoError(t, err)
			want := all.Recording(scope)

			assert.InEpsilon(t, want.Summary.AvgActive, got.Summary.AvgActive, 1e-12, "%d shards, %v", shards, scope)
			got.Summary.AvgActive = want.Summary.AvgActive
			assert.Equal(t, want.Summary, got.Summary, "%d shards, %v", shards, scope)
			assertSameHistograms(t, want.Histograms, got.Histograms)

			// Merging merges is merging everything at once.
			if shards > 2 {
				ab, err := metrics.MergeRecordings(recs[:2]...)
				require.NoError(t, err)
				again, err := metrics.MergeRecordings(append([]metrics.Recording{roundTrip(t, ab)}, recs[2:]...)...)
				require.NoError(t, err)
				again.Summary.AvgActive = want.Summary.AvgActive
				assert.Equal(t, want.Summary, again.Summary)
			}
		}
	}
}

// assertSameHistograms checks that two sets of histograms hold the same
// values: the same buckets (the same V2 encoding), count, extremes, mean
// and quantiles.
func assertSameHistograms(t *testing.T, want, got metrics.Histograms) {
	t.Helper()
	pairs := map[string][2]*metrics.Histogram{
		"ttft": {want.TTFT, got.TTFT}, "tbt": {want.TBT, got.TBT}, "itl": {want.ITL, got.ITL},
		"tpot": {want.TPOT, got.TPOT}, "latency": {want.Latency, got.Latency}, "client_wait": {want.ClientWait, got.ClientWait},
	}
	for name, p := range pairs {
		a, b := p[0], p[1]
		ta, err := a.EncodeV2()
		require.NoError(t, err)
		tb, err := b.EncodeV2()
		require.NoError(t, err)
		assert.Equal(t, string(ta), string(tb), "%s: buckets", name)
		assert.Equal(t, a.Count(), b.Count(), name)
		assert.Equal(t, a.Min(), b.Min(), name)
		assert.Equal(t, a.Max(), b.Max(), name)
		assert.Equal(t, a.Mean(), b.Mean(), name)
		for q := 0.0; q <= 1; q += 0.01 {
			assert.Equal(t, a.Quantile(q), b.Quantile(q), "%s q=%.2f", name, q)
		}
	}
}

// TestMergeRecordingsShiftedWindows: recorders whose windows, on the
// common clock, are a little apart merge over the intersection, and
// measure up to the last token any of them counted.
func TestMergeRecordingsShiftedWindows(t *testing.T) {
	a, b := &metrics.Recorder{}, &metrics.Recorder{}
	a.SetWindow(metrics.Window{Start: at(1000), End: at(11000)})
	b.SetWindow(metrics.Window{Start: at(1002), End: at(11002)})
	req{sent: 900, chunks: every(1100, 100, 50), end: 6000, done: true}.record(a) // last token at 6 s
	req{sent: 900, chunks: every(1100, 100, 80), end: 9000, done: true}.record(b) // last token at 9 s
	got, err := metrics.MergeRecordings(a.Recording(metrics.ScopeWindow), b.Recording(metrics.ScopeWindow))
	require.NoError(t, err)
	assert.Equal(t, metrics.Window{Start: at(1002), End: at(11000)}, got.Summary.Window)
	assert.Equal(t, 130, got.Summary.OutputTokens)
	assert.Equal(t, 2, got.Summary.Completed)
	assert.Equal(t, at(9000).Sub(at(1002)), got.Summary.MeasuredFor)
	assert.InEpsilon(t, 130/got.Summary.MeasuredFor.Seconds(), got.Summary.OutputTokensPerSec, 1e-12)
	assert.InEpsilon(t, a.Recording(metrics.ScopeWindow).Summary.AvgActive+b.Recording(metrics.ScopeWindow).Summary.AvgActive, got.Summary.AvgActive, 1e-3)
}

// TestMergeRecordingsRefuses: windows that do not meet, and a summary
// whose histograms do not hold its values, are refused with the
// recording's index.
func TestMergeRecordingsRefuses(t *testing.T) {
	a, b := &metrics.Recorder{}, &metrics.Recorder{}
	a.SetWindow(metrics.Window{Start: at(0), End: at(1000)})
	b.SetWindow(metrics.Window{Start: at(5000), End: at(6000)})
	req{sent: 10, chunks: every(100, 10, 5), end: 200, done: true}.record(a)
	_, err := metrics.MergeRecordings(a.Recording(metrics.ScopeWindow), b.Recording(metrics.ScopeWindow))
	var me *metrics.MergeError
	require.ErrorAs(t, err, &me)
	assert.Contains(t, err.Error(), "does not overlap")
	assert.Equal(t, 1, me.Index, "the late one is named, not the first")

	broken := a.Recording(metrics.ScopeWindow)
	broken.Histograms.TTFT = nil
	_, err = metrics.MergeRecordings(a.Recording(metrics.ScopeWindow), broken)
	require.ErrorAs(t, err, &me)
	assert.Equal(t, 1, me.Index)
	assert.Contains(t, err.Error(), "ttft histogram holds 0 values and its summary counts 1")

	none, err := metrics.MergeRecordings()
	require.NoError(t, err)
	assert.Zero(t, none.Summary.Requests)
}

// TestHistogramJSONRefusesContradictions: exact figures that the buckets
// cannot hold are bad input, refused with a reason.
func TestHistogramJSONRefusesContradictions(t *testing.T) {
	var h metrics.Histogram
	h.RecordN(10*time.Millisecond, 3)
	b, err := json.Marshal(&h)
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, json.Unmarshal(b, &obj))
	v2 := obj["v2"].(string)
	for name, js := range map[string]string{
		"min outside the buckets":  `{"v2":"` + v2 + `","min_ns":1000,"max_ns":10000000,"sum_ns":"30000000"}`,
		"sum beyond 3 × max":       `{"v2":"` + v2 + `","min_ns":10000000,"max_ns":10000000,"sum_ns":"30000001"}`,
		"sum not a number":         `{"v2":"` + v2 + `","min_ns":10000000,"max_ns":10000000,"sum_ns":"lots"}`,
		"min without the rest":     `{"v2":"` + v2 + `","min_ns":10000000}`,
		"more clamped than values": `{"v2":"` + v2 + `","clamped":4}`,
		"not a histogram":          `{"v2":"HISTFAAAnotbase64!"}`,
		"a number":                 `12`,
	} {
		var back metrics.Histogram
		assert.Error(t, json.Unmarshal([]byte(js), &back), name)
	}
	var back metrics.Histogram
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, h.Summary(), back.Summary())
}
