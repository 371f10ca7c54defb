package metrics

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHistogramQuantilesAreFractions(t *testing.T) {
	var h Histogram
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
	var h Histogram
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
	a, b := NewHistogram(), NewHistogram()
	a.RecordN(10*time.Millisecond, 3)
	b.Record(20 * time.Millisecond)
	require.NoError(t, a.Merge(b))
	assert.EqualValues(t, 4, a.Count())
	assert.InEpsilon(t, float64(20*time.Millisecond), float64(a.Max()), 1e-3)

	text, err := a.MarshalText()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(text), "HISTF"), "V2 compressed, base64: %.10s", text)

	var back Histogram
	require.NoError(t, back.UnmarshalText(text))
	assert.Equal(t, a.Summary(), back.Summary())

	js, err := json.Marshal(struct{ H *Histogram }{a})
	require.NoError(t, err)
	var decoded struct{ H *Histogram }
	require.NoError(t, json.Unmarshal(js, &decoded))
	assert.Equal(t, a.Summary(), decoded.H.Summary())

	assert.Error(t, back.UnmarshalText([]byte("HISTFAAAnotbase64!")))
	assert.Error(t, json.Unmarshal([]byte(`{"H": 12}`), &decoded))
}

func TestKindAndSourceText(t *testing.T) {
	for _, k := range Kinds() {
		b, err := k.MarshalText()
		require.NoError(t, err)
		var back ErrorKind
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, k, back)
		assert.NotEmpty(t, k.String())
	}
	for s := SourceUsageDeltas; s <= SourceFinalUsage; s++ {
		var back TokenSource
		require.NoError(t, back.UnmarshalText([]byte(s.String())))
		assert.Equal(t, s, back)
	}
	var k ErrorKind
	assert.Error(t, k.UnmarshalText([]byte("nope")))
	js, err := json.Marshal(map[ErrorKind]int{KindStall: 2})
	require.NoError(t, err)
	assert.JSONEq(t, `{"stall": 2}`, string(js))
}
