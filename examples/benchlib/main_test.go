package main

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/sweep"
)

func TestMain(m *testing.M) {
	if os.Getenv("BENCHLIB_MAIN") != "" {
		os.Args = append(os.Args[:1], "-duration", "300ms")
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

// TestBenchlib runs the program with short windows and reads its document
// back as bench's: the three levels, then a search that found the
// simulator's 8 requests at once, to within a stream.
func TestBenchlib(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "BENCHLIB_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s", stderr.String())
	res, err := sweep.ReadResults(bytes.NewReader(out))
	require.NoError(t, err, "%s", out)
	require.GreaterOrEqual(t, len(res.Runs), 4, "three levels and a search")
	for i, n := range []int{1, 4, 16} {
		assert.Equal(t, loadgen.Closed{Streams: n}, res.Runs[i].Load)
		assert.Positive(t, res.Runs[i].Summary.Completed, res.Runs[i].Label)
	}
	assert.Equal(t, "slo", res.Profile)
	assert.Equal(t, sweep.AxisConcurrency, res.Axis)
	assert.True(t, res.Server.Simulated)
	f := res.Search
	require.NotNil(t, f)
	assert.Equal(t, sweep.AxisConcurrency, f.Axis)
	assert.InDelta(t, 8, f.Concurrency, 1, f.Reason)
	assert.Equal(t, loadgen.Closed{Streams: f.Concurrency}, res.Runs[f.Below].Load)
	assert.Equal(t, loadgen.Closed{Streams: f.Concurrency + 1}, res.Runs[f.Above].Load)
	streams := map[int]bool{}
	for _, r := range res.Runs {
		n := r.Load.(loadgen.Closed).Streams
		assert.False(t, streams[n], "%d streams run twice: the search takes the levels' runs", n)
		streams[n] = true
	}
}
