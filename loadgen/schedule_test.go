package loadgen_test

import (
	"errors"
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
	g := &loadgen.Generator{Client: c, Arrivals: every(10, 30*time.Millisecond), Source: func(_, seq int) *loadgen.Request {
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
	g := &loadgen.Generator{Client: slow, Source: loadgen.Repeat(completion(5)), Arrivals: every(8, 10*time.Millisecond), MaxInFlight: 1}
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
	g := &loadgen.Generator{Client: c, Source: loadgen.Repeat(completion(2)), Requests: 3, Pause: func(w, seq int) time.Duration {
		mu.Lock()
		asked = append(asked, [2]int{w, seq})
		mu.Unlock()
		return 100 * time.Millisecond
	}}
	start := time.Now()
	run, err := g.Run(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 3, run.Summary.Completed)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	assert.Equal(t, [][2]int{{0, 0}, {0, 1}, {0, 2}}, asked)
}

func TestGeneratorScheduleRefused(t *testing.T) {
	_, c := simulated(t, time.Millisecond, 1)
	pause := func(int, int) time.Duration { return 0 }
	for name, tc := range map[string]struct {
		g     *loadgen.Generator
		field string
	}{
		"arrivals and rate":        {&loadgen.Generator{Rate: 5, Arrivals: every(1, 0), Duration: time.Second}, "Generator.Arrivals"},
		"arrivals and concurrency": {&loadgen.Generator{Concurrency: 2, Arrivals: every(1, 0)}, "Generator.Concurrency"},
		"arrivals and burstiness":  {&loadgen.Generator{Burstiness: 2, Arrivals: every(1, 0)}, "Generator.Burstiness"},
		"pause in an open loop":    {&loadgen.Generator{Rate: 5, Pause: pause, Duration: time.Second}, "Generator.Pause"},
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
