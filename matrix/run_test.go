package matrix_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/report"
)

// knownProfile is a simulator with simple, known costs: a decode step takes
// base(B) = 8 ms + 0.25 ms·B whatever the contexts, prefill 20 µs a token,
// at most 4 requests run at once, and the KV cache holds 64K tokens.
func knownProfile(speed float64) loadgentest.Profile {
	p := loadgentest.FastProfile()
	p.Speed = speed
	p.DecodeBase = []loadgentest.BatchCost{{Batch: 1, Seconds: 0.00825}, {Batch: 2, Seconds: 0.0085}}
	p.PrefillPerToken = 20e-6
	p.MaxNumSeqs = 4
	p.KVCacheTokens = 64 * 1024
	p.MaxModelLen = 32 * 1024
	p.TruthBytes = -1
	return p
}

func TestRunnerMatchesTheProfile(t *testing.T) {
	longtest.Skip(t)
	const speed = 10
	p := knownProfile(speed)
	srv := loadgentest.NewServer(p)
	defer srv.Close()

	spec := matrix.Spec{
		URL: srv.URL + "/v1", Model: "bench", API: loadgen.Completions,
		Contexts: []int{0, 4 * 1024, 16 * 1024}, Concurrency: []int{1, 4, 8}, Prefill: []int{4 * 1024},
		Duration: 10 * time.Second, MaxTokens: 2000,
		WarmupRule: &matrix.WarmupRule{Min: time.Second, Flow: time.Second, Timeout: 5 * time.Second},
	}
	var saved []*matrix.Results
	var log bytes.Buffer
	r := &matrix.Runner{Spec: spec.AtSpeed(speed), Server: capacity.Server{Simulated: true, Speed: speed}, Client: &loadgen.Client{HTTPClient: srv.Client()},
		Log: &log, Save: func(res *matrix.Results) error {
			var b bytes.Buffer
			require.NoError(t, report.Write(&b, report.JSON, res))
			back, err := matrix.ReadResults(&b)
			require.NoError(t, err)
			saved = append(saved, back)
			return nil
		}}
	res, err := r.Run(t.Context())
	require.NoError(t, err, log.String())
	require.True(t, res.Complete)
	t.Log(log.String())

	// The KV cache holds 64K tokens: 8 × (16K + 2000) does not fit, nor
	// does 4 × (16K + 2000); the plan skips them.
	for _, n := range []int{4, 8} {
		c := res.Cell(16*1024, n)
		require.NotNil(t, c)
		assert.Equal(t, matrix.OverCapacity, c.Status, "16K × %d", n)
		assert.Nil(t, c.Measurement, "never sent")
		assert.Contains(t, c.Reason, "predicted")
	}

	checked := 0
	for _, ctx := range []int{0, 4 * 1024} {
		for _, n := range []int{1, 4} {
			c := res.Cell(ctx, n)
			require.NotNil(t, c)
			require.NotNil(t, c.Measurement, "%d × %d measured", ctx, n)
			if c.Measurement.ClientLimited {
				// The client says it could not keep up (a loaded machine):
				// its timing is not the server's, so it is not held to 3%.
				t.Logf("%d × %d not checked: %s", ctx, n, c.Measurement.Client.Reason)
				continue
			}
			checked++
			assert.Equal(t, matrix.Valid, c.Status, "%d × %d: %s", ctx, n, c.Reason)
			// Recorded in wall time: the simulator runs speed × faster
			// than the profile's server.
			step := p.DecodeStepTime(n, 0, 0) // context costs nothing here
			assert.InEpsilon(t, speed*float64(n)/step.Seconds(), c.Measurement.OutputTokensPerSec, 0.03, "%d × %d total tok/s", ctx, n)
			assert.InEpsilon(t, float64(step.Microseconds())/1000/speed, c.Measurement.TBT.P50, 0.03, "%d × %d time between tokens", ctx, n)
			assert.InDelta(t, 10/speed, c.Measurement.MeasuredS, 0.05, "recorded in wall time")
			s := c.Measurement.Recording.Summary
			assert.InDelta(t, s.OutputTokensPerSec, c.Measurement.OutputTokensPerSec, 1e-9, "the cell's figures and its recording agree")
			assert.InDelta(t, float64(s.TTFT.P50.Microseconds())/1000, c.Measurement.TTFT.P50, 0.001, "the cell's figures and its recording agree")
			assert.InDelta(t, float64(n), c.Measurement.AvgActive, 0.05*float64(n))
			assert.Zero(t, c.Errors)
		}
		// 8 requests on a server that runs 4 at once.
		if checked == 0 {
			t.Skip("every cell was client-limited: this machine is too loaded to check timing")
		}
		c := res.Cell(ctx, 8)
		require.NotNil(t, c.Measurement)
		assert.Equal(t, matrix.RequestsQueued, c.Status, "%d × 8: %s", ctx, c.Reason)
		assert.NotEmpty(t, c.Reason)
	}

	require.Len(t, res.Prefill, 1)
	pf := res.Prefill[0]
	assert.Empty(t, pf.Error)
	assert.InDelta(t, 4*1024, pf.PromptTokens, 4*1024/100)
	// At least the prefill itself: the prompt was not cached. (Above it,
	// the request's trip, which the speed factor multiplies too: a few ms
	// of wall time on a busy machine are tens of the server's. The
	// simulator's own tests check prefill times within 3%.)
	want := float64(p.PrefillTime(pf.PromptTokens).Microseconds()) / 1000
	assert.GreaterOrEqual(t, pf.TTFT*speed, want, "cold prefill time, in wall time")

	// Saved after every prefill row and cell; the last save is the result.
	require.NotEmpty(t, saved)
	assert.True(t, saved[len(saved)-1].Complete)
	assert.Equal(t, len(res.Cells), len(saved[len(saved)-1].Cells))
}
