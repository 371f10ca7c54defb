package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/matrix"
)

// -gpu-metrics sim reads the simulator's power model: every measured
// cell gets its energy, and -render shows tokens per joule in every
// format.
func TestGPUEnergy(t *testing.T) {
	longtest.Skip(t)
	dir := t.TempDir()
	results := filepath.Join(dir, "r.json")
	var out, errOut bytes.Buffer
	code := run(t.Context(), small(results, "-prefill", "", "-gpu-metrics", "sim", "-gpu-hourly-cost", "0.3"), &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	res, err := matrix.LoadFile(results)
	require.NoError(t, err)
	for _, c := range res.Cells {
		require.NotNil(t, c.Measurement)
		e := c.Measurement.Energy
		require.NotNil(t, e, "%d × %d", c.ContextTokens, c.Concurrency)
		// The seed profile's RTX 3060 at 20× speed: 15 + 85 + 3 W a
		// running request, in wall time 20 times that.
		assert.InEpsilon(t, 20*(15+85+3*float64(c.Concurrency)), e.MeanWatts, 0.05, "%d × %d", c.ContextTokens, c.Concurrency)
		assert.Positive(t, e.TokensPerJoule)
		assert.Positive(t, e.DollarsPerMillionTokens)
	}
	assert.Contains(t, out.String(), " tok/J", "the table's grid")
	assert.Contains(t, out.String(), "GPU energy · over each cell's window")
	for format, want := range map[string]string{"markdown": "| Tokens per joule |", "csv": ",tokens_per_joule,", "html": "<th>Tokens per joule</th>", "json": `"tokens_per_joule"`} {
		out.Reset()
		require.Equal(t, 0, run(t.Context(), []string{"-render", results, "-format", format}, &out, &errOut), errOut.String())
		assert.Contains(t, out.String(), want, format)
	}
}

func TestGPUFlagsRefused(t *testing.T) {
	for args, want := range map[string]string{
		"-gpu-hourly-cost 2":                          "give -gpu-metrics too",
		"-gpu-metrics sim -url http://127.0.0.1:9/v1": "needs no -url",
		"-gpu-metrics :9400":                          "is not a URL",
		"-gpu-metrics sim -join http://leader:7070":   "-gpu-metrics is the leader's",
	} {
		var out, errOut bytes.Buffer
		code := run(t.Context(), strings.Fields(args), &out, &errOut)
		assert.Equal(t, 2, code, args)
		assert.Contains(t, errOut.String(), want, args)
	}
}

// TestGPUMetricsPasswordNeverShown: an exporter that refuses, given with
// a password in its URL, is named in the error with the password
// replaced.
func TestGPUMetricsPasswordNeverShown(t *testing.T) {
	const password = "s3cret-matrix-gpu-pw"
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer exporter.Close()
	u := strings.Replace(exporter.URL, "://", "://alice:"+password+"@", 1) + "/metrics"
	var out, errOut bytes.Buffer
	code := run(t.Context(), small(filepath.Join(t.TempDir(), "r.json"), "-gpu-metrics", u), &out, &errOut)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut.String(), "dcgm: GET http://alice:xxxxx@")
	assert.NotContains(t, out.String()+errOut.String(), password)
}
