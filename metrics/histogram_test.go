package metrics_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/metrics"
)

func TestHistogramQuantilesAreFractions(t *testing.T) {
	var h metrics.Histogram
	for i := 1; i <= 100; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	assert.EqualValues(t, 100, h.Count())
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.9, 90 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}} {
		assert.InEpsilon(t, float64(tc.want), float64(h.Quantile(tc.q)), 1e-3, "q=%v", tc.q)
	}
	assert.InEpsilon(t, float64(50500*time.Microsecond), float64(h.Mean()), 1e-3)
	assert.InEpsilon(t, float64(time.Millisecond), float64(h.Min()), 1e-3)
	assert.InEpsilon(t, float64(100*time.Millisecond), float64(h.Max()), 1e-3)
}

func TestHistogramZeroAndClamping(t *testing.T) {
	var h metrics.Histogram
	assert.Zero(t, h.Quantile(0.5))
	assert.Zero(t, h.Mean())
	h.Record(-time.Second)
	h.Record(2 * time.Hour)
	h.Record(500 * time.Nanosecond)
	assert.EqualValues(t, 3, h.Count())
	assert.EqualValues(t, 2, h.Clamped())
	assert.Zero(t, h.Min())
	assert.InEpsilon(t, float64(time.Hour), float64(h.Max()), 1e-3)
}

func TestHistogramMergeAndEncoding(t *testing.T) {
	a, b := metrics.NewHistogram(), metrics.NewHistogram()
	a.RecordN(10*time.Millisecond, 3)
	b.Record(20 * time.Millisecond)
	require.NoError(t, a.Merge(b))
	assert.EqualValues(t, 4, a.Count())
	assert.InEpsilon(t, float64(20*time.Millisecond), float64(a.Max()), 1e-3)

	text, err := a.EncodeV2()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(text), "HISTF"), "V2 compressed, base64: %.10s", text)

	// The format holds the buckets: they come back as they were, and the
	// figures are the buckets' estimates, within their resolution.
	var back metrics.Histogram
	require.NoError(t, back.DecodeV2(text))
	again, err := back.EncodeV2()
	require.NoError(t, err)
	assert.Equal(t, string(text), string(again))
	assertWithinResolution(t, a.Summary(), back.Summary())

	js, err := json.Marshal(struct{ H *metrics.Histogram }{a})
	require.NoError(t, err)
	var decoded struct{ H *metrics.Histogram }
	require.NoError(t, json.Unmarshal(js, &decoded))
	assert.Equal(t, a.Summary(), decoded.H.Summary(), "JSON keeps the exact figures beside the buckets")

	// A bare V2 string, as files held before the exact figures were kept,
	// reads as the buckets alone.
	bare, err := json.Marshal(string(text))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(`{"H": `+string(bare)+`}`), &decoded))
	assert.Equal(t, back.Summary(), decoded.H.Summary())

	assert.Error(t, back.DecodeV2([]byte("HISTFAAAnotbase64!")))
	assert.Error(t, json.Unmarshal([]byte(`{"H": 12}`), &decoded))
}

// assertWithinResolution checks that got is want to the histogram's
// resolution: 0.1%.
func assertWithinResolution(t *testing.T, want, got metrics.Distribution) {
	t.Helper()
	assert.Equal(t, want.Count, got.Count)
	for _, p := range [][2]time.Duration{{want.Min, got.Min}, {want.Mean, got.Mean}, {want.P50, got.P50}, {want.P90, got.P90}, {want.P99, got.P99}, {want.Max, got.Max}} {
		assert.InEpsilon(t, float64(p[0]), float64(p[1]), 1e-3)
	}
}

func TestKindAndSourceText(t *testing.T) {
	seen := map[metrics.ErrorKind]bool{}
	for _, k := range metrics.Kinds() {
		assert.NotEmpty(t, k, "every kind but KindNone has a name")
		assert.False(t, seen[k], "%s named twice", k)
		seen[k] = true
	}
	assert.Len(t, seen, 18)
	js, err := json.Marshal(map[metrics.TokenSource]int{metrics.SourceChunks: 1, metrics.SourceFinalUsage: 2})
	require.NoError(t, err)
	assert.JSONEq(t, `{"chunks": 1, "final_usage": 2}`, string(js), "a source is written by its name")
	js, err = json.Marshal(map[metrics.ErrorKind]int{metrics.KindStall: 2})
	require.NoError(t, err)
	assert.JSONEq(t, `{"stall": 2}`, string(js))
}
