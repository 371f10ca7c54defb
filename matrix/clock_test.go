package matrix

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/llmload/llmload/internal/figure"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClockRoundTrip: a figure in the simulated server's time, carried into
// wall time and back, is the figure it was, for speeds whose inverse is not
// exact in binary and figures of up to seven significant digits.
func TestClockRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, speed := range []float64{20, 3, 7, 2.5, 0.3, 10} {
		wall, server := toWall(speed), toServer(speed)
		for range 20_000 {
			x, _ := strconv.ParseFloat(strconv.FormatFloat(rng.Float64()*1e5, 'g', 1+rng.IntN(7), 64), 64)
			if got := server.time(wall.time(x)); got != x {
				t.Fatalf("speed %g: time %v came back as %v", speed, x, got)
			}
			if got := server.rate(wall.rate(x)); got != x {
				t.Fatalf("speed %g: rate %v came back as %v", speed, x, got)
			}
		}
	}
	assert.Equal(t, 2811.6, toServer(20).rate(toWall(20).rate(2343*1.2)), "the comparison's figure of old")
}

// TestResultsV1FiguresComeBackExact: the figures of a version 1 file (in
// the simulated server's time, at 20×), read into wall time and shown in
// the server's time again, are the file's figures to 12 significant digits,
// with no residue of the round trip (the file's own 32.980000000000004
// shows as 32.98).
func TestResultsV1FiguresComeBackExact(t *testing.T) {
	raw, err := os.ReadFile("testdata/results-v1.json")
	require.NoError(t, err)
	res, err := ReadResults(bytes.NewReader(raw))
	require.NoError(t, err)
	var doc struct {
		Cells []map[string]json.RawMessage `json:"cells"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	shown := res.InServerTime()
	checked := 0
	for i, c := range shown.Cells {
		m := c.Measurement
		if m == nil {
			continue
		}
		var total float64
		var ttft Quantiles
		require.NoError(t, json.Unmarshal(doc.Cells[i]["total_tok_s"], &total))
		require.NoError(t, json.Unmarshal(doc.Cells[i]["ttft_ms"], &ttft))
		assert.Equal(t, figure.Round(total), m.OutputTokensPerSec, "%d × %d", c.ContextTokens, c.Concurrency)
		want := Quantiles{P50: figure.Round(ttft.P50), P90: figure.Round(ttft.P90), P99: figure.Round(ttft.P99)}
		assert.Equal(t, want, m.TTFT, "%d × %d", c.ContextTokens, c.Concurrency)
		checked++
	}
	assert.Equal(t, 4, checked)
}
