package loadgen_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
)

// every returns a schedule of n arrivals, gap apart.
func every(n int, gap time.Duration) func(int) (time.Duration, bool) {
	return func(seq int) (time.Duration, bool) {
		return time.Duration(seq) * gap, seq < n
	}
}

// A schedule's arrivals are sent when due, and the run ends with it.
func TestGeneratorArrivals(t *testing.T) {
	_, c := simulated(t, time.Millisecond, 16)
	var mu sync.Mutex
	var seqs []int
	g := &loadgen.Generator{Client: c, Load: loadgen.Schedule{Due: every(10, 30*time.Millisecond)}, Source: func(_, seq int) *loadgen.Request {
		mu.Lock()
		seqs = append(seqs, seq)
		mu.Unlock()
		return completion(3)
	}}
	start := time.Now()
	run, err := g.Run(t.Context())
	require.NoError(t, err)
	assert.Equal(t, loadgen.StopRequests, run.Stopped)
	assert.Equal(t, 10, run.Launched)
	assert.Equal(t, 10, run.Summary.Completed)
	assert.ElementsMatch(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, seqs)
	assert.GreaterOrEqual(t, time.Since(start), 270*time.Millisecond, "the last arrival is due at 270 ms")
	assert.EqualValues(t, 10, run.Lateness.Count)
	assert.Zero(t, run.Queued)
}

// Arrivals the client cannot send on time are counted late, and the next
// ones stay due when the schedule says: nothing is moved.
func TestGeneratorArrivalsLateNotShifted(t *testing.T) {
	_, slow := simulated(t, 10*time.Millisecond, 1)
	g := &loadgen.Generator{Client: slow, Source: loadgen.Repeat(completion(5)), Load: loadgen.Schedule{Due: every(8, 10*time.Millisecond), MaxInFlight: 1}}
	run, err := g.Run(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 8, run.Summary.Completed)
	assert.Equal(t, 7, run.Queued, "every arrival but the first found the one slot taken")
	assert.GreaterOrEqual(t, run.Late, 6)
	// Each request takes about 50 ms: arrival k starts near k × 50 ms, and
	// was due at k × 10 ms.
	assert.Greater(t, run.Lateness.Max, 200*time.Millisecond, "the last arrival is as late as the ones before made it")
}

// A closed loop's Pause comes before each request.
func TestGeneratorPause(t *testing.T) {
	_, c := simulated(t, time.Millisecond, 1)
	var mu sync.Mutex
	var asked [][2]int
	g := &loadgen.Generator{Client: c, Source: loadgen.Repeat(completion(2)), Requests: 3, Load: loadgen.Closed{Pause: func(w, seq int) time.Duration {
		mu.Lock()
		asked = append(asked, [2]int{w, seq})
		mu.Unlock()
		return 100 * time.Millisecond
	}}}
	start := time.Now()
	run, err := g.Run(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 3, run.Summary.Completed)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	assert.Equal(t, [][2]int{{0, 0}, {0, 1}, {0, 2}}, asked)
}

// Each kind of load says what it is, in the words a report uses.
func TestLoadString(t *testing.T) {
	for _, tc := range []struct {
		load loadgen.Load
		want string
	}{
		{loadgen.Closed{}, "concurrency 1"},
		{loadgen.Closed{Streams: 8, Ramp: 2 * time.Second}, "concurrency 8, ramp 2s"},
		{loadgen.Closed{Streams: 2, Pause: func(int, int) time.Duration { return 0 }}, "concurrency 2, with think time"},
		{loadgen.Open{Rate: 3.25, Arrival: loadgen.Constant}, "constant 3.25 req/s"},
		{loadgen.Open{Rate: 0.05}, "poisson 0.05 req/s"},
		{loadgen.Open{Rate: 12.3456, Arrival: loadgen.Gamma, Burstiness: 0.5, MaxInFlight: 64}, "gamma 0.5, 12.35 req/s, at most 64 in flight"},
		{loadgen.Schedule{Due: every(1, 0)}, "scheduled arrivals"},
	} {
		assert.Equal(t, tc.want, tc.load.String())
		assert.NoError(t, tc.load.Validate(), tc.want)
	}
	var a loadgen.Arrival
	require.NoError(t, a.UnmarshalText([]byte("rate")))
	assert.Equal(t, loadgen.Constant, a)
	require.NoError(t, a.UnmarshalText([]byte("gamma")))
	assert.Equal(t, loadgen.Gamma, a)
	assert.Error(t, a.UnmarshalText([]byte("concurrency")))
}

// Constant arrivals are evenly spaced from the start of the run; a zero
// seed draws a fresh one, which the Run reports, and giving it again
// repeats the arrivals.
func TestOpenLoopArrivals(t *testing.T) {
	_, c := simulated(t, time.Millisecond, 16)
	var mu sync.Mutex
	var starts []time.Time
	source := func(_, seq int) *loadgen.Request {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return completion(2)
	}
	g := &loadgen.Generator{Client: c, Source: source, Requests: 5, Load: loadgen.Open{Rate: 20, Arrival: loadgen.Constant}}
	begin := time.Now()
	run, err := g.Run(t.Context())
	require.NoError(t, err)
	assert.Zero(t, run.Seed, "constant arrivals draw no seed")
	require.Len(t, starts, 5)
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	assert.GreaterOrEqual(t, starts[4].Sub(begin), 195*time.Millisecond, "the fifth arrival is due at 200 ms")

	// Poisson arrivals: when each request started, from the run's start.
	arrivals := func(seed uint64) (uint64, []time.Duration) {
		var mu sync.Mutex
		var at []time.Duration
		var begin time.Time
		g := &loadgen.Generator{Client: c, Requests: 5, Load: loadgen.Open{Rate: 20, Seed: seed}}
		g.Source = func(int, int) *loadgen.Request {
			mu.Lock()
			at = append(at, time.Since(begin))
			mu.Unlock()
			return completion(1)
		}
		begin = time.Now()
		run, err := g.Run(t.Context())
		require.NoError(t, err)
		slices.Sort(at)
		return run.Seed, at
	}
	seedA, _ := arrivals(0)
	seedB, _ := arrivals(0)
	assert.NotZero(t, seedA, "a zero seed is replaced by a fresh one, reported")
	assert.NotEqual(t, seedA, seedB, "each zero seed is a fresh one")
	// Given again, the seed gives the arrivals its gaps say.
	seed, at := arrivals(seedA)
	assert.Equal(t, seedA, seed)
	gap := loadgen.NewArrivalsForTest(20, 1, seedA)
	var due time.Duration
	require.Len(t, at, 5)
	for i := range at {
		due += gap()
		assert.GreaterOrEqual(t, at[i], due-time.Millisecond, "arrival %d is not early", i)
		assert.Less(t, at[i], due+60*time.Millisecond, "arrival %d is on its seed's schedule", i)
	}
}

func TestGeneratorScheduleRefused(t *testing.T) {
	_, c := simulated(t, time.Millisecond, 1)
	pause := func(int, int) time.Duration { return 0 }
	for name, tc := range map[string]struct {
		g     *loadgen.Generator
		field string
	}{
		"a closed loop without an end": {&loadgen.Generator{Load: loadgen.Closed{Pause: pause}}, "Generator.Duration"},
		"an open loop without an end":  {&loadgen.Generator{Load: loadgen.Open{Rate: 5}}, "Generator.Duration"},
	} {
		t.Run(name, func(t *testing.T) {
			tc.g.Client, tc.g.Source = c, loadgen.Repeat(completion(1))
			run, err := tc.g.Run(t.Context())
			var ce *loadgen.ConfigError
			require.True(t, errors.As(err, &ce), "%v", err)
			assert.Equal(t, tc.field, ce.Field)
			assert.Zero(t, run.Launched)
		})
	}
}
