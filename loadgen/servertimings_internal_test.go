package loadgen

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/metrics"
)

func TestTimingHeaders(t *testing.T) {
	h := http.Header{}
	_, ok, bad := timingHeaders(h)
	assert.False(t, ok, "none sent")
	assert.Empty(t, bad)
	h.Set("X-Queue-Time", "12")
	h.Set("X-Inference-Time", "830")
	st, ok, bad := timingHeaders(h)
	require.True(t, ok)
	assert.Empty(t, bad)
	assert.Equal(t, metrics.ServerTimings{Source: "tgi", Queue: 12 * time.Millisecond, Generation: 830 * time.Millisecond}, st)
	h.Set("X-Queue-Time", "soon")
	h.Del("X-Inference-Time")
	_, ok, bad = timingHeaders(h)
	assert.False(t, ok, "not a number")
	assert.Equal(t, "X-Queue-Time", bad)
	h.Set("X-Queue-Time", "3")
	h.Set("X-Inference-Time", "NaN")
	_, ok, bad = timingHeaders(h)
	assert.True(t, ok)
	assert.Equal(t, "X-Inference-Time", bad, "NaN is no number of milliseconds")
}
