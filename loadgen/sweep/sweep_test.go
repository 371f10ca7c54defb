package sweep_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/loadgen/workload"
	"github.com/llmload/llmload/metrics"
)

// fastTarget runs n requests of 8 output tokens a run against a simulator
// whose decode step takes 2 ms.
func fastTarget(t *testing.T, n int) sweep.Target {
	return simTarget(t, 0.002, 4, 8, func(g *loadgen.Generator) { g.Requests = n })
}

// simTarget is a target of completions of 16 prompt tokens and output
// tokens each on a simulator whose decode step takes step seconds, with
// at most seqs requests at once (0: the profile's); set shapes each run's
// generator (its Requests or Duration).
func simTarget(t *testing.T, step float64, seqs, output int, set func(*loadgen.Generator)) sweep.Target {
	p := loadgentest.FastProfile()
	p.DecodeBase = []loadgentest.BatchCost{{Batch: 1, Seconds: step}}
	if seqs > 0 {
		p.MaxNumSeqs = seqs
	}
	srv := loadgentest.NewServer(p)
	t.Cleanup(srv.Close)
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}
	return func(loadgen.Load) (*loadgen.Generator, error) {
		syn := &workload.Synthetic{Input: workload.Fixed(16), Output: workload.Fixed(output)}
		feed := workload.NewFeed(syn.Reader(), &workload.Builder{API: loadgen.Completions, Model: loadgentest.DefaultModel, IgnoreEOS: true})
		g := &loadgen.Generator{Client: c, Source: feed.Source}
		set(g)
		return g, nil
	}
}

func TestSweepRuns(t *testing.T) {
	var seen []string
	sw := &sweep.Sweep{Target: fastTarget(t, 24), Rates: 2, ThroughputStreams: 8,
		Objective: sweep.Objective{SLO: metrics.SLO{Latency: time.Hour}}, OnResult: func(r *sweep.Result) {
			seen = append(seen, r.Label)
			r.Energy = &metrics.Energy{GPUs: len(seen)}
		}}
	res, err := sw.Run(t.Context())
	require.NoError(t, err)
	runs := res.Runs
	require.Len(t, runs, 4)
	for i, r := range runs {
		assert.Equal(t, &metrics.Energy{GPUs: i + 1}, r.Energy, "what OnResult added to run %d is kept, as a Benchmark's is", i)
	}
	assert.Equal(t, "sweep", res.Profile)
	assert.Equal(t, &sw.Objective, res.Objective)
	assert.False(t, res.Started.IsZero() || res.Finished.Before(res.Started), "started %v, finished %v", res.Started, res.Finished)
	assert.Equal(t, []string{"synchronous", "throughput", runs[2].Load.String(), runs[3].Load.String()}, seen)
	assert.Equal(t, loadgen.Closed{Streams: 1}, runs[0].Load)
	assert.Equal(t, loadgen.Closed{Streams: 8}, runs[1].Load)
	lo, hi := runs[0].Capacity, runs[1].Capacity
	require.Greater(t, hi, lo, "4 requests at once complete more a second than 1")
	for i, r := range runs[2:] {
		open, ok := r.Load.(loadgen.Open)
		require.True(t, ok, "%v", r.Load)
		assert.Equal(t, loadgen.Poisson, open.Arrival, "the zero Open's arrivals")
		assert.NotZero(t, open.Seed, "the seed drawn is recorded")
		assert.InEpsilon(t, lo+(hi-lo)*float64(i+1)/3, open.Rate, 1e-9)
	}
	for _, r := range runs {
		assert.Equal(t, 24, r.Requests, r.Label)
		assert.Equal(t, 24, r.Summary.Completed, r.Label)
		assert.EqualValues(t, 24, r.Histograms.Latency.Summary().Count, r.Label)
		assert.True(t, r.Met, "%s: every request completed within an hour", r.Label)
		assert.Equal(t, 1.0, r.GoodShare)
		assert.Equal(t, loadgen.StopRequests, r.Stopped)
	}
	assert.Zero(t, runs[0].Lateness.Count, "a closed loop has no arrivals to be late")
	assert.EqualValues(t, 24, runs[2].Lateness.Count)
}

// A search whose objective every rate meets answers the highest rate the
// server completed; one no rate meets answers none; both say so.
func TestSearchEnds(t *testing.T) {
	t.Run("always met", func(t *testing.T) {
		s := &sweep.Search{Target: fastTarget(t, 16), Objective: sweep.Objective{SLO: metrics.SLO{TTFT: time.Hour}}, ThroughputStreams: 8}
		res, err := s.Run(t.Context())
		require.NoError(t, err)
		found, runs := res.Search, res.Runs
		assert.Equal(t, "slo", res.Profile)
		assert.Equal(t, &s.Objective, res.Objective)
		require.Len(t, runs, 2, "the throughput run, then its rate")
		assert.Equal(t, runs[0].Capacity, found.Rate)
		assert.Equal(t, 1, found.Below)
		assert.Equal(t, -1, found.Above)
		assert.Contains(t, found.Reason, "its capacity, not the objective, bounds the rate")
	})
	t.Run("never met", func(t *testing.T) {
		s := &sweep.Search{Target: fastTarget(t, 8), Objective: sweep.Objective{SLO: metrics.SLO{TTFT: time.Microsecond}},
			Low: 0, High: 400, Step: 150, Open: loadgen.Open{Arrival: loadgen.Constant}}
		res, err := s.Run(t.Context())
		require.NoError(t, err)
		found, runs := res.Search, res.Runs
		assert.Zero(t, found.Rate)
		assert.Equal(t, -1, found.Below)
		assert.Equal(t, len(runs)-1, found.Above)
		assert.Equal(t, []float64{400, 200, 100}, []float64{rateOf(runs[0]), rateOf(runs[1]), rateOf(runs[2])})
		assert.Contains(t, found.Reason, "not met at any rate tried: the lowest, 100 req/s")
	})
}

func TestSearchRefuses(t *testing.T) {
	target := func(loadgen.Load) (*loadgen.Generator, error) { return nil, nil }
	for name, s := range map[string]*sweep.Search{
		"no target":      {Objective: sweep.Objective{SLO: metrics.SLO{TTFT: time.Second}}},
		"no objective":   {Target: target},
		"empty range":    {Target: target, Objective: sweep.Objective{SLO: metrics.SLO{TTFT: time.Second}}, Low: 5, High: 5},
		"bad quantile":   {Target: target, Objective: sweep.Objective{SLO: metrics.SLO{TTFT: time.Second}, Quantile: 2}},
		"gamma of shape": {Target: target, Objective: sweep.Objective{SLO: metrics.SLO{TTFT: time.Second}}, Open: loadgen.Open{Burstiness: 2}},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := s.Run(t.Context())
			require.Error(t, err)
			assert.Empty(t, res.Runs, "refused before any run")
			assert.Nil(t, res.Search)
		})
	}
}

// A result's load is stored as {"kind": ...} and reads back.
func TestLoadStored(t *testing.T) {
	for _, tc := range []struct {
		load loadgen.Load
		json string
	}{
		{loadgen.Closed{Streams: 8}, `{"kind":"concurrency","concurrency":8}`},
		{loadgen.Closed{Streams: 8, Ramp: 90 * time.Second}, `{"kind":"concurrency","concurrency":8,"ramp":"1m30s"}`},
		{loadgen.Open{Arrival: loadgen.Constant, Rate: 3.25}, `{"kind":"constant","rate":3.25}`},
		{loadgen.Open{Rate: 0.05, Seed: 7, MaxInFlight: 4}, `{"kind":"poisson","rate":0.05,"max_in_flight":4,"seed":7}`},
		{loadgen.Open{Arrival: loadgen.Gamma, Rate: 12.3456, Burstiness: 0.5}, `{"kind":"gamma","rate":12.3456,"burstiness":0.5}`},
		{loadgen.Schedule{}, `{"kind":"schedule"}`},
	} {
		b, err := json.Marshal(sweep.Result{Label: "x", Load: tc.load})
		require.NoError(t, err)
		var doc map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(b, &doc))
		assert.JSONEq(t, tc.json, string(doc["load"]))
		var back sweep.Result
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, tc.load, back.Load)
		assert.Equal(t, "x", back.Label)
	}
	var back sweep.Result
	assert.ErrorContains(t, json.Unmarshal([]byte(`{"load":{"kind":"sometimes"}}`), &back), `"sometimes"`)
	// A ramp written as nanoseconds, as files did before it was text, reads.
	require.NoError(t, json.Unmarshal([]byte(`{"load":{"kind":"concurrency","concurrency":2,"ramp":5000000000}}`), &back))
	assert.Equal(t, loadgen.Closed{Streams: 2, Ramp: 5 * time.Second}, back.Load)
	assert.ErrorContains(t, json.Unmarshal([]byte(`{"load":{"kind":"concurrency","ramp":"soon"}}`), &back), `"soon"`)
}

// The results are a versioned document that reads back, histograms
// included, and render as a table and as a page with curves.
func TestResultsDocument(t *testing.T) {
	sw := &sweep.Sweep{Target: fastTarget(t, 12), Rates: 1, ThroughputStreams: 4}
	res, err := sw.Run(t.Context())
	require.NoError(t, err)
	runs := res.Runs
	res.Server = capacity.Server{URL: "simulator", Simulated: true, Speed: 1, Profile: "fast"}
	res.Workload = "synthetic prompts"
	res.Search = &sweep.Found{Axis: sweep.AxisRate, Rate: rateOf(runs[2]), Low: 1, High: 2, Below: 2, Above: -1, Reason: "a test"}
	res.Objective = &sweep.Objective{SLO: metrics.SLO{TTFT: time.Second}}
	res.Notes = []string{"a note \x1b[31mred\x1b[0m"}

	var doc bytes.Buffer
	require.NoError(t, res.Write(&doc, "json"))
	var raw map[string]any
	require.NoError(t, json.Unmarshal(doc.Bytes(), &raw))
	assert.Equal(t, sweep.Schema, raw["schema"])
	run0 := raw["runs"].([]any)[0].(map[string]any)
	ttft := run0["histograms"].(map[string]any)["ttft"].(map[string]any)
	assert.True(t, strings.HasPrefix(ttft["v2"].(string), "HISTF"), "HdrHistogram's V2 encoding")
	assert.Contains(t, ttft, "sum_ns", "with the exact figures beside it")
	for _, k := range []string{"request_rate", "output_tok_s", "requests"} {
		assert.IsType(t, float64(0), run0[k], k)
	}
	back, err := sweep.ReadResults(bytes.NewReader(doc.Bytes()))
	require.NoError(t, err)
	require.Len(t, back.Runs, 3)
	assert.Equal(t, runs[1].Summary.TTFT.Count, back.Runs[1].Histograms.TTFT.Summary().Count)
	assert.Equal(t, runs[1].Histograms.TTFT.Summary(), back.Runs[1].Histograms.TTFT.Summary(), "exact, as recorded")
	assert.Equal(t, runs[1].Summary.TTFT, back.Runs[1].Summary.TTFT)
	assert.Equal(t, runs[1].Summary.Completed, back.Runs[1].Summary.Completed)
	assert.True(t, runs[1].Summary.Window.Start.Equal(back.Runs[1].Summary.Window.Start))
	assert.Equal(t, *res.Search, *back.Search)

	_, err = sweep.ReadResults(strings.NewReader(`{"schema": "llmload.matrix/v1"}`))
	assert.ErrorContains(t, err, "not llmload.bench/v1")
	_, err = sweep.ReadResults(strings.NewReader(`{"schema": "llmload.bench/v1.3", "runs": []}`))
	assert.NoError(t, err, "a minor version reads")

	var table bytes.Buffer
	res.Runs[1].ClientLimited = "the client's timers fired up to 9ms late (p99), above 5ms"
	require.NoError(t, res.Write(&table, "table"))
	out := table.String()
	assert.Contains(t, out, "throughput (concurrency 4) †")
	assert.Contains(t, out, "† throughput (concurrency 4): the client may have limited this run (the client's timers fired up to 9ms late (p99), above 5ms)")
	for _, want := range []string{"Sweep of synthetic prompts against llmload's simulated server", "TTFT ms mean", "E2E ms mean", "goodput",
		"synchronous", "throughput", "Highest rate meeting the objective", "Note: a note red"} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "\x1b")

	var page bytes.Buffer
	require.NoError(t, res.Write(&page, "html"))
	html := page.String()
	assert.Equal(t, 3, strings.Count(html, "<svg class=\"plot\""), "TTFT, TPOT and latency curves")
	assert.Contains(t, html, "requests a second")
	assert.Contains(t, html, `class="mark"`, "the search's answer is marked")
	assert.NotContains(t, html, "\x1b")

	// One run reads as vLLM's benchmark prints it.
	one := &sweep.Results{Profile: "concurrency", Runs: runs[:1], Server: res.Server}
	table.Reset()
	require.NoError(t, one.Write(&table, "table"))
	for _, want := range []string{"Serving Benchmark Result", "Successful requests:", "Request throughput (req/s):", "Output token throughput (tok/s):",
		"Mean TTFT (ms):", "Median TPOT (ms):", "P99 ITL (ms):", "P90 E2E (ms):"} {
		assert.Contains(t, table.String(), want)
	}
	page.Reset()
	require.NoError(t, one.Write(&page, "html"))
	assert.NotContains(t, page.String(), "<svg class=\"plot\"", "no curve of one point")
}

// rateOf is the rate of an open-loop run, 0 for another.
func rateOf(r sweep.Result) float64 {
	if o, ok := r.Load.(loadgen.Open); ok {
		return o.Rate
	}
	return 0
}

// Open-loop rates past the server's capacity are stopped early and
// reported over capacity; a rate below it runs its whole window,
// unflagged, and completes at its rate.
func TestOverCapacityStoppedEarly(t *testing.T) {
	longtest.Skip(t)
	// 2 requests at once, each 8 steps of 20 ms: about 12 requests a
	// second at most.
	target := simTarget(t, 0.02, 2, 8, func(g *loadgen.Generator) { g.Duration = 6 * time.Second })
	obj := sweep.Objective{SLO: metrics.SLO{Latency: time.Hour}}
	for _, tc := range []struct {
		load loadgen.Load
		over string // what the reason says, "" for a rate the server sustains
	}{
		{loadgen.Open{Rate: 4, Arrival: loadgen.Constant}, ""},
		{loadgen.Open{Rate: 200, MaxInFlight: 16}, "stayed at the cap of 16"},
		{loadgen.Open{Rate: 100}, "grew from"},
	} {
		t.Run(tc.load.String(), func(t *testing.T) {
			start := time.Now()
			r, err := sweep.Run(t.Context(), target, tc.load, tc.load.String(), obj)
			took := time.Since(start)
			require.NoError(t, err)
			t.Logf("%s: %v, %d completed, %q", tc.load, took.Round(time.Millisecond), r.Summary.Completed, r.OverCapacity)
			if tc.over == "" {
				assert.Empty(t, r.OverCapacity)
				assert.GreaterOrEqual(t, took, 6*time.Second, "the whole window")
				assert.Equal(t, loadgen.StopWindow, r.Stopped)
				assert.InEpsilon(t, 4, r.RequestRate, 0.3, "the server keeps up")
				assert.True(t, r.Met)
				return
			}
			assert.Contains(t, r.OverCapacity, tc.over)
			assert.Less(t, took, 5500*time.Millisecond, "stopped early")
			assert.False(t, r.Met, "an over-capacity rate meets no objective")
		})
	}
}

func TestWriteRefusesAnUnknownFormat(t *testing.T) {
	var out bytes.Buffer
	err := (&sweep.Results{}).Write(&out, "markdown")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"markdown"`)
	assert.Contains(t, err.Error(), "table, json, html or series-csv")
	assert.Zero(t, out.Len(), "nothing written")
}

func TestReadResultsRefusesAnUnknownStopReason(t *testing.T) {
	res := &sweep.Results{Runs: []sweep.Result{{Load: loadgen.Closed{Streams: 1}, Stopped: loadgen.StopWindow}}}
	var doc bytes.Buffer
	require.NoError(t, res.Write(&doc, "json"))
	back, err := sweep.ReadResults(bytes.NewReader(doc.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, loadgen.StopWindow, back.Runs[0].Stopped)

	bad := bytes.Replace(doc.Bytes(), []byte(`"stopped": "window"`), []byte(`"stopped": "timeout"`), 1)
	require.NotEqual(t, doc.Bytes(), bad, "the document names the stop reason")
	_, err = sweep.ReadResults(bytes.NewReader(bad))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown stop reason "timeout"`)
}

// A search whose throughput run completed nothing, every request still
// running when its window ended, says so and what to change.
func TestSearchWindowShorterThanARequest(t *testing.T) {
	// 400 tokens of 20 ms steps: 8 s a request, in a 300 ms window.
	target := simTarget(t, 0.02, 0, 400, func(g *loadgen.Generator) { g.Duration = 300 * time.Millisecond })
	var through []sweep.Result
	s := &sweep.Search{Target: target, Objective: sweep.Objective{SLO: metrics.SLO{TTFT: time.Hour}}, ThroughputStreams: 4,
		OnResult: func(r *sweep.Result) { through = append(through, *r) }}
	_, err := s.Run(t.Context())
	require.Error(t, err)
	require.Len(t, through, 1)
	var block bytes.Buffer
	require.NoError(t, (&sweep.Results{Runs: through}).Write(&block, "table"))
	assert.Regexp(t, `Mean E2E \(ms\): +—\n`, block.String(), "no request completed: no latency, not 0 ms")
	assert.Regexp(t, `Mean TPOT \(ms\): +—\n`, block.String())
	assert.Contains(t, err.Error(), "4 requests: 0 completed, 0 failed, 4 cut")
	assert.Contains(t, err.Error(), "every request was still running when the window ended: give the runs a window longer than a request takes")
}
