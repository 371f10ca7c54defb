package dcgm

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/metrics"
)

// ParseURLs refuses an exporter given twice, however its URL is spelled.
func TestParseURLsTwice(t *testing.T) {
	for _, list := range []string{
		"http://n:9400/metrics,http://n:9400/metrics",
		"http://n:9400/metrics,HTTP://N:9400/metrics/",
		"http://n/metrics,http://n:80/metrics",
		"https://n/metrics, https://n:443/metrics",
	} {
		_, err := ParseURLs(list)
		assert.ErrorContains(t, err, "is given twice", list)
	}
	urls, err := ParseURLs("http://a:9400/metrics,http://b:9400/metrics,https://a:9400/metrics")
	require.NoError(t, err)
	assert.Len(t, urls, 3)
}

// Readings that are not finite or implausible are dropped, counted and
// noted in the window's energy; a GPU two exporters report is counted
// once, and the reading says so.
func TestMeterDropsAndDuplicates(t *testing.T) {
	body := "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 100\n" +
		"DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-b\"} +Inf\n" +
		"DCGM_FI_DEV_POWER_USAGE{gpu=\"2\",UUID=\"GPU-c\"} 6000\n" +
		"DCGM_FI_DEV_POWER_USAGE{gpu=\"3\",UUID=\"GPU-d\"} -1\n"
	srv := exporter(t, http.StatusOK, body)
	m := New(srv.Client(), []string{srv.URL}, time.Hour)
	start := time.Now()
	require.NoError(t, m.Read(t.Context()))
	time.Sleep(20 * time.Millisecond)
	e, err := m.Energy(t.Context(), metrics.Window{Start: start, End: time.Now()}, 10, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, e.GPUs)
	assert.InDelta(t, 100, e.MeanWatts, 1e-6)
	assert.GreaterOrEqual(t, e.Dropped, 3)
	require.NotEmpty(t, e.Notes)
	assert.Contains(t, e.Notes[0], "GPU readings dropped")
	assert.True(t, strings.Contains(e.Notes[0], "not finite"))

	same := New(srv.Client(), []string{srv.URL + "/metrics", strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/metrics"}, time.Hour)
	err = same.Read(t.Context())
	assert.ErrorContains(t, err, "report the same GPU (GPU-a)")
	e, err = same.Energy(t.Context(), metrics.Window{Start: start, End: time.Now()}, 10, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, e.GPUs, "counted once")
}

// A figure too large to be a number is left out, with a note.
func TestEnergyFiguresFinite(t *testing.T) {
	gpus := map[string][]point{"a": steady(-1, 11, 1, 0, 100)}
	e, err := energy(gpus, at(0), at(10), 100, 1.7e308)
	require.NoError(t, err)
	assert.Zero(t, e.DollarsPerMillionTokens)
	assert.Zero(t, e.HourlyCost)
	assert.Len(t, e.Notes, 2)
	assert.InDelta(t, 1000, e.Joules, 1e-6)
}
