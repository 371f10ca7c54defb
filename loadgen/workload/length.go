package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// maxLength bounds every length a [Length] draws and [ParseLength] accepts:
// far beyond any model's context, far below int's limit.
const maxLength = 1 << 24

// A Length is a distribution of token counts, such as the input or the
// output lengths of synthetic requests. Draw returns a count within the
// distribution's bounds from rng; it is deterministic for a given rng
// state. [Fixed], [Uniform], [Normal] and [LogNormal] make the usual
// ones and [ParseLength] reads them; any type with these methods is a
// Length too.
type Length interface {
	Draw(rng *rand.Rand) int
	// Mean is the distribution's mean after rounding and clamping, where
	// it has a closed form, else an estimate.
	Mean() float64
	// String is the distribution as [ParseLength] reads it.
	String() string
}

// Fixed returns a length that is always n.
func Fixed(n int) Length { return fixed(n) }

// Uniform returns a length drawn uniformly from [min, max], both included.
func Uniform(min, max int) Length { return uniform{min: min, max: max} }

// Normal returns a length drawn from a normal distribution of mean mu and
// standard deviation sigma, rounded, and clamped to [min, max] (min 0
// means 1; max 0 means 2²⁴). Its Mean is mu: the clamping's bias
// is not counted.
func Normal(mu, sigma float64, min, max int) Length {
	return normal{mu: mu, sigma: sigma, min: min, max: max}
}

// LogNormal returns a length whose logarithm is normal: the shape of real
// prompt and output lengths, with a long tail. mu and sigma are the mean
// and the standard deviation of the lengths themselves (not of their
// logarithms), so LogNormal(512, 256, 0, 0) has a mean of 512. The draw is
// rounded and clamped to [min, max] (min 0 means 1; max 0 means
// 2²⁴); its Mean is mu.
func LogNormal(mu, sigma float64, min, max int) Length {
	return logNormal{mu: mu, sigma: sigma, min: min, max: max}
}

type fixed int

func (f fixed) Draw(*rand.Rand) int { return int(f) }
func (f fixed) Mean() float64       { return float64(f) }
func (f fixed) String() string      { return strconv.Itoa(int(f)) }

type uniform struct{ min, max int }

func (u uniform) Draw(rng *rand.Rand) int { return u.min + rng.IntN(u.max-u.min+1) }
func (u uniform) Mean() float64           { return float64(u.min+u.max) / 2 }
func (u uniform) String() string          { return fmt.Sprintf("uniform:%d,%d", u.min, u.max) }

type normal struct {
	mu, sigma float64
	min, max  int
}

func (n normal) Draw(rng *rand.Rand) int {
	return clampLength(math.Round(n.mu+n.sigma*rng.NormFloat64()), n.min, n.max)
}
func (n normal) Mean() float64  { return n.mu }
func (n normal) String() string { return "normal:" + bounds(n.mu, n.sigma, n.min, n.max) }

type logNormal struct {
	mu, sigma float64
	min, max  int
}

func (l logNormal) Draw(rng *rand.Rand) int {
	m, s := l.params()
	return clampLength(math.Round(math.Exp(m+s*rng.NormFloat64())), l.min, l.max)
}

// params returns the mean and the standard deviation of the logarithm.
func (l logNormal) params() (float64, float64) {
	v := math.Log1p(l.sigma * l.sigma / (l.mu * l.mu))
	return math.Log(l.mu) - v/2, math.Sqrt(v)
}

func (l logNormal) Mean() float64  { return l.mu }
func (l logNormal) String() string { return "lognormal:" + bounds(l.mu, l.sigma, l.min, l.max) }

func bounds(mu, sigma float64, lo, hi int) string {
	s := strconv.FormatFloat(mu, 'g', -1, 64) + "," + strconv.FormatFloat(sigma, 'g', -1, 64)
	if lo > 0 || hi > 0 {
		s += "," + strconv.Itoa(lo)
		if hi > 0 {
			s += "," + strconv.Itoa(hi)
		}
	}
	return s
}

func clampLength(v float64, lo, hi int) int {
	lo = max(lo, 1)
	if hi <= 0 {
		hi = maxLength
	}
	switch {
	case math.IsNaN(v) || v < float64(lo):
		return lo
	case v > float64(hi):
		return hi
	}
	return int(v)
}

// errLength reports text that is not a length distribution (see
// [ParseLength]).
var errLength = errors.New("not a length distribution")

// ParseLength reads a length distribution as a command line gives it:
//
//	128                      always 128 tokens
//	uniform:64,256           uniform from 64 to 256, both included
//	normal:512,128           normal, mean 512, standard deviation 128
//	normal:512,128,64,1024   the same, clamped to [64, 1024]
//	lognormal:512,256        log-normal of mean 512 and standard deviation 256
//
// Lengths are at least 1 (a fixed length may be 0, for "leave it to the
// server") and at most 2²⁴. Anything else is an error that says
// what was wrong.
func ParseLength(s string) (Length, error) {
	bad := func(why string) (Length, error) {
		return nil, fmt.Errorf("%q is %w: %s", s, errLength, why)
	}
	kind, args, found := strings.Cut(strings.TrimSpace(s), ":")
	kind = strings.TrimSpace(kind)
	if !found {
		n, err := strconv.Atoi(kind)
		if err != nil || n < 0 || n > maxLength {
			return bad(fmt.Sprintf("write a token count from 0 to %d, or uniform:MIN,MAX, normal:MEAN,STDDEV or lognormal:MEAN,STDDEV", maxLength))
		}
		return Fixed(n), nil
	}
	var nums []float64
	for f := range strings.SplitSeq(args, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return bad(fmt.Sprintf("%q is not a number", strings.TrimSpace(f)))
		}
		nums = append(nums, v)
	}
	whole := func(v float64) (int, bool) {
		return int(v), v == math.Trunc(v) && v >= 0 && v <= maxLength
	}
	switch strings.ToLower(kind) {
	case "uniform":
		if len(nums) != 2 {
			return bad("uniform takes MIN,MAX")
		}
		lo, ok1 := whole(nums[0])
		hi, ok2 := whole(nums[1])
		if !ok1 || !ok2 || lo < 1 || hi < lo {
			return bad(fmt.Sprintf("uniform needs whole lengths 1 ≤ MIN ≤ MAX ≤ %d", maxLength))
		}
		return Uniform(lo, hi), nil
	case "normal", "lognormal":
		if len(nums) != 2 && len(nums) != 4 {
			return bad(kind + " takes MEAN,STDDEV or MEAN,STDDEV,MIN,MAX")
		}
		mu, sigma := nums[0], nums[1]
		if !(mu >= 1 && mu <= maxLength) || !(sigma >= 0 && sigma <= maxLength) {
			return bad(fmt.Sprintf("the mean must be from 1 to %d and the standard deviation from 0 to %d", maxLength, maxLength))
		}
		var lo, hi int
		if len(nums) == 4 {
			var ok1, ok2 bool
			lo, ok1 = whole(nums[2])
			hi, ok2 = whole(nums[3])
			if !ok1 || !ok2 || lo < 1 || hi < lo {
				return bad(fmt.Sprintf("the bounds need whole lengths 1 ≤ MIN ≤ MAX ≤ %d", maxLength))
			}
		}
		if strings.ToLower(kind) == "normal" {
			return Normal(mu, sigma, lo, hi), nil
		}
		return LogNormal(mu, sigma, lo, hi), nil
	}
	return bad(fmt.Sprintf("unknown distribution %q (want uniform, normal or lognormal)", kind))
}
