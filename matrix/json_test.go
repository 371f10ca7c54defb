package matrix_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/metrics"
)

// TestErrorKindsInJSON: error counts are keyed by metrics.ErrorKind and
// written as the kinds' names, as they always were; a results file read
// back has the same typed keys, and an unknown kind is refused by name.
func TestErrorKindsInJSON(t *testing.T) {
	res := &matrix.Results{
		Schema:  matrix.Schema,
		Prefill: []matrix.Prefill{{ContextTokens: 1024, Status: matrix.Failed, Requests: 3, Errors: 3, ErrorKinds: map[metrics.ErrorKind]int{metrics.KindStall: 3}}},
		Cells: []matrix.Cell{{ContextTokens: 0, Concurrency: 4, Status: matrix.Failed, Requests: 20, Errors: 12,
			ErrorKinds: map[metrics.ErrorKind]int{metrics.KindTruncated: 3, metrics.KindServerStatus: 9}}},
	}
	var b bytes.Buffer
	require.NoError(t, res.WriteJSON(&b))
	assert.Contains(t, b.String(), `"error_kinds": {
        "stall": 3
      }`)
	assert.Contains(t, b.String(), `"error_kinds": {
        "server_status": 9,
        "truncated": 3
      }`)

	back, err := matrix.ReadResults(&b)
	require.NoError(t, err)
	assert.Equal(t, res.Prefill[0].ErrorKinds, back.Prefill[0].ErrorKinds)
	assert.Equal(t, res.Cells[0].ErrorKinds, back.Cells[0].ErrorKinds)

	var doc map[string]any
	bad := `{"schema":"` + matrix.Schema + `","cells":[{"context_tokens":0,"concurrency":1,"status":"failed","error_kinds":{"http_500":2}}]}`
	require.NoError(t, json.Unmarshal([]byte(bad), &doc), "the document is valid JSON")
	_, err = matrix.ReadResults(strings.NewReader(bad))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"http_500"`)
}

// TestSpecSLOInJSON: a spec's SLO is metrics.SLO, written as duration
// strings as matrix's own durations are, so spec files keep their form.
func TestSpecSLOInJSON(t *testing.T) {
	const doc = `{"duration":"30s","max_tokens":512,"slo":{"ttft":"2s","latency":"1m30s"}}`
	var spec matrix.Spec
	require.NoError(t, json.Unmarshal([]byte(doc), &spec))
	require.NotNil(t, spec.SLO)
	assert.Equal(t, metrics.SLO{TTFT: 2 * time.Second, Latency: 90 * time.Second}, *spec.SLO)
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"slo":{"ttft":"2s","latency":"1m30s"}`)
}
