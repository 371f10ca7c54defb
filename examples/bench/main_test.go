package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/sweep"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// bench runs the command and returns its exit status, stdout and stderr.
func bench(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(t.Context(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// quick are flags for a short run against the simulator.
var quick = []string{"-sim-profile", "fast", "-speed", "20", "-input-len", "uniform:32,128", "-output-len", "16"}

func TestDefaultReport(t *testing.T) {
	code, out, errOut := bench(t, append(quick, "-concurrency", "4", "-duration", "1s", "-warmup", "300ms")...)
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{"Benchmark of synthetic prompts, uniform:32,128 tokens in, 16 out against llmload's simulated server",
		"Serving Benchmark Result", "Load:                                    concurrency 4", "Successful requests:",
		"Request throughput (req/s):", "Output token throughput (tok/s):", "Median TTFT (ms):", "P99 TPOT (ms):", "Mean ITL (ms):", "P90 E2E (ms):"} {
		assert.Contains(t, out, want)
	}
	assert.Contains(t, errOut, "Benchmarking synthetic prompts", "progress on stderr")
}

func TestJSONContract(t *testing.T) {
	code, out, errOut := bench(t, append(quick, "-profile", "poisson", "-rate", "40", "-requests", "30", "-warmup", "0", "-slo-ttft", "1s", "-format", "json", "-quiet")...)
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, errOut, "-quiet")
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, sweep.Schema, doc["schema"])
	assert.Equal(t, "poisson", doc["profile"])
	runs := doc["runs"].([]any)
	require.Len(t, runs, 1)
	r := runs[0].(map[string]any)
	seed, ok := doc["seed"].(float64)
	require.True(t, ok, "the seed is recorded: %v", doc["seed"])
	assert.NotZero(t, seed, "a zero -seed is a fresh one, recorded")
	assert.Equal(t, map[string]any{"kind": "poisson", "rate": 40.0, "seed": seed}, r["load"], "the arrivals' seed, with the load")
	assert.Equal(t, 30.0, r["requests"])
	s := r["summary"].(map[string]any)
	assert.Equal(t, 30.0, s["completed"])
	assert.Equal(t, 30.0, s["good"], "every request within a second of TTFT")
	for _, k := range []string{"ttft", "tpot", "itl", "latency"} {
		h := r["histograms"].(map[string]any)[k].(map[string]any)
		assert.IsType(t, "", h["v2"], k)
		assert.Contains(t, s[k], "p99", k)
	}
	assert.Equal(t, 30.0, r["lateness"].(map[string]any)["count"], "every arrival's lateness")
	srv := doc["server"].(map[string]any)
	assert.Equal(t, "simulator", srv["url"])
	assert.Equal(t, true, srv["simulated"])

	res, err := sweep.ReadResults(strings.NewReader(out))
	require.NoError(t, err)
	assert.Equal(t, loadgen.Open{Rate: 40, Seed: res.Seed}, res.Runs[0].Load)

	// The run over time, in buckets of -series (1 s by default): every
	// request begun and completed is in one.
	series := res.Runs[0].Series
	require.NotNil(t, series)
	assert.Equal(t, time.Second, series.Every)
	started, finished := 0, 0
	for i := range series.TokensPerSec {
		started += series.Started[i]
		finished += series.Finished[i]
	}
	assert.Equal(t, 30, started)
	assert.Equal(t, 30, finished)
	for _, k := range []string{"tok_s", "started", "finished", "ttft_p50_ms", "itl_p99_ms", "decoding", "waiting"} {
		assert.Contains(t, r["series"], k)
	}

	code, out, errOut = bench(t, append(quick, "-requests", "30", "-warmup", "0", "-format", "series-csv", "-quiet")...)
	require.Equal(t, 0, code, errOut)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err)
	require.Greater(t, len(rows), 1)
	assert.Equal(t, []string{"run", "t_s", "bucket_s", "in_window", "tok_s"}, rows[0][:5])
	started = 0
	for _, row := range rows[1:] {
		assert.Equal(t, "concurrency 8", row[0])
		n, err := strconv.Atoi(row[5])
		require.NoError(t, err)
		started += n
	}
	assert.Equal(t, 30, started, "every request in a row")

	code, out, errOut = bench(t, append(quick, "-requests", "4", "-warmup", "0", "-series", "0", "-format", "json", "-quiet")...)
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, `"series"`, "-series 0 keeps none")
}

// A dataset with a malformed line stops the command before anything is
// sent, naming the line.
func TestMalformedDatasetRefused(t *testing.T) {
	code, out, errOut := bench(t, "-dataset", "testdata/malformed.jsonl")
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Equal(t, "bench: workload: malformed.jsonl has a malformed record: line 2: not valid JSON: unexpected end of JSON input\n", errOut)
}

func TestDataset(t *testing.T) {
	code, out, errOut := bench(t, "-sim-profile", "fast", "-speed", "20", "-dataset", "../../loadgen/workload/testdata/sharegpt.json",
		"-profile", "rate", "-rate", "20", "-requests", "6", "-warmup", "0", "-format", "json", "-quiet")
	require.Equal(t, 0, code, errOut)
	res, err := sweep.ReadResults(strings.NewReader(out))
	require.NoError(t, err)
	assert.Equal(t, "dataset sharegpt.json (2 records, 1 without a user turn skipped)", res.Workload)
	assert.Equal(t, 6, res.Runs[0].Summary.Completed, "the file's 2 records, three times over")
	assert.Equal(t, loadgen.Open{Arrival: loadgen.Constant, Rate: 20}, res.Runs[0].Load)
}

// A trace is replayed whole, at its times scaled, each request with its
// output length.
func TestTrace(t *testing.T) {
	code, out, errOut := bench(t, "-sim-profile", "fast", "-speed", "20", "-trace", "testdata/mooncake.jsonl", "-trace-scale", "0.5", "-trace-block", "16", "-format", "json")
	require.Equal(t, 0, code, errOut)
	res, err := sweep.ReadResults(strings.NewReader(out))
	require.NoError(t, err)
	assert.Equal(t, "trace", res.Profile)
	assert.Equal(t, "trace mooncake.jsonl (mooncake, 3 requests over 250ms) at 0.5× its times", res.Workload)
	r := res.Runs[0]
	assert.Equal(t, "trace replay", r.Label)
	assert.Equal(t, loadgen.Schedule{}, r.Load)
	assert.Equal(t, 3, r.Summary.Completed)
	assert.Equal(t, 5+3+8, r.Summary.CompletedTokens, "each request's output is the trace's")
	assert.EqualValues(t, 3, r.Lateness.Count)
	assert.Contains(t, errOut, "trace replay")
}

func TestSweepPage(t *testing.T) {
	longtest.Skip(t)
	page := filepath.Join(t.TempDir(), "sweep.html")
	code, _, errOut := bench(t, append(quick, "-profile", "sweep", "-rates", "2", "-throughput", "16", "-requests", "16", "-warmup", "0",
		"-format", "html", "-o", page)...)
	require.Equal(t, 0, code, errOut)
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	html := string(b)
	assert.Contains(t, html, "<title>Sweep of synthetic prompts")
	curves, overTime, _ := strings.Cut(html, `<h2 class="over">Over time</h2>`)
	assert.Equal(t, 3, strings.Count(curves, `<svg class="plot"`), "the latency–throughput curves")
	// Each of the four runs over time: three charts, their figures on hover.
	assert.Equal(t, 4, strings.Count(overTime, `<div class="charts series" data-run=`))
	assert.Equal(t, 4*3, strings.Count(overTime, `<svg class="plot"`))
	assert.Contains(t, overTime, `<rect class="band"`)
	assert.Contains(t, overTime, " started · ")
	for _, label := range []string{"synchronous (concurrency 1)", "throughput (concurrency 16)", "constant "} {
		assert.Contains(t, html, label)
	}
	assert.Equal(t, 4, strings.Count(errOut, " completed, "), "a progress line a run")
}

func TestSLOSearch(t *testing.T) {
	code, out, errOut := bench(t, append(quick, "-profile", "slo", "-slo-latency", "1h", "-throughput", "16", "-requests", "16", "-warmup", "0", "-quiet")...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Objective: 90% of requests within latency 1h0m0s")
	assert.Contains(t, out, "Highest rate meeting the objective:")
	assert.Contains(t, out, "its capacity, not the objective, bounds the rate")
}

// Against a server given by URL, prompts are sized by the server's own
// counts, and the results name the engine that answered with what it
// publishes of its limits.
func TestURL(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	code, out, errOut := bench(t, "-url", srv.URL+"/v1", "-model", loadgentest.DefaultModel, "-input-len", "100", "-output-len", "4",
		"-profile", "rate", "-rate", "50", "-requests", "5", "-warmup", "0", "-format", "json", "-quiet")
	require.Equal(t, 0, code, errOut)
	res, err := sweep.ReadResults(strings.NewReader(out))
	require.NoError(t, err)
	assert.Equal(t, srv.URL+"/v1", res.Server.URL)
	assert.False(t, res.Server.Simulated)
	assert.Equal(t, capacity.EngineVLLM, res.Server.Engine, "the simulator answers as vLLM does")
	p := srv.Handler.Profile()
	assert.Equal(t, p.MaxModelLen, res.Server.Limits.MaxModelLen)
	assert.Positive(t, res.Server.Limits.KVTokens)
	assert.Contains(t, res.Notes, "prompt sizes calibrated from the server's usage: 1 tokens a word, 5 a message, 3 a request")
	assert.Equal(t, 5, res.Runs[0].Summary.Completed)
}

func TestFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-profile", "slo"}, "-profile slo (its objective: -slo-ttft, -slo-ttfo, -slo-tpot, -slo-latency, -slo-quantile): cannot work: the objective sets no TTFT, TTFO, TPOT or latency"},
		{[]string{"-profile", "poisson"}, "-rate 0: give requests a second above 0"},
		{[]string{"-profile", "gamma", "-rate", "2"}, "-profile gamma: cannot work as the rate runs' load: Open.Burstiness is 0: Gamma arrivals need a shape above 0"},
		{[]string{"-profile", "sweep", "-arrival", "gamma"}, "-arrival gamma: cannot work as the rate runs' load: Open.Burstiness is 0"},
		{[]string{"-concurrency", "0"}, "-concurrency 0: give 1 to 16384 streams"},
		{[]string{"-concurrency", "100000000"}, "-concurrency 100000000: give 1 to 16384 streams"},
		{[]string{"-profile", "sweep", "-rates", "100000000"}, "-rates 100000000: give 1 to 1000 rates"},
		{[]string{"-trace", "t.jsonl", "-duration", "3s"}, "-trace replays the whole trace at its own times, with no window or warm-up of its own: drop -duration"},
		{[]string{"-trace", "t.jsonl", "-requests", "5"}, "drop -requests"},
		{[]string{"-trace", "t.jsonl", "-warmup", "1s"}, "drop -warmup"},
		{[]string{"-max-in-flight", "4"}, "-max-in-flight caps an open loop"},
		{[]string{"-trace", "t.jsonl", "-profile", "sweep"}, "-trace replays the trace's own arrivals: drop -profile"},
		{[]string{"-trace", "t.jsonl", "-dataset", "d.json"}, "-dataset, -trace and -turns each choose what is sent: give one"},
		{[]string{"-input-len", "normal:5"}, `-input-len: "normal:5" is not a length distribution`},
		{[]string{"-turns", "3", "-profile", "rate", "-rate", "2"}, "-turns sessions run in a closed loop"},
		{[]string{"-format", "pdf"}, `unknown -format "pdf"`},
		{[]string{"-trace", "testdata/nothing.jsonl"}, "no such file"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := bench(t, tc.args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.msg)
		})
	}
}

// Sessions grow turn by turn, with a think time between turns.
func TestSessions(t *testing.T) {
	code, out, errOut := bench(t, "-sim-profile", "fast", "-speed", "20", "-turns", "3", "-think", "50ms", "-input-len", "20", "-output-len", "8",
		"-concurrency", "2", "-requests", "6", "-warmup", "0", "-format", "json", "-quiet")
	require.Equal(t, 0, code, errOut)
	res, err := sweep.ReadResults(strings.NewReader(out))
	require.NoError(t, err)
	assert.Equal(t, "sessions of 3 turns, 20 tokens in and 8 out a turn, 50ms think time", res.Workload)
	assert.Equal(t, 6, res.Runs[0].Summary.Completed)
}

// Synthetic prompts that cannot be made as asked are refused before
// anything runs.
func TestWorkloadRefused(t *testing.T) {
	code, out, errOut := bench(t, "-input-len", "100", "-prefix-groups", "2", "-prefix-len", "200")
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "bench: workload: Synthetic.Input 100 is shorter than the shared prefix's 200 tokens")
	assert.NotContains(t, errOut, "Benchmarking", "nothing ran")
}

// Against a server that refuses every request, the command stops the run
// early and exits 1 with the cause.
func TestRefusingServerFails(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"object":"error","message":"The model does not exist.","code":400}`)
	}))
	defer srv.Close()
	start := time.Now()
	code, _, errOut := bench(t, "-url", srv.URL+"/v1", "-model", "nope", "-dataset", "../../loadgen/workload/testdata/sharegpt.json",
		"-duration", "1m", "-warmup", "0", "-quiet")
	t.Log(errOut)
	assert.Equal(t, 1, code, errOut)
	assert.Less(t, time.Since(start), 30*time.Second, "stopped early, not after the minute")
	assert.Contains(t, errOut, "bench: loadgen: the run stopped: its first 20 requests in a row failed for a cause")
	assert.Contains(t, errOut, "The model does not exist.", "the server's own words")
}

// Against a server whose every answer is empty (only [DONE]), no request
// counts as a success: the report counts them failed as empty answers, and
// the command exits 1 rather than report a run that measured nothing.
func TestEmptyAnswersFail(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	code, out, errOut := bench(t, "-url", srv.URL+"/v1", "-model", "m", "-dataset", "../../loadgen/workload/testdata/sharegpt.json",
		"-requests", "20", "-concurrency", "2", "-warmup", "0", "-quiet")
	t.Log(out, errOut)
	assert.Equal(t, 1, code, errOut)
	assert.Regexp(t, `Successful requests: +0\n`, out)
	assert.Regexp(t, `Failed requests: +20 \(empty_answer ×20\)`, out)
	assert.Contains(t, errOut, "without a token")
}
