package loadgen_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/simtokens"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/metrics"
)

// After the system clock was stepped (a virtual machine resumed 78 s after
// the process began, the time synchronised), every time of a request's
// timeline is on the wall clock as it reads now: the time it was sent,
// counted from a stamp the transport took, is not a minute before it
// started.
func TestTimesAfterAClockStep(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}
	r := &loadgen.Request{API: loadgen.Completions, Model: "bench", Prompt: simtokens.Prompt(16, t.Name()), MaxTokens: 4}
	for _, step := range []time.Duration{78 * time.Second, -78 * time.Second} {
		undo, ok := loadgen.StepClockForTest(step)
		require.True(t, ok, "time.Time is laid out differently: cannot step its wall clock")
		tl := &metrics.Timeline{}
		err := c.Measure(t.Context(), r, tl, nil)
		undo()
		require.NoError(t, err)
		for name, at := range map[string]time.Time{"sent": tl.Sent, "headers": tl.Headers, "first": tl.First, "end": tl.End} {
			wall := time.Duration(at.UnixNano() - tl.Start.UnixNano())
			assert.InDelta(t, at.Sub(tl.Start), wall, float64(time.Millisecond),
				"step %v: %s %v after the start by the wall clock, %v by the monotonic", step, name, wall, at.Sub(tl.Start))
		}
	}
}
