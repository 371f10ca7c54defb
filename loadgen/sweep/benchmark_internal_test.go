package sweep

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/workload"
	"github.com/llmload/llmload/metrics"
)

// Run settles a benchmark's defaults once, in its plan: each run's window,
// a search's range, step and bounds, a sweep's throughput run, and the
// profile and axis the document says.
func TestBenchmarkPlanDefaults(t *testing.T) {
	c := &loadgen.Client{BaseURL: "http://127.0.0.1:1/v1"} // never reached
	mix := &workload.Mix{Input: workload.Fixed(16), Output: workload.Fixed(8), Sizing: workload.SimulatorSizing(true)}
	obj := Objective{SLO: metrics.SLO{TTFT: time.Second}}

	p, err := (&Benchmark{Client: c, Workload: mix, Concurrency: []int{2, 8}, Search: AxisConcurrency, Objective: obj}).plan()
	require.NoError(t, err)
	assert.Equal(t, "slo", p.profile)
	assert.Equal(t, AxisConcurrency, p.axis)
	assert.Equal(t, []loadgen.Load{loadgen.Closed{Streams: 2}, loadgen.Closed{Streams: 8}}, p.loads)
	require.NotNil(t, p.search)
	s := *p.search
	assert.Equal(t, Search{Objective: obj, Axis: AxisConcurrency, High: DefaultThroughputStreams, ThroughputStreams: DefaultThroughputStreams,
		Step: 26, MaxRuns: DefaultMaxRuns}, Search{Objective: s.Objective, Axis: s.Axis, Low: s.Low, High: s.High,
		ThroughputStreams: s.ThroughputStreams, Step: s.Step, MaxRuns: s.MaxRuns}, "High ThroughputStreams, Step ⌈511/20⌉")
	g, err := p.target(loadgen.Closed{Streams: 2})
	require.NoError(t, err)
	assert.Equal(t, DefaultDuration, g.Duration, "neither Duration nor Requests: the default window")
	assert.Zero(t, g.Warmup)
	assert.Nil(t, g.Recorder, "nothing more to record")
	assert.Equal(t, loadgen.Closed{Streams: 2}, g.Load)
	assert.NotNil(t, g.Source)
	assert.Same(t, c, g.Client)

	p, err = (&Benchmark{Client: c, Workload: mix, Requests: 5, Series: time.Second, ByModel: true, Search: AxisRate, Low: 1, Objective: obj}).plan()
	require.NoError(t, err)
	assert.Equal(t, AxisRate, p.axis)
	assert.Zero(t, p.search.High, "a throughput run measures it")
	assert.Zero(t, p.search.Step, "a twentieth of the range measured")
	assert.Equal(t, DefaultThroughputStreams, p.search.ThroughputStreams)
	g, err = p.target(loadgen.Closed{Streams: 2})
	require.NoError(t, err)
	assert.Zero(t, g.Duration, "a run of Requests has no window")
	assert.Equal(t, 5, g.Requests)
	require.NotNil(t, g.Recorder)
	assert.Equal(t, time.Second, g.Recorder.Every)
	assert.True(t, g.Recorder.ByModel)

	for _, tc := range []struct {
		b       Benchmark
		profile string
		axis    Axis
	}{
		{Benchmark{Load: loadgen.Closed{Streams: 3}}, "concurrency", AxisConcurrency},
		{Benchmark{Load: loadgen.Open{Rate: 2}}, "poisson", AxisRate},
		{Benchmark{Load: loadgen.Schedule{}}, "trace", 0},
		{Benchmark{Rates: []float64{1, 2}, Open: loadgen.Open{Arrival: loadgen.Constant}}, "constant", AxisRate},
		{Benchmark{Sweep: 3}, "sweep", AxisRate},
	} {
		b := tc.b
		b.Client, b.Workload = c, mix
		p, err := b.plan()
		require.NoError(t, err, "%+v", tc.b)
		assert.Equal(t, tc.profile, p.profile)
		assert.Equal(t, tc.axis, p.axis)
		if b.Sweep > 0 {
			assert.Equal(t, DefaultThroughputStreams, p.sweep.ThroughputStreams)
			assert.Equal(t, 3, p.sweep.Rates)
		}
	}
}
