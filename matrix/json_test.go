package matrix_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/report"
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
	require.NoError(t, report.Write(&b, report.JSON, res))
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

// TestResultsV1File: a results file written before Cell.Measurement was a
// named field (testdata/results-v1.json, written by the command at that
// time) reads with each measured cell's figures in its Measurement and
// nil for the cells never sent, and is written back byte for byte: the
// document's shape did not change, so its schema did not either.
func TestResultsV1File(t *testing.T) {
	raw, err := os.ReadFile("testdata/results-v1.json")
	require.NoError(t, err)
	res, err := matrix.ReadResults(bytes.NewReader(raw))
	require.NoError(t, err)
	assert.Equal(t, matrix.Schema, res.Schema, "read into the current schema")

	var doc struct {
		Server struct {
			Speed float64 `json:"speed"`
		} `json:"server"`
		Cells []map[string]any `json:"cells"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.EqualValues(t, 20, doc.Server.Speed)
	require.Len(t, res.Cells, len(doc.Cells))
	measured := 0
	for i, c := range res.Cells {
		total, has := doc.Cells[i]["total_tok_s"]
		if c.Status == matrix.OverCapacity {
			assert.Nil(t, c.Measurement, "%d × %d was never sent", c.ContextTokens, c.Concurrency)
			assert.False(t, has)
			continue
		}
		require.NotNil(t, c.Measurement, "%d × %d", c.ContextTokens, c.Concurrency)
		require.True(t, has)
		m := c.Measurement
		// Version 1 held the cell's figures in the simulated server's
		// time and its recording in wall time: read, both are in wall time.
		assert.InEpsilon(t, total.(float64)*20, m.OutputTokensPerSec, 1e-9)
		assert.InEpsilon(t, doc.Cells[i]["ttft_ms"].(map[string]any)["p50"].(float64)/20, m.TTFT.P50, 1e-9)
		require.NotNil(t, m.Recording, "the histograms come along")
		s := m.Recording.Summary
		assert.InEpsilon(t, s.OutputTokensPerSec, m.OutputTokensPerSec, 1e-6, "%d × %d: the figures and the recording agree", c.ContextTokens, c.Concurrency)
		assert.InEpsilon(t, float64(s.TTFT.P50)/1e6, m.TTFT.P50, 0.01, "%d × %d: the figures and the recording agree", c.ContextTokens, c.Concurrency)
		measured++
	}
	assert.Equal(t, 4, measured)
	assert.Equal(t, 2, len(res.Cells)-measured)

	// Its reports still speak in the simulated server's time, as before.
	var md bytes.Buffer
	require.NoError(t, report.Write(&md, report.Markdown, res))
	assert.Contains(t, md.String(), "77.6")

	// Written again, it is a version 2 file that reads back the same.
	var back bytes.Buffer
	require.NoError(t, report.Write(&back, report.JSON, res))
	assert.Contains(t, back.String(), `"schema": "`+matrix.Schema+`"`)
	again, err := matrix.ReadResults(&back)
	require.NoError(t, err)
	assert.Equal(t, res, again)
}

// TestCellJSONFlat: a cell's measurement is written beside the cell's own
// fields, and a cell without one writes none of its fields.
func TestCellJSONFlat(t *testing.T) {
	b, err := json.Marshal(matrix.Cell{ContextTokens: 1024, Concurrency: 2, Status: matrix.Valid,
		Measurement: &matrix.Measurement{OutputTokensPerSec: 80, TTFT: matrix.Quantiles{P50: 12}}})
	require.NoError(t, err)
	assert.Contains(t, string(b), `"concurrency":2,`)
	assert.Contains(t, string(b), `"total_tok_s":80,`)
	assert.Contains(t, string(b), `"ttft_ms":{"p50":12,`)
	assert.NotContains(t, string(b), "Measurement")

	b, err = json.Marshal(matrix.Cell{ContextTokens: 1024, Concurrency: 2, Status: matrix.OverCapacity})
	require.NoError(t, err)
	assert.NotContains(t, string(b), "total_tok_s")
	var c matrix.Cell
	require.NoError(t, json.Unmarshal(b, &c))
	assert.Nil(t, c.Measurement)
	assert.Equal(t, matrix.OverCapacity, c.Status)
}

// TestResultsMeasured: a run measured something when a Valid or Requests
// queued cell has output, or, without a grid, a prefill row does; else
// the error counts the cells by status.
func TestResultsMeasured(t *testing.T) {
	measured := &matrix.Measurement{OutputTokensPerSec: 80}
	for _, tc := range []struct {
		name string
		res  matrix.Results
		want string
	}{
		{"a valid cell", matrix.Results{Cells: []matrix.Cell{{Status: matrix.OverCapacity}, {Status: matrix.Valid, Measurement: measured}}}, ""},
		{"a queued cell", matrix.Results{Cells: []matrix.Cell{{Status: matrix.RequestsQueued, Measurement: measured}}}, ""},
		{"a failed cell keeps its numbers but measured nothing", matrix.Results{Cells: []matrix.Cell{
			{Status: matrix.Failed, Measurement: measured}, {Status: matrix.OverCapacity}, {Status: matrix.OverCapacity}, {}}},
			"matrix: no cell could be measured (2 Over capacity, 1 Failed, 1 not run)"},
		{"a valid cell without output", matrix.Results{Cells: []matrix.Cell{{Status: matrix.Valid, Measurement: &matrix.Measurement{}}}},
			"matrix: no cell could be measured (1 ran without output)"},
		{"a prefill row, no grid", matrix.Results{Prefill: []matrix.Prefill{{Status: matrix.Valid, PromptTokensPerSec: 900}}}, ""},
		{"no prefill row measured, no grid", matrix.Results{Prefill: []matrix.Prefill{{Status: matrix.Failed, Error: "x"}}}, "matrix: no prefill row could be measured"},
		{"nothing planned", matrix.Results{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.res.Measured()
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, matrix.ErrNothingMeasured)
			assert.EqualError(t, err, tc.want)
		})
	}
}

// TestUnknownCapacityReasonRefused: a cell's predicted verdict holds one
// of capacity's reasons by name; a results file with another is refused,
// naming it and the cell.
func TestUnknownCapacityReasonRefused(t *testing.T) {
	res := &matrix.Results{Schema: matrix.Schema, Cells: []matrix.Cell{
		{ContextTokens: 1024, Concurrency: 2, Status: matrix.OverCapacity, Predicted: capacity.Verdict{Reason: capacity.OverKVTokens}},
	}}
	var doc bytes.Buffer
	require.NoError(t, report.Write(&doc, report.JSON, res))
	back, err := matrix.ReadResults(bytes.NewReader(doc.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, capacity.OverKVTokens, back.Cells[0].Predicted.Reason)

	bad := bytes.Replace(doc.Bytes(), []byte(`"reason": "kv_tokens"`), []byte(`"reason": "gpu_on_fire"`), 1)
	require.NotEqual(t, doc.Bytes(), bad, "the document names the reason")
	_, err = matrix.ReadResults(bytes.NewReader(bad))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `cell 1024 × 2: unknown capacity reason "gpu_on_fire"`)
}

// TestUnknownStatusRefused: a cell's and a prefill row's status is one of
// the package's by name; a results file with another is refused, naming
// it and the row.
func TestUnknownStatusRefused(t *testing.T) {
	res := &matrix.Results{Schema: matrix.Schema,
		Cells:   []matrix.Cell{{ContextTokens: 1024, Concurrency: 2, Status: matrix.RequestsQueued}},
		Prefill: []matrix.Prefill{{ContextTokens: 4096, Status: matrix.Failed}},
	}
	var doc bytes.Buffer
	require.NoError(t, report.Write(&doc, report.JSON, res))
	back, err := matrix.ReadResults(bytes.NewReader(doc.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, matrix.RequestsQueued, back.Cells[0].Status)
	assert.Equal(t, matrix.Failed, back.Prefill[0].Status)

	for old, want := range map[string]string{
		`"status": "requests_queued"`: `cell 1024 × 2: unknown status "queued"`,
		`"status": "failed"`:          `prefill row 4096: unknown status "queued"`,
	} {
		bad := bytes.Replace(doc.Bytes(), []byte(old), []byte(`"status": "queued"`), 1)
		require.NotEqual(t, doc.Bytes(), bad, "the document holds %s", old)
		_, err = matrix.ReadResults(bytes.NewReader(bad))
		require.Error(t, err)
		assert.Contains(t, err.Error(), want)
	}
}
