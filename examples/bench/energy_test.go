package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/sweep"
)

// -gpu-metrics sim reads the simulator's power model: every run gets its
// energy, and every format shows tokens per joule.
func TestGPUEnergy(t *testing.T) {
	code, out, errOut := bench(t, append(quick, "-concurrency", "4", "-duration", "1500ms", "-warmup", "300ms",
		"-gpu-metrics", "sim", "-gpu-hourly-cost", "2", "-format", "json", "-quiet")...)
	require.Equal(t, 0, code, errOut)
	res, err := sweep.ReadResults(strings.NewReader(out))
	require.NoError(t, err)
	require.Len(t, res.Runs, 1)
	e := res.Runs[0].Energy
	require.NotNil(t, e, out)
	// The fast profile's GPU with 4 requests running, at 20× speed: at
	// most 60 + 240 + 4 × 0.05 W, at least its idle 60 W.
	p := loadgentest.FastProfile()
	assert.LessOrEqual(t, e.MeanWatts, 20*(p.IdleWatts+p.BusyWatts+4*p.RunningWatts)*1.01)
	assert.GreaterOrEqual(t, e.MeanWatts, 20*p.IdleWatts)
	assert.InDelta(t, e.Joules, e.MeanWatts*e.Seconds, 1e-6)
	assert.Equal(t, res.Runs[0].Summary.OutputTokens, e.OutputTokens)
	assert.InDelta(t, float64(e.OutputTokens)/e.Joules, e.TokensPerJoule, 1e-9)
	assert.InDelta(t, 2*e.Seconds/3600/float64(e.OutputTokens)*1e6, e.DollarsPerMillionTokens, 1e-9)

	var table, page bytes.Buffer
	require.NoError(t, res.Write(&table, "table"))
	assert.Contains(t, table.String(), "Output tokens per joule:")
	assert.Contains(t, table.String(), "Dollars per million output tokens:")
	require.NoError(t, res.Write(&page, "html"))
	assert.Contains(t, page.String(), "<th>tokens per joule</th>")
	assert.Contains(t, page.String(), "<th>$ per million tokens</th>")
}

func TestGPUFlagsRefused(t *testing.T) {
	for args, want := range map[string]string{
		"-gpu-hourly-cost 2":                          "give -gpu-metrics too",
		"-gpu-metrics sim -gpu-hourly-cost -1":        "0 or more",
		"-gpu-metrics gpu-node:9400":                  "is not a URL",
		"-gpu-metrics sim -url http://127.0.0.1:9/v1": "needs no -url",
		"-gpu-metrics http://127.0.0.1:9/metrics":     "-gpu-metrics: dcgm: GET http://127.0.0.1:9/metrics",
	} {
		code, _, errOut := bench(t, append(quick, strings.Fields(args)...)...)
		assert.Equal(t, 2, code, args)
		assert.Contains(t, errOut, want, args)
	}
}

// TestGPUMetricsPasswordNeverShown: -gpu-metrics with a password in an
// exporter's URL sends it, and shows it nowhere: not when the exporter
// refuses at the start, nor in the report's notes, the progress or the
// results when it fails in the middle of the run.
func TestGPUMetricsPasswordNeverShown(t *testing.T) {
	const password = "s3cret-bench-gpu-pw"
	var reads atomic.Int64
	var got atomic.Value
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, p, _ := r.BasicAuth()
		got.Store(p)
		if r.URL.Path == "/refused" || reads.Add(1) > 1 {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte("# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-1\"} 100\n"))
	}))
	defer exporter.Close()
	withPassword := strings.Replace(exporter.URL, "://", "://alice:"+password+"@", 1)

	code, out, errOut := bench(t, append(quick, "-gpu-metrics", withPassword+"/refused")...)
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "-gpu-metrics: dcgm: GET http://alice:xxxxx@")
	assert.NotContains(t, out+errOut, password)

	for _, format := range []string{"json", "table"} {
		reads.Store(0)
		code, out, errOut = bench(t, append(quick, "-concurrency", "2", "-duration", "500ms", "-warmup", "0",
			"-gpu-metrics", withPassword+"/metrics", "-format", format)...)
		assert.Equal(t, 0, code, errOut)
		assert.Equal(t, password, got.Load(), "the password is sent")
		assert.Contains(t, out+errOut, "alice:xxxxx@", "the failure is told, %s", format)
		assert.NotContains(t, out+errOut, password, format)
	}
}

// exporter serves a DCGM exporter's metrics: the GPU GPU-a drawing 200 W,
// its energy counter growing with it in real time, and the other GPUs'
// power as given (by UUID), such as "+Inf" or "9000".
func exporter(t *testing.T, others map[string]string) *httptest.Server {
	start := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		b.WriteString("# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n")
		b.WriteString("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"n\"} 200\n")
		i := 1
		for _, uuid := range slices.Sorted(maps.Keys(others)) {
			fmt.Fprintf(&b, "DCGM_FI_DEV_POWER_USAGE{gpu=\"%d\",UUID=%q,Hostname=\"n\"} %s\n", i, uuid, others[uuid])
			i++
		}
		b.WriteString("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n")
		fmt.Fprintf(&b, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"n\"} %.0f\n", 1e9+200*time.Since(start).Seconds()*1000)
		io.WriteString(w, b.String())
	}))
	t.Cleanup(srv.Close)
	return srv
}

// energyRun runs bench against the simulator with -gpu-metrics reading
// the exporters of urls, and returns its results, which must be written
// whole, as JSON, with every run's energy.
func energyRun(t *testing.T, urls string, extra ...string) *sweep.Results {
	t.Helper()
	args := append(append([]string{}, quick...), "-concurrency", "2", "-duration", "1500ms", "-warmup", "200ms", "-gpu-metrics", urls, "-format", "json", "-quiet")
	code, out, errOut := bench(t, append(args, extra...)...)
	require.Equal(t, 0, code, errOut)
	res, err := sweep.ReadResults(strings.NewReader(out))
	require.NoError(t, err, "the report is written whole: %q", out)
	require.Len(t, res.Runs, 1)
	require.NotNil(t, res.Runs[0].Energy, "%s", out)
	return res
}

// A GPU's power of +Inf or NaN, and a cost that overflows, are dropped
// and reported: the report is written, with the other GPU's figures.
func TestGPUNonFiniteDropped(t *testing.T) {
	srv := exporter(t, map[string]string{"GPU-inf": "+Inf", "GPU-nan": "NaN"})
	res := energyRun(t, srv.URL+"/metrics", "-gpu-hourly-cost", "1.7e308")
	e := res.Runs[0].Energy
	assert.Equal(t, 1, e.GPUs, "GPU-a alone")
	assert.InEpsilon(t, 200, e.MeanWatts, 0.25, "within a quarter: the exporter's counter follows the clock of a busy machine")
	assert.Positive(t, e.TokensPerJoule)
	assert.GreaterOrEqual(t, e.Dropped, 4, "two readings at least each of the two GPUs")
	assert.Zero(t, e.DollarsPerMillionTokens, "too large to be a number: left out")
	notes := strings.Join(res.Notes, "\n")
	assert.Contains(t, notes, "not finite")
	assert.Contains(t, notes, "dollars per million tokens came out +Inf")
}

// A GPU's power below 0 or above 5 kW is dropped and reported.
func TestGPUImplausibleDropped(t *testing.T) {
	srv := exporter(t, map[string]string{"GPU-hot": "9000", "GPU-cold": "-5"})
	res := energyRun(t, srv.URL+"/metrics")
	e := res.Runs[0].Energy
	assert.Equal(t, 1, e.GPUs, "GPU-a alone")
	assert.InEpsilon(t, 200, e.MeanWatts, 0.25, "within a quarter: the exporter's counter follows the clock of a busy machine")
	assert.GreaterOrEqual(t, e.Dropped, 4)
	notes := strings.Join(res.Notes, "\n")
	assert.Contains(t, notes, "0 not finite, ")
	assert.Contains(t, notes, "GPU-cold is -5: below 0")
}

// An exporter given twice, or reached by two URLs, would count its GPUs
// twice: refused.
func TestGPUExporterTwiceRefused(t *testing.T) {
	srv := exporter(t, nil)
	u := srv.URL + "/metrics"
	other := strings.Replace(u, "127.0.0.1", "localhost", 1)
	for args, want := range map[string]string{
		"-gpu-metrics " + u + "," + u:                                                 "is given twice",
		"-gpu-metrics " + u + " -gpu-metrics " + u:                                    "is given twice",
		"-gpu-metrics " + u + " -gpu-metrics " + strings.ToUpper(u[:4]) + u[4:] + "/": "is given twice",
		"-gpu-metrics " + u + "," + other:                                             "report the same GPU (GPU-a)",
	} {
		code, out, errOut := bench(t, append(append([]string{}, quick...), strings.Fields(args)...)...)
		assert.Equal(t, 2, code, args)
		assert.Empty(t, out, args)
		assert.Contains(t, errOut, want, args)
	}
}
