package loadgen

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/metrics"
)

// vLLM's per-request metrics, as its documentation gives them, are read
// from the chunk that carries them; anything else under the name is passed
// over without failing the chunk.
func TestParseServerMetrics(t *testing.T) {
	var c chunk
	require.NoError(t, parseChunk([]byte(`{"id":"x","choices":[],"usage":{"prompt_tokens":42,"completion_tokens":128,"total_tokens":170},`+
		`"metrics":{"time_to_first_token_ms":85.2,"generation_time_ms":1240.5,"queue_time_ms":12.3,"mean_itl_ms":9.1,"tokens_per_second":103.2}}`), &c))
	require.True(t, c.timings.set)
	assert.Equal(t, metrics.ServerTimings{Source: "vllm", Queue: 12300 * time.Microsecond, Prefill: 85200 * time.Microsecond,
		Generation: 1240500 * time.Microsecond, MeanITL: 9100 * time.Microsecond}, c.timings.server())
	assert.EqualValues(t, 128, c.completion, "the usage beside it is read as before")

	for _, data := range []string{
		`{"choices":[],"metrics":"fast"}`,
		`{"choices":[],"metrics":null}`,
		`{"choices":[],"metrics":[1,2]}`,
		`{"choices":[],"metrics":{"queue_time_ms":-4,"time_to_first_token_ms":"85","generation_time_ms":null,"mean_itl_ms":{"p50":1}}}`,
		`{"choices":[],"metrics":{"queue_time_ms":1e300}}`,
	} {
		var c chunk
		require.NoError(t, parseChunk([]byte(data), &c), data)
		assert.False(t, c.timings.set, data)
	}
	// A syntax error inside is still one.
	assert.ErrorIs(t, parseChunk([]byte(`{"metrics":{"queue_time_ms":1.}}`), &c), errJSONSyntax)
}

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
