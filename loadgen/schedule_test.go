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
	"github.com/llmload/llmload/metrics"
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
// repeats the arrivals. Each request starts at its due time, never before,
// and after it by no more than 60 ms plus the longest the machine stopped
// the process meanwhile (measured beside the run).
func TestOpenLoopArrivals(t *testing.T) {
	_, c := simulated(t, time.Millisecond, 16)
	// arrivals runs 5 arrivals of load and returns the run's seed and each
	// request's due time, from the first's, in order.
	arrivals := func(load loadgen.Open) (uint64, []time.Duration) {
		t.Helper()
		var mu sync.Mutex
		var tls []metrics.Timeline
		g := &loadgen.Generator{Client: c, Requests: 5, Load: load, Source: loadgen.Repeat(completion(1)),
			OnRequest: func(_ *loadgen.Request, tl *metrics.Timeline) {
				mu.Lock()
				tls = append(tls, *tl)
				mu.Unlock()
			}}
		stop := probeDelay()
		run, err := g.Run(t.Context())
		delay := stop()
		require.NoError(t, err)
		require.Len(t, tls, 5)
		slices.SortFunc(tls, func(a, b metrics.Timeline) int { return a.Due.Compare(b.Due) })
		var due []time.Duration
		for i, tl := range tls {
			late := tl.Start.Sub(tl.Due)
			assert.GreaterOrEqual(t, late, time.Duration(0), "arrival %d started before it was due", i)
			assert.Less(t, late, 60*time.Millisecond+delay, "arrival %d started on time: the machine stopped the process for up to %v", i, delay)
			due = append(due, tl.Due.Sub(tls[0].Due))
		}
		return run.Seed, due
	}
	seed, due := arrivals(loadgen.Open{Rate: 20, Arrival: loadgen.Constant})
	assert.Zero(t, seed, "constant arrivals draw no seed")
	for i, d := range due {
		assert.Equal(t, time.Duration(i)*50*time.Millisecond, d, "arrival %d is due 50 ms after the one before", i)
	}

	// Poisson arrivals: a fresh seed each time, and the same arrivals when
	// the seed is given again.
	seedA, _ := arrivals(loadgen.Open{Rate: 20})
	seedB, _ := arrivals(loadgen.Open{Rate: 20})
	assert.NotZero(t, seedA, "a zero seed is replaced by a fresh one, reported")
	assert.NotEqual(t, seedA, seedB, "each zero seed is a fresh one")
	seed, due = arrivals(loadgen.Open{Rate: 20, Seed: seedA})
	assert.Equal(t, seedA, seed)
	gap := loadgen.NewArrivalsForTest(20, 1, seedA)
	first := gap()
	at := first
	for i := range due {
		if i > 0 {
			at += gap()
		}
		assert.Equal(t, at-first, due[i], "arrival %d is on its seed's schedule", i)
	}
}

// probeDelay measures the machine's own scheduling delay until the
// returned function is called, which returns the longest: a goroutine of
// the test's process sleeps 1 ms again and again and notes how late it
// wakes. A request due while the process could not run is late by that
// much, whoever sends it.
func probeDelay() func() time.Duration {
	var worst time.Duration
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTimer(time.Millisecond)
		defer tick.Stop()
		for {
			start := time.Now()
			tick.Reset(time.Millisecond)
			select {
			case <-done:
				return
			case <-tick.C:
			}
			worst = max(worst, time.Since(start)-time.Millisecond)
		}
	}()
	return func() time.Duration {
		close(done)
		<-stopped
		return worst
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
