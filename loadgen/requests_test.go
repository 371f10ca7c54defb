package loadgen_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
)

// TestRequestsMeasuredAfterTheWarmup: a run of Requests N with a warm-up
// measures N requests, the warm-up's apart, in a closed and an open loop.
// (The warm-up's requests were counted among the N: a warm-up as long as
// the N took left nothing to measure.)
func TestRequestsMeasuredAfterTheWarmup(t *testing.T) {
	for _, load := range []loadgen.Load{
		loadgen.Closed{Streams: 4},
		loadgen.Open{Rate: 100, Arrival: loadgen.Constant, MaxInFlight: 16},
	} {
		t.Run(load.String(), func(t *testing.T) {
			_, c := simulated(t, time.Millisecond, 16)
			g := &loadgen.Generator{Client: c, Load: load, Source: loadgen.Repeat(completion(20)),
				Warmup: 300 * time.Millisecond, Requests: 30}
			run, err := g.Run(t.Context())
			require.NoError(t, err)
			s := run.Summary
			assert.Positive(t, s.WarmupRequests, "the warm-up's requests, reported apart")
			assert.Equal(t, 30, s.Requests-s.WarmupRequests, "the window's requests (Requests counts the warm-up's too)")
			assert.Equal(t, 30, s.Completed)
			assert.Equal(t, loadgen.StopRequests, run.Stopped)
		})
	}
}
