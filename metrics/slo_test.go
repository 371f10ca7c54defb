package metrics_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/metrics"
)

// TestSLOJSON: objectives are written as duration strings, unset ones left
// out, and read back exactly; a number or a malformed duration is refused.
func TestSLOJSON(t *testing.T) {
	for _, tc := range []struct {
		slo  metrics.SLO
		json string
	}{
		{metrics.SLO{}, `{}`},
		{metrics.SLO{TTFT: 250 * time.Millisecond}, `{"ttft":"250ms"}`},
		{metrics.SLO{TTFT: 2 * time.Second, TPOT: 40 * time.Millisecond, Latency: 90 * time.Second}, `{"ttft":"2s","tpot":"40ms","latency":"1m30s"}`},
	} {
		b, err := json.Marshal(tc.slo)
		require.NoError(t, err)
		assert.JSONEq(t, tc.json, string(b))
		var back metrics.SLO
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, tc.slo, back)
	}
	var s metrics.SLO
	assert.ErrorContains(t, json.Unmarshal([]byte(`{"ttft":"soon"}`), &s), "soon")
	assert.Error(t, json.Unmarshal([]byte(`{"ttft":250000000}`), &s), "a bare number has no unit")
}
