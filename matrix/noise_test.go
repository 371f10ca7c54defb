package matrix

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestNoisyCells: a cell whose total tok/s is known only within more than
// ±25%, or in whose window fewer than three of its streams decoded, is
// noisy; a steady cell of many requests is not, nor one the client may
// have limited (it says so already).
func TestNoisyCells(t *testing.T) {
	steady := noisyCell(0, 4, 400, 0.2, 1)
	steady.Measurement.Streams = &Streams{PeakDecoding: 4}
	assert.Empty(t, noisy(&steady, steady.Measurement))

	// Long first tokens at each end of a short window: the total may be
	// off by most of itself.
	edges := noisyCell(0, 4, 400, 0.2, 1)
	edges.Measurement.MeasuredS = 3
	edges.Measurement.TTFT.P99 = 2000
	assert.Contains(t, noisy(&edges, edges.Measurement), "its total tok/s is known only from")

	few := noisyCell(0, 8, 400, 0.2, 1)
	few.Measurement.Streams = &Streams{PeakDecoding: 2}
	assert.Equal(t, "only 2 of its 8 streams decoded in the window", noisy(&few, few.Measurement))
	one := noisyCell(0, 1, 400, 0.2, 1)
	one.Measurement.Streams = &Streams{PeakDecoding: 1}
	assert.Empty(t, noisy(&one, one.Measurement), "a cell of one stream needs one")

	limited := few
	m := *few.Measurement
	m.ClientLimited = true
	limited.Measurement = &m
	assert.Empty(t, noisy(&limited, limited.Measurement))
}

// noisyCell is a Valid cell of n requests whose quantiles spread by
// spread, its figures f times a base run's (as report's tests have it).
func noisyCell(ctx, conc, n int, spread, f float64) Cell {
	m := &Measurement{OutputTokensPerSec: 400 * f, PerRequestTokensPerSec: 50 * f, Completed: n - conc,
		TTFT:         Quantiles{P50: 1000 / f, P90: 1000 / f * (1 + spread), P99: 1000 / f * (1 + 2*spread)},
		TBT:          Quantiles{P50: 20 / f, P90: 20 / f * (1 + spread), P99: 20 / f * (1 + 2*spread)},
		OutputTokens: 12_000, MeasuredS: 30}
	return Cell{ContextTokens: ctx, Concurrency: conc, Status: Valid, Requests: n, Measurement: m}
}
