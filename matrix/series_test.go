package matrix_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/report"
	"github.com/llmload/llmload/metrics"
)

// windowBuckets returns the indexes of the series' buckets wholly inside
// its window.
func windowBuckets(s *metrics.Series) []int {
	var out []int
	for i := range len(s.TokensPerSec) {
		start := s.Start.Add(time.Duration(i) * s.Every)
		if !start.Before(s.Window.Start) && !start.Add(s.Every).After(s.Window.End) {
			out = append(out, i)
		}
	}
	return out
}

// TestCellSeries runs two cells against a simulator that runs at most 4
// requests at once and checks each cell's time series against the
// cell's own figures and the simulator's limits.
func TestCellSeries(t *testing.T) {
	const speed = 10
	srv := loadgentest.NewServer(knownProfile(speed))
	defer srv.Close()
	spec := matrix.Spec{
		URL: srv.URL + "/v1", Model: "bench", API: loadgen.Completions,
		Contexts: []int{0}, Concurrency: []int{2, 8}, Prefill: []int{},
		Duration: 8 * time.Second, MaxTokens: 2000,
		WarmupRule: &matrix.WarmupRule{Min: time.Second, Flow: time.Second, Timeout: 5 * time.Second},
	}
	var log bytes.Buffer
	r := &matrix.Runner{Spec: spec.AtSpeed(speed), Server: capacity.Server{Simulated: true, Speed: speed},
		Client: &loadgen.Client{HTTPClient: srv.Client()}, Log: &log}
	res, err := r.Run(t.Context())
	require.NoError(t, err, log.String())

	var b bytes.Buffer
	require.NoError(t, report.Write(&b, report.JSON, res))
	back, err := matrix.ReadResults(&b)
	require.NoError(t, err)

	for _, n := range []int{2, 8} {
		c := back.Cell(0, n)
		require.NotNil(t, c)
		m := c.Measurement
		require.NotNil(t, m, "0 × %d measured", n)
		s := m.Series
		require.NotNil(t, s, "0 × %d has a series", n)
		assert.Equal(t, 100*time.Millisecond, s.Every, "1 s of the simulated server's time")
		assert.False(t, s.Window.Start.Before(s.Start), "the series holds the warm-up")
		in := windowBuckets(s)
		require.GreaterOrEqual(t, len(in), 5, "0 × %d: the window's buckets", n)
		var tokens, decoding, running, waiting float64
		flowed := 0
		for _, i := range in {
			tokens += s.TokensPerSec[i]
			decoding += s.Decoding[i]
			running += s.ServerRunning[i]
			waiting += s.ServerWaiting[i]
			if s.ITLP50[i] > 0 {
				flowed++
			}
		}
		// A loaded machine (or the race detector) may stall the client for
		// a bucket of 100 ms now and then.
		assert.GreaterOrEqual(t, flowed, len(in)*4/5, "0 × %d: tokens flowed in the window's buckets", n)
		k := float64(len(in))
		assert.InEpsilon(t, m.OutputTokensPerSec, tokens/k, 0.1, "0 × %d: the window's buckets average to its rate", n)
		running4 := float64(min(n, 4))
		assert.InDelta(t, running4, decoding/k, 0.3, "0 × %d: the client sees the streams the server runs decoding", n)
		assert.InDelta(t, running4, running/k, 0.3, "0 × %d: the server's running requests", n)
		assert.InDelta(t, float64(n)-running4, waiting/k, 0.3, "0 × %d: the server's waiting requests", n)
		var p50s []float64
		for _, i := range in {
			if s.ITLP50[i] > 0 {
				p50s = append(p50s, s.ITLP50[i])
			}
		}
		slices.Sort(p50s)
		assert.InEpsilon(t, m.ITL.P50, p50s[len(p50s)/2], 0.2, "0 × %d: the gaps between tokens, bucket by bucket", n)
		started := 0
		for i := range len(s.TokensPerSec) {
			started += s.Started[i]
		}
		assert.Equal(t, m.Recording.Summary.Requests, started, "0 × %d: every request begun is in a bucket", n)
	}
}
