package matrix_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/report"
)

// TestInterruptedWarmupIsResumed: a run cancelled during a cell's warm-up
// leaves that cell undecided, not "Over capacity" for want of tokens on a
// server with room for 33.5 M, and Resume measures it.
func TestInterruptedWarmupIsResumed(t *testing.T) {
	p := loadgentest.FastProfile()
	p.Speed = 10
	srv := loadgentest.NewServer(p)
	defer srv.Close()
	spec := matrix.Spec{
		URL: srv.URL + "/v1", Model: "bench", API: loadgen.Completions,
		Contexts: []int{0}, Concurrency: []int{2}, Prefill: []int{},
		Duration: time.Second, MaxTokens: 64,
		// A warm-up far longer than the test waits before cancelling.
		WarmupRule: &matrix.WarmupRule{Min: time.Minute, Flow: 100 * time.Millisecond, Timeout: 2 * time.Minute},
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var saved bytes.Buffer
	var log bytes.Buffer
	r := &matrix.Runner{
		Spec: spec, Server: capacity.Server{Simulated: true, Speed: p.Speed},
		Client: &loadgen.Client{HTTPClient: srv.Client()}, Log: &log,
		OnCell: func(_, _ int, g *loadgen.Generator) {
			go func() {
				// Cancel once tokens flow in the warm-up.
				for g.Progress().Phase != loadgen.PhaseWarmup || g.Progress().Tokens == 0 {
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(200 * time.Millisecond)
				cancel()
			}()
		},
		Save: func(res *matrix.Results) error {
			saved.Reset()
			return report.Write(&saved, report.JSON, res)
		},
	}
	res, err := r.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	assert.False(t, res.Complete)
	c := res.Cell(0, 2)
	require.NotNil(t, c)
	assert.NotEqual(t, matrix.OverCapacity, c.Status, "interrupted in its warm-up: %s: %s", c.Status, c.Reason)
	assert.Equal(t, matrix.StatusUnknown, c.Status, "undecided: %s", c.Reason)

	// Resume from the file the run saved.
	back, err := matrix.ReadResults(&saved)
	require.NoError(t, err)
	require.Equal(t, matrix.StatusUnknown, back.Cell(0, 2).Status, "the saved cell is undecided: %s", back.Cell(0, 2).Reason)
	spec.WarmupRule = &matrix.WarmupRule{Min: 200 * time.Millisecond, Flow: 100 * time.Millisecond, Timeout: 10 * time.Second}
	again := &matrix.Runner{Spec: spec, Server: capacity.Server{Simulated: true, Speed: p.Speed},
		Client: &loadgen.Client{HTTPClient: srv.Client()}, Log: &log, Resume: back}
	res, err = again.Run(t.Context())
	require.NoError(t, err, log.String())
	assert.True(t, res.Complete)
	c = res.Cell(0, 2)
	require.NotNil(t, c)
	require.NotNil(t, c.Measurement, "%s: %s", c.Status, c.Reason)
	assert.False(t, c.Measurement.Partial)
	assert.Equal(t, matrix.Valid, c.Status, c.Reason)
	assert.Positive(t, c.Measurement.OutputTokens)
	assert.Equal(t, "net/http", c.Measurement.ReadMode, "the cell says how its bodies were read")
}
