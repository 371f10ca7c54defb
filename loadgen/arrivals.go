package loadgen

import (
	"math"
	"math/rand/v2"
	"time"
)

// arrivals draws the gaps between open-loop arrivals: gamma-distributed with
// mean 1/rate and shape k (k = 1 is exponential: a Poisson process).
type arrivals struct {
	rng   *rand.Rand
	mean  float64 // seconds
	shape float64
}

func newArrivals(rate, shape float64, seed uint64) *arrivals {
	if shape <= 0 {
		shape = 1
	}
	return &arrivals{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), mean: 1 / rate, shape: shape}
}

// next returns the gap to the next arrival.
func (a *arrivals) next() time.Duration {
	var x float64
	if a.shape == 1 {
		x = a.rng.ExpFloat64()
	} else {
		x = gamma(a.rng, a.shape) / a.shape // mean 1
	}
	return time.Duration(x * a.mean * float64(time.Second))
}

// gamma draws from Gamma(k, 1) by Marsaglia and Tsang's method, boosted for
// k < 1.
func gamma(rng *rand.Rand, k float64) float64 {
	if k < 1 {
		return gamma(rng, k+1) * math.Pow(rng.Float64(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
