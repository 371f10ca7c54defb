package workload_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/loadgen/workload"
)

func TestParseLength(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want workload.Length
	}{
		{"128", workload.Fixed(128)},
		{" 0 ", workload.Fixed(0)},
		{"uniform:64,256", workload.Uniform(64, 256)},
		{"UNIFORM: 1 , 1", workload.Uniform(1, 1)},
		{"normal:512,128", workload.Normal(512, 128, 0, 0)},
		{"normal:512,128,64,1024", workload.Normal(512, 128, 64, 1024)},
		{"lognormal:512,256", workload.LogNormal(512, 256, 0, 0)},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := workload.ParseLength(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			again, err := workload.ParseLength(got.String())
			require.NoError(t, err, "String must read back")
			assert.Equal(t, got, again)
		})
	}
	for _, in := range []string{"", "-1", "1.5", "17000000", "uniform:10", "uniform:0,5", "uniform:9,3",
		"normal:0,1", "normal:5,-1", "normal:NaN,1", "lognormal:5,1,9,3", "poisson:3", "normal:5,x", "uniform:1.5,2"} {
		t.Run("bad "+in, func(t *testing.T) {
			_, err := workload.ParseLength(in)
			require.Error(t, err)
			assert.True(t, errors.Is(err, workload.ErrLength))
		})
	}
}

// Each distribution draws within its bounds, with the mean it names.
func TestLengthDraws(t *testing.T) {
	longtest.Skip(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		l        workload.Length
		lo, hi   int
		mean, sd float64
	}{
		{workload.Fixed(7), 7, 7, 7, 0},
		{workload.Uniform(10, 20), 10, 20, 15, math.Sqrt(11*11-1) / math.Sqrt(12)},
		{workload.Normal(500, 50, 0, 0), 1, workload.MaxLength, 500, 50},
		{workload.Normal(500, 400, 100, 600), 100, 600, -1, -1},
		{workload.LogNormal(400, 300, 0, 0), 1, workload.MaxLength, 400, 300},
	} {
		t.Run(tc.l.String(), func(t *testing.T) {
			const n = 40000
			var sum, sq float64
			for range n {
				v := tc.l.Draw(rng)
				require.GreaterOrEqual(t, v, tc.lo)
				require.LessOrEqual(t, v, tc.hi)
				sum += float64(v)
				sq += float64(v) * float64(v)
			}
			mean := sum / n
			sd := math.Sqrt(sq/n - mean*mean)
			if tc.mean >= 0 {
				assert.InDelta(t, tc.mean, mean, 0.02*tc.mean+0.01, "mean")
				assert.InDelta(t, tc.sd, sd, 0.05*tc.sd+0.6, "standard deviation")
			}
		})
	}
}
