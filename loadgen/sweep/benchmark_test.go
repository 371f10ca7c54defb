package sweep_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/loadgen/workload"
	"github.com/llmload/llmload/metrics"
)

// configFields returns the fields of every *loadgen.ConfigError err holds.
func configFields(err error) []string {
	var fields []string
	var walk func(error)
	walk = func(err error) {
		if ce, ok := err.(*loadgen.ConfigError); ok {
			fields = append(fields, ce.Field)
			return
		}
		if u, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range u.Unwrap() {
				walk(e)
			}
		} else if e := errors.Unwrap(err); e != nil {
			walk(e)
		}
	}
	walk(err)
	return fields
}

// mix is a workload of synthetic chat prompts of 16 tokens and outputs of
// 8, sized for the simulator.
func mix() *workload.Mix {
	return &workload.Mix{Input: workload.Fixed(16), Output: workload.Fixed(8), Sizing: workload.SimulatorSizing(true),
		Builder: workload.Builder{Model: loadgentest.DefaultModel, IgnoreEOS: true}}
}

// Every setting that cannot work is refused before anything is sent,
// with a ConfigError naming its field; nothing panics.
func TestBenchmarkRefuses(t *testing.T) {
	c := &loadgen.Client{BaseURL: "http://127.0.0.1:1/v1"} // never reached
	target := sweep.Target(func(loadgen.Load) (*loadgen.Generator, error) {
		t.Error("a refused benchmark made a run")
		return nil, errors.New("refused")
	})
	obj := sweep.Objective{SLO: metrics.SLO{TTFT: time.Second}}
	levels := []int{1, 4}
	for _, tc := range []struct {
		name  string
		b     *sweep.Benchmark
		field string
	}{
		{"nil", nil, "Benchmark"},
		{"zero", &sweep.Benchmark{}, "Benchmark.Client"},
		{"nothing to run", &sweep.Benchmark{}, "Benchmark.Load"},
		{"no workload", &sweep.Benchmark{Client: c, Concurrency: levels}, "Benchmark.Workload"},
		{"no client", &sweep.Benchmark{Workload: mix(), Concurrency: levels}, "Benchmark.Client"},
		{"bad client", &sweep.Benchmark{Client: &loadgen.Client{BaseURL: "ftp://x"}, Workload: mix(), Concurrency: levels}, "Benchmark.Client"},
		{"target and client", &sweep.Benchmark{Target: target, Client: c, Concurrency: levels}, "Benchmark.Target"},
		{"target and duration", &sweep.Benchmark{Target: target, Duration: time.Second, Concurrency: levels}, "Benchmark.Duration"},
		{"negative duration", &sweep.Benchmark{Client: c, Workload: mix(), Duration: -1, Concurrency: levels}, "Benchmark.Duration"},
		{"negative warmup", &sweep.Benchmark{Client: c, Workload: mix(), Warmup: -1, Concurrency: levels}, "Benchmark.Warmup"},
		{"negative requests", &sweep.Benchmark{Client: c, Workload: mix(), Requests: -1, Concurrency: levels}, "Benchmark.Requests"},
		{"negative series", &sweep.Benchmark{Client: c, Workload: mix(), Series: -1, Concurrency: levels}, "Benchmark.Series"},
		{"load and levels", &sweep.Benchmark{Target: target, Load: loadgen.Closed{Streams: 2}, Concurrency: levels}, "Benchmark.Load"},
		{"levels and rates", &sweep.Benchmark{Target: target, Rates: []float64{1}, Concurrency: levels}, "Benchmark.Load"},
		{"negative load", &sweep.Benchmark{Target: target, Load: loadgen.Closed{Streams: -1}}, "Benchmark.Load"},
		{"schedule cap", &sweep.Benchmark{Target: target, Load: loadgen.Schedule{MaxInFlight: -1}}, "Benchmark.Load"},
		{"zero level", &sweep.Benchmark{Target: target, Concurrency: []int{1, 0}}, "Benchmark.Concurrency[1]"},
		{"huge level", &sweep.Benchmark{Target: target, Concurrency: []int{1 << 20}}, "Benchmark.Concurrency[0]"},
		{"negative rate", &sweep.Benchmark{Target: target, Rates: []float64{2, -1}}, "Benchmark.Rates[1]"},
		{"NaN rate", &sweep.Benchmark{Target: target, Rates: []float64{math.NaN()}}, "Benchmark.Rates[0]"},
		{"open's shape", &sweep.Benchmark{Target: target, Rates: []float64{2}, Open: loadgen.Open{Burstiness: 2}}, "Benchmark.Open"},
		{"open's rate", &sweep.Benchmark{Target: target, Rates: []float64{2}, Open: loadgen.Open{Rate: 3}}, "Benchmark.Open.Rate"},
		{"negative sweep", &sweep.Benchmark{Target: target, Sweep: -1}, "Benchmark.Sweep"},
		{"negative throughput", &sweep.Benchmark{Target: target, Sweep: 2, ThroughputStreams: -1}, "Benchmark.ThroughputStreams"},
		{"search beside a load", &sweep.Benchmark{Target: target, Load: loadgen.Closed{}, Search: sweep.AxisConcurrency, Objective: obj}, "Benchmark.Search"},
		{"search of another axis", &sweep.Benchmark{Target: target, Rates: []float64{1}, Search: sweep.AxisConcurrency, Objective: obj}, "Benchmark.Search"},
		{"unknown axis", &sweep.Benchmark{Target: target, Search: 9, Objective: obj}, "Benchmark.Search"},
		{"search without objective", &sweep.Benchmark{Target: target, Search: sweep.AxisConcurrency}, "Benchmark.Objective"},
		{"fractional streams", &sweep.Benchmark{Target: target, Search: sweep.AxisConcurrency, Objective: obj, Low: 2.5}, "Benchmark.Low"},
		{"empty range", &sweep.Benchmark{Target: target, Search: sweep.AxisConcurrency, Objective: obj, Low: 4, High: 4}, "Benchmark.High"},
		{"empty default range", &sweep.Benchmark{Target: target, Search: sweep.AxisConcurrency, Objective: obj, Low: 4, ThroughputStreams: 4}, "Benchmark.High"},
		{"negative step", &sweep.Benchmark{Target: target, Search: sweep.AxisRate, Objective: obj, Step: -1}, "Benchmark.Step"},
		{"negative max runs", &sweep.Benchmark{Target: target, Search: sweep.AxisRate, Objective: obj, MaxRuns: -1}, "Benchmark.MaxRuns"},
		{"search's throughput", &sweep.Benchmark{Target: target, Search: sweep.AxisRate, Objective: obj, ThroughputStreams: -1}, "Benchmark.ThroughputStreams"},
		{"search's open", &sweep.Benchmark{Target: target, Search: sweep.AxisRate, Objective: obj, Open: loadgen.Open{Arrival: 9}}, "Benchmark.Open"},
		{"bounds without a search", &sweep.Benchmark{Target: target, Concurrency: levels, High: 8}, "Benchmark.High"},
		{"bad quantile", &sweep.Benchmark{Target: target, Concurrency: levels, Objective: sweep.Objective{Quantile: 2}}, "Benchmark.Objective"},
		{"negative objective", &sweep.Benchmark{Target: target, Concurrency: levels, Objective: sweep.Objective{SLO: metrics.SLO{TTFT: -1}}}, "Benchmark.Objective"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.b.Run(t.Context())
			require.Error(t, err)
			assert.Nil(t, res, "refused before anything ran")
			var ce *loadgen.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, configFields(err), tc.field, "%v", err)
			t.Log(err)
		})
	}
	var none context.Context
	_, err := (&sweep.Benchmark{Target: target, Concurrency: levels}).Run(none)
	assert.Error(t, err, "a nil context")
	_, err = (*sweep.Search)(nil).Run(t.Context())
	assert.Error(t, err)
	_, err = (*sweep.Sweep)(nil).Run(t.Context())
	assert.Error(t, err)
	_, err = sweep.Run(t.Context(), nil, loadgen.Closed{}, "x", sweep.Objective{})
	assert.Error(t, err)
}

// A concurrency sweep runs a closed loop of each level asked, in order,
// made from the Client and the Workload, and the document says its axis.
func TestBenchmarkConcurrencySweep(t *testing.T) {
	p := loadgentest.FastProfile()
	p.DecodeBase = []loadgentest.BatchCost{{Batch: 1, Seconds: 0.002}}
	srv := loadgentest.NewServer(p)
	t.Cleanup(srv.Close)
	var seen []loadgen.Load
	b := &sweep.Benchmark{
		Client: &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}, Workload: mix(),
		Requests: 16, Series: 100 * time.Millisecond, Concurrency: []int{1, 4, 16},
		OnRun: func(load loadgen.Load, g *loadgen.Generator) {
			seen = append(seen, load)
			assert.Equal(t, load, g.Load, "the workload gave the run its load")
			assert.Equal(t, 16, g.Requests)
			assert.Zero(t, g.Duration, "a run of Requests has no window")
		},
		OnResult: func(r *sweep.Result) { r.Energy = &metrics.Energy{GPUs: 1} },
	}
	res, err := b.Run(t.Context())
	require.NoError(t, err)
	want := []loadgen.Load{loadgen.Closed{Streams: 1}, loadgen.Closed{Streams: 4}, loadgen.Closed{Streams: 16}}
	assert.Equal(t, want, seen)
	require.Len(t, res.Runs, 3)
	assert.Equal(t, "concurrency", res.Profile)
	assert.Equal(t, sweep.AxisConcurrency, res.Axis)
	assert.Equal(t, "synthetic prompts, 16 tokens in, 8 out", res.Workload)
	assert.Nil(t, res.Objective)
	for i, r := range res.Runs {
		assert.Equal(t, want[i], r.Load)
		assert.Equal(t, want[i].String(), r.Label)
		assert.Equal(t, 16, r.Summary.Completed, r.Label)
		assert.NotNil(t, r.Series, "Series kept the run's time series")
		assert.Equal(t, &metrics.Energy{GPUs: 1}, r.Energy, "what OnResult added is kept")
		assert.Equal(t, "net/http", r.ReadMode, "the run says how its bodies were read")
	}

	var doc bytes.Buffer
	require.NoError(t, res.Write(&doc, "json"))
	assert.Contains(t, doc.String(), `"axis": "concurrency"`)
	assert.Contains(t, doc.String(), `"read_mode": "net/http"`)
	back, err := sweep.ReadResults(&doc)
	require.NoError(t, err)
	assert.Equal(t, sweep.AxisConcurrency, back.Axis)
	var table, page bytes.Buffer
	require.NoError(t, back.Write(&table, "table"))
	assert.True(t, strings.HasPrefix(table.String(), "Concurrency sweep of synthetic prompts"), table.String())
	assert.Contains(t, table.String(), "Bodies read by: net/http\n")
	require.NoError(t, back.Write(&page, "html"))
	assert.Contains(t, page.String(), ">streams<", "the curves are by streams")
	assert.NotContains(t, page.String(), "requests a second")
}

// A search of concurrency against a server that runs 4 requests at once
// (a fifth waits a whole request, 8 steps of 10 ms, for its first token)
// finds 4 streams, to within its step, with the runs that bracket it.
func TestBenchmarkConcurrencySearch(t *testing.T) {
	target := simTarget(t, 0.01, 4, 8, func(g *loadgen.Generator) { g.Duration = 300 * time.Millisecond })
	b := &sweep.Benchmark{Target: target, Search: sweep.AxisConcurrency, Low: 1, High: 12, Step: 1,
		Objective: sweep.Objective{SLO: metrics.SLO{TTFT: 50 * time.Millisecond}, Quantile: 0.95}}
	res, err := b.Run(t.Context())
	require.NoError(t, err)
	f := res.Search
	require.NotNil(t, f)
	for _, r := range res.Runs {
		t.Logf("%s: TTFT p50 %v p99 %v, %.0f%% good", r.Label, r.Summary.TTFT.P50, r.Summary.TTFT.P99, 100*r.GoodShare)
	}
	assert.Equal(t, "slo", res.Profile)
	assert.Equal(t, sweep.AxisConcurrency, res.Axis)
	assert.Equal(t, sweep.AxisConcurrency, f.Axis)
	assert.InDelta(t, 4, f.Concurrency, 1, f.Reason)
	assert.Zero(t, f.Rate)
	assert.Equal(t, float64(f.Concurrency), f.Low)
	assert.Equal(t, f.Low+1, f.High, "bracketed to within a stream")
	require.GreaterOrEqual(t, f.Below, 0)
	require.GreaterOrEqual(t, f.Above, 0)
	assert.Equal(t, loadgen.Closed{Streams: f.Concurrency}, res.Runs[f.Below].Load)
	assert.True(t, res.Runs[f.Below].Met)
	assert.Equal(t, loadgen.Closed{Streams: f.Concurrency + 1}, res.Runs[f.Above].Load)
	assert.False(t, res.Runs[f.Above].Met)
	assert.Equal(t, loadgen.Closed{Streams: 12}, res.Runs[0].Load, "the top of the range first")
	for _, r := range res.Runs {
		_, closed := r.Load.(loadgen.Closed)
		assert.True(t, closed, "every run a closed loop: %v", r.Load)
	}

	var table, page bytes.Buffer
	require.NoError(t, res.Write(&table, "table"))
	assert.Contains(t, table.String(), "SLO search over concurrency")
	assert.Contains(t, table.String(), "Highest concurrency meeting the objective: "+res.Runs[f.Below].Load.String()[len("concurrency "):]+" streams")
	require.NoError(t, res.Write(&page, "html"))
	assert.Contains(t, page.String(), "highest concurrency meeting the objective")
	assert.Contains(t, page.String(), ">streams<")
}

// A document written before the axis was kept reads: its sweep or search
// varied rates.
func TestReadResultsWithoutAxis(t *testing.T) {
	doc := `{"schema": "llmload.bench/v1.1", "profile": "slo", "runs": [],
		"search": {"objective": {"slo": {"ttft": "500ms"}}, "rate": 3.5, "low": 3.5, "high": 4, "step": 0.5, "below": 1, "above": 2, "reason": "met"}}`
	res, err := sweep.ReadResults(strings.NewReader(doc))
	require.NoError(t, err)
	assert.Equal(t, sweep.AxisRate, res.Axis)
	assert.Equal(t, sweep.AxisRate, res.Search.Axis)
	assert.Equal(t, 3.5, res.Search.Rate)
	var table bytes.Buffer
	require.NoError(t, res.Write(&table, "table"))
	assert.Contains(t, table.String(), "Highest rate meeting the objective: 3.5 req/s — met.")
	_, err = sweep.ReadResults(strings.NewReader(`{"schema": "llmload.bench/v1.2", "axis": "diagonal", "runs": []}`))
	assert.ErrorContains(t, err, `"diagonal"`)
}

// A search of rates after runs at listed rates takes the run at a rate it
// would probe as its own, the top of its range here, instead of repeating
// it; the document says the axis in req/s.
func TestBenchmarkRateSearchTakesTheRatesRuns(t *testing.T) {
	b := &sweep.Benchmark{Target: fastTarget(t, 8), Rates: []float64{50, 100}, Open: loadgen.Open{Arrival: loadgen.Constant},
		Search: sweep.AxisRate, High: 100, Objective: sweep.Objective{SLO: metrics.SLO{Latency: time.Hour}}}
	res, err := b.Run(t.Context())
	require.NoError(t, err)
	require.Len(t, res.Runs, 2, "no run of its own")
	assert.Equal(t, []float64{50, 100}, []float64{rateOf(res.Runs[0]), rateOf(res.Runs[1])})
	f := res.Search
	assert.Equal(t, sweep.AxisRate, res.Axis)
	assert.Equal(t, sweep.AxisRate, f.Axis)
	assert.Equal(t, 100.0, f.Rate)
	assert.Equal(t, 1, f.Below)
	var table bytes.Buffer
	require.NoError(t, res.Write(&table, "table"))
	assert.Contains(t, table.String(), "Highest rate meeting the objective: 100 req/s — met at the top of the range, 100 req/s: the range, not the objective, bounds the rate.")
}

// Validate refuses what Run refuses, with the same errors, and runs
// nothing; settings that work pass.
func TestBenchmarkValidate(t *testing.T) {
	calls := 0
	target := func(loadgen.Load) (*loadgen.Generator, error) {
		calls++
		return nil, errors.New("not run")
	}
	b := &sweep.Benchmark{Target: target, Concurrency: []int{1, 0}}
	err := b.Validate()
	ce, ok := errors.AsType[*loadgen.ConfigError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, "Benchmark.Concurrency[1]", ce.Field)
	res, runErr := b.Run(t.Context())
	assert.Nil(t, res)
	assert.EqualError(t, runErr, err.Error())
	assert.NoError(t, (&sweep.Benchmark{Target: target, Concurrency: []int{1, 4}}).Validate())
	assert.Zero(t, calls, "nothing ran")
	var none *sweep.Benchmark
	assert.Error(t, none.Validate())
}
