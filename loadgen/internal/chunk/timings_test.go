package chunk

import (
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
	var c Chunk
	require.NoError(t, Parse([]byte(`{"id":"x","choices":[],"usage":{"prompt_tokens":42,"completion_tokens":128,"total_tokens":170},`+
		`"metrics":{"time_to_first_token_ms":85.2,"generation_time_ms":1240.5,"queue_time_ms":12.3,"mean_itl_ms":9.1,"tokens_per_second":103.2}}`), &c))
	require.True(t, c.Timings.Set)
	assert.Equal(t, metrics.ServerTimings{Source: "vllm", Queue: 12300 * time.Microsecond, Prefill: 85200 * time.Microsecond,
		Generation: 1240500 * time.Microsecond, MeanITL: 9100 * time.Microsecond}, c.Timings.Server())
	assert.EqualValues(t, 128, c.Completion, "the usage beside it is read as before")

	for _, data := range []string{
		`{"choices":[],"metrics":"fast"}`,
		`{"choices":[],"metrics":null}`,
		`{"choices":[],"metrics":[1,2]}`,
		`{"choices":[],"metrics":{"queue_time_ms":-4,"time_to_first_token_ms":"85","generation_time_ms":null,"mean_itl_ms":{"p50":1}}}`,
		`{"choices":[],"metrics":{"queue_time_ms":1e300}}`,
	} {
		var c Chunk
		require.NoError(t, Parse([]byte(data), &c), data)
		assert.False(t, c.Timings.Set, data)
	}
	// A syntax error inside is still one.
	assert.ErrorIs(t, Parse([]byte(`{"metrics":{"queue_time_ms":1.}}`), &c), ErrJSONSyntax)
}
