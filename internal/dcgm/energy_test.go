package dcgm

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// steady returns a GPU's points every step seconds from from to to, its
// counter starting at base mJ and growing at watts, its power watts.
func steady(from, to, step, base, watts float64) []point {
	var pts []point
	for s := from; s <= to+1e-9; s += step {
		pts = append(pts, point{at: at(s), energy: base + watts*(s-from)*1000, power: watts, util: 50, memoryMB: 1000})
	}
	return pts
}

func TestEnergy(t *testing.T) {
	nan := math.NaN()
	noCounter := func(pts []point) []point {
		for i := range pts {
			pts[i].energy = nan
		}
		return pts
	}
	for _, tc := range []struct {
		name       string
		gpus       map[string][]point
		joules     float64
		gpuCount   int
		integrated bool
		resets     int
	}{
		{name: "one counter, readings not on the window's edges",
			gpus:   map[string][]point{"a": steady(-0.7, 11.3, 1, 5e9, 100)},
			joules: 1000, gpuCount: 1},
		{name: "several GPUs summed",
			gpus:   map[string][]point{"a": steady(-0.5, 10.5, 1, 1e6, 100), "b": steady(-0.2, 10.8, 0.5, 7e9, 250)},
			joules: 3500, gpuCount: 2},
		{name: "the window beyond the readings: extrapolated",
			gpus:   map[string][]point{"a": steady(1, 9, 1, 0, 300)},
			joules: 3000, gpuCount: 1},
		{name: "a counter reset, counted from zero",
			gpus: func() map[string][]point {
				pts := steady(-1, 11, 1, 9e9, 200)
				for i := range pts {
					if s := pts[i].at.Sub(t0).Seconds(); s > 4.5 {
						pts[i].energy = 200 * (s - 5) * 1000 // reset at 5 s
					}
				}
				return map[string][]point{"a": pts}
			}(),
			joules: 2000, gpuCount: 1, resets: 1},
		{name: "no counter: power integrated",
			gpus:   map[string][]point{"a": noCounter(steady(-0.4, 10.6, 1, 0, 150))},
			joules: 1500, gpuCount: 1, integrated: true},
		{name: "no counter, a ramp: trapezoids",
			gpus: func() map[string][]point {
				var pts []point
				for s := 0.0; s <= 10; s++ {
					pts = append(pts, point{at: at(s), energy: nan, power: 100 + 10*s, util: nan, memoryMB: nan})
				}
				return map[string][]point{"a": pts}
			}(),
			joules: 1500, gpuCount: 1, integrated: true},
		{name: "one GPU with a counter, one without",
			gpus:   map[string][]point{"a": steady(-1, 11, 1, 0, 100), "b": noCounter(steady(-1, 11, 1, 0, 100))},
			joules: 2000, gpuCount: 2, integrated: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := energy(tc.gpus, at(0), at(10), 5000, 0)
			require.NoError(t, err)
			assert.InDelta(t, tc.joules, e.Joules, tc.joules*1e-9)
			assert.Equal(t, tc.gpuCount, e.GPUs)
			assert.Equal(t, tc.integrated, e.Integrated)
			assert.Equal(t, tc.resets, e.Resets)
			assert.InDelta(t, tc.joules/10, e.MeanWatts, 1e-6)
			assert.InDelta(t, 5000/tc.joules, e.TokensPerJoule, 1e-9)
			assert.InDelta(t, tc.joules/5000, e.JoulesPerToken, 1e-9)
			assert.Zero(t, e.DollarsPerMillionTokens)
		})
	}
}

func TestEnergyFigures(t *testing.T) {
	gpus := map[string][]point{"a": steady(-1, 11, 1, 0, 100), "b": steady(-1, 11, 1, 0, 300)}
	gpus["b"][3].util, gpus["b"][4].memoryMB = 90, 1500
	// 2 GPUs at $2 an hour for 3600 s: $4 for 2 million tokens.
	e, err := energy(gpus, at(0), at(3600), 2_000_000, 2)
	require.NoError(t, err)
	assert.InDelta(t, 2.0, e.DollarsPerMillionTokens, 1e-9)
	assert.Equal(t, 2.0, e.HourlyCost)
	assert.Equal(t, 12, e.Samples, "the readings inside the window")
	assert.InDelta(t, (50*23+90)/24.0, e.Utilization, 1e-9)
	assert.Equal(t, 2500.0, e.MemoryMiB, "the most each GPU held, summed")

	_, err = energy(map[string][]point{}, at(0), at(1), 1, 0)
	assert.ErrorIs(t, err, errNotCovered)
	only := map[string][]point{"a": {{at: at(0), energy: 5, power: math.NaN(), util: math.NaN(), memoryMB: math.NaN()}}}
	_, err = energy(only, at(0), at(1), 1, 0)
	assert.ErrorIs(t, err, errNotCovered, "one counter reading and no power give nothing")
}

func TestThin(t *testing.T) {
	pts := steady(0, 99, 1, 0, 1)
	out := thin(pts)
	assert.Len(t, out, 75)
	assert.Equal(t, pts[0].at, out[0].at)
	assert.Equal(t, pts[99].at, out[len(out)-1].at)
}
