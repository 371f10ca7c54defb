package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/matrix"
)

// exporter serves a DCGM exporter's metrics: the GPU GPU-a drawing 200 W,
// its energy counter growing with it in real time, and GPU-bad whose
// power reads as bad (such as "+Inf").
func exporter(t *testing.T, bad string) *httptest.Server {
	start := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		b.WriteString("# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n")
		b.WriteString("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"n\"} 200\n")
		fmt.Fprintf(&b, "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-bad\",Hostname=\"n\"} %s\n", bad)
		b.WriteString("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n")
		fmt.Fprintf(&b, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"n\"} %.0f\n", 1e9+200*time.Since(start).Seconds()*1000)
		io.WriteString(w, b.String())
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A GPU whose power reads +Inf, and a cost that overflows, no longer
// stop the matrix at its first cell: every cell is measured and saved,
// with the other GPU's energy, and the readings dropped are noted.
func TestGPUNonFiniteDropped(t *testing.T) {
	srv := exporter(t, "+Inf")
	results := filepath.Join(t.TempDir(), "r.json")
	var out, errOut bytes.Buffer
	code := run(t.Context(), small(results, "-prefill", "", "-gpu-metrics", srv.URL+"/metrics", "-gpu-hourly-cost", "1.7e308", "-format", "json"), &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	res, err := matrix.LoadFile(results)
	require.NoError(t, err)
	require.True(t, res.Complete)
	for _, c := range res.Cells {
		require.NotNil(t, c.Measurement, "%d × %d", c.ContextTokens, c.Concurrency)
		e := c.Measurement.Energy
		require.NotNil(t, e, "%d × %d", c.ContextTokens, c.Concurrency)
		assert.Equal(t, 1, e.GPUs, "GPU-a alone")
		assert.InEpsilon(t, 200, e.MeanWatts, 0.25, "within a quarter: the exporter's counter follows the clock of a busy machine")
		assert.Positive(t, e.Dropped)
		assert.Zero(t, e.DollarsPerMillionTokens, "too large to be a number: left out")
		notes := strings.Join(c.Measurement.Notes, "\n")
		assert.Contains(t, notes, "not finite")
		assert.Contains(t, notes, "dollars per million tokens came out")
	}
}

// An exporter given twice is refused before anything runs.
func TestGPUExporterTwiceRefused(t *testing.T) {
	srv := exporter(t, "100")
	u := srv.URL + "/metrics"
	var out, errOut bytes.Buffer
	code := run(t.Context(), small(filepath.Join(t.TempDir(), "r.json"), "-gpu-metrics", u, "-gpu-metrics", u), &out, &errOut)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut.String(), "is given twice")
}

// The client's flags are checked as bench's are, before anything runs: a
// -model or a -header value with a control character, and -header
// Authorization beside -api-key-env.
func TestClientFlagsRefused(t *testing.T) {
	t.Setenv("MATRIX_TEST_KEY", "sk-matrix-test-0123456789")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-model", "a\x01b"}, "control character"},
		{[]string{"-header", "X-Route: a\x1bb"}, "the value of X-Route holds the control character"},
		{[]string{"-api-key-env", "MATRIX_TEST_KEY", "-header", "Authorization: Bearer x"}, "give one or the other"},
	} {
		results := filepath.Join(t.TempDir(), "r.json")
		var out, errOut bytes.Buffer
		code := run(t.Context(), small(results, tc.args...), &out, &errOut)
		assert.Equal(t, 2, code, "%q", tc.args)
		assert.Contains(t, errOut.String(), tc.want, "%q", tc.args)
		assert.NoFileExists(t, results, "nothing ran")
	}
}
