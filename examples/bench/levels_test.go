package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/sweep"
)

// -concurrency with a list runs a closed loop at each level, in order,
// into one document.
func TestConcurrencyLevels(t *testing.T) {
	code, out, errOut := bench(t, append(quick, "-concurrency", "1,4,16", "-requests", "16", "-warmup", "0", "-format", "json")...)
	require.Equal(t, 0, code, errOut)
	res, err := sweep.ReadResults(strings.NewReader(out))
	require.NoError(t, err)
	assert.Equal(t, "concurrency", res.Profile)
	assert.Equal(t, sweep.AxisConcurrency, res.Axis)
	require.Len(t, res.Runs, 3)
	for i, n := range []int{1, 4, 16} {
		assert.Equal(t, loadgen.Closed{Streams: n}, res.Runs[i].Load)
		assert.Equal(t, 16, res.Runs[i].Summary.Completed)
	}
	assert.Equal(t, 3, strings.Count(errOut, " completed, "), "a progress line a run")
}

// -rate with a list runs an open loop at each rate; the profile is the
// one given.
func TestRateLevels(t *testing.T) {
	code, out, errOut := bench(t, append(quick, "-profile", "rate", "-rate", "20,40", "-requests", "8", "-warmup", "0", "-format", "json", "-quiet")...)
	require.Equal(t, 0, code, errOut)
	res, err := sweep.ReadResults(strings.NewReader(out))
	require.NoError(t, err)
	assert.Equal(t, "rate", res.Profile, "as -profile says, not the runner's \"constant\"")
	require.Len(t, res.Runs, 2)
	assert.Equal(t, loadgen.Open{Arrival: loadgen.Constant, Rate: 20}, res.Runs[0].Load)
	assert.Equal(t, loadgen.Open{Arrival: loadgen.Constant, Rate: 40}, res.Runs[1].Load)
}

// -profile slo -slo-axis concurrency searches streams: after the runs of
// -concurrency, it finds the most streams meeting the objective, taking
// the run at the top of its range as its own.
func TestConcurrencySLOSearch(t *testing.T) {
	code, out, errOut := bench(t, append(quick, "-profile", "slo", "-slo-axis", "concurrency", "-concurrency", "2,6", "-slo-high", "6", "-slo-step", "1",
		"-slo-latency", "1h", "-requests", "8", "-warmup", "0", "-format", "json", "-quiet")...)
	require.Equal(t, 0, code, errOut)
	res, err := sweep.ReadResults(strings.NewReader(out))
	require.NoError(t, err)
	assert.Equal(t, "slo", res.Profile)
	f := res.Search
	require.NotNil(t, f)
	assert.Equal(t, sweep.AxisConcurrency, f.Axis)
	assert.Equal(t, 6, f.Concurrency, f.Reason)
	require.Len(t, res.Runs, 2, "the run of 6 streams is the search's too")
	assert.Equal(t, loadgen.Closed{Streams: 6}, res.Runs[f.Below].Load)

	code, out, errOut = bench(t, append(quick, "-profile", "slo", "-slo-axis", "concurrency", "-slo-high", "3", "-slo-latency", "1h", "-requests", "4", "-warmup", "0", "-quiet")...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Highest concurrency meeting the objective: 3 streams")
}

// Settings the benchmark refuses are said of the flags that set them,
// each one, before anything runs.
func TestBenchmarkErrorsNameFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-concurrency", "1,0"}, "bench: -concurrency 0: give 1 to 16384 streams\n"},
		{[]string{"-concurrency", "0", "-requests", "-1"}, "bench: -requests -1: give 1 or more, or 0 for a window of Duration; -concurrency 0: give 1 to 16384 streams\n"},
		{[]string{"-profile", "slo", "-slo-axis", "concurrency", "-slo-low", "2.5", "-slo-latency", "1s"}, "bench: -slo-low 2.5: give a whole number of streams from 0 to 16384\n"},
		{[]string{"-profile", "rate", "-rate", "2,-1"}, "bench: -rate -1: give requests a second above 0"},
		{[]string{"-slo-quantile", "2"}, "bench: -slo-quantile: has the quantile 2: give a share from 0 to 1\n"},
		{[]string{"-profile", "slo", "-slo-axis", "concurrency", "-rate", "2", "-slo-latency", "1s"}, "bench: -slo-axis: is concurrency, and the runs before it vary the rate"},
		{[]string{"-concurrency", "1,x"}, `invalid value "1,x" for flag -concurrency: "x" is not a whole number`},
		{[]string{"-trace", "testdata/mooncake.jsonl", "-trace-block", "16", "-max-in-flight", "-2"}, "bench: -max-in-flight: caps the requests in flight at -2"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			requests := t.TempDir() + "/r.jsonl"
			code, out, errOut := bench(t, append(tc.args, "-requests-out", requests)...)
			assert.Equal(t, 2, code)
			assert.NoFileExists(t, requests, "refused before the file is made")
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.msg)
			assert.NotContains(t, errOut, "Benchmark.", "named as a flag")
		})
	}
}

// -max-in-flight caps a trace's replay, an open loop of the trace's
// arrivals.
func TestTraceMaxInFlight(t *testing.T) {
	code, out, errOut := bench(t, "-sim-profile", "fast", "-speed", "20", "-trace", "testdata/mooncake.jsonl", "-trace-block", "16", "-max-in-flight", "2", "-format", "json", "-quiet")
	require.Equal(t, 0, code, errOut)
	res, err := sweep.ReadResults(strings.NewReader(out))
	require.NoError(t, err)
	assert.Equal(t, "trace", res.Profile)
	assert.Equal(t, loadgen.Schedule{MaxInFlight: 2}, res.Runs[0].Load)
	assert.Equal(t, 3, res.Runs[0].Summary.Completed)
}
