package dcgm

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/llmload/llmload/metrics"
)

// errNotCovered is the error of a window no GPU's readings cover.
var errNotCovered = errors.New("dcgm: no reading of the GPUs' energy or power covers the window")

// energy gives the window [a, b]'s figures from each GPU's points, for
// tokens output tokens at hourlyCost dollars a GPU an hour.
func energy(gpus map[string][]point, a, b time.Time, tokens int, hourlyCost float64) (*metrics.Energy, error) {
	e := &metrics.Energy{Seconds: b.Sub(a).Seconds(), OutputTokens: tokens}
	var utilSum float64
	var utilN int
	for _, k := range slices.Sorted(maps.Keys(gpus)) {
		pts := bracket(gpus[k], a, b)
		j, integrated, resets, ok := gpuEnergy(pts, a, b)
		if !ok {
			continue
		}
		if !(j >= 0) || math.IsInf(j, 0) {
			e.Notes = append(e.Notes, fmt.Sprintf("the GPU %s is left out: its readings add up to %v J over the window", k, j))
			continue
		}
		e.GPUs++
		e.Joules += j
		e.Integrated = e.Integrated || integrated
		e.Resets += resets
		inside, memory := 0, math.NaN()
		for _, p := range pts {
			if p.at.Before(a) || p.at.After(b) {
				continue
			}
			inside++
			if !math.IsNaN(p.util) {
				utilSum += p.util
				utilN++
			}
			if !math.IsNaN(p.memoryMB) && !(p.memoryMB <= memory) {
				memory = p.memoryMB
			}
		}
		e.Samples = max(e.Samples, inside)
		if !math.IsNaN(memory) {
			e.MemoryMiB += memory
		}
	}
	if e.GPUs == 0 {
		if len(e.Notes) > 0 {
			return nil, fmt.Errorf("%w: %s", errNotCovered, strings.Join(e.Notes, "; "))
		}
		return nil, errNotCovered
	}
	if utilN > 0 {
		e.Utilization = utilSum / float64(utilN)
	}
	if e.Seconds > 0 {
		e.MeanWatts = e.Joules / e.Seconds
	}
	if tokens > 0 && e.Joules > 0 {
		e.TokensPerJoule = float64(tokens) / e.Joules
		e.JoulesPerToken = e.Joules / float64(tokens)
	}
	if hourlyCost > 0 {
		e.HourlyCost = hourlyCost
		if tokens > 0 {
			e.DollarsPerMillionTokens = float64(e.GPUs) * hourlyCost * e.Seconds / 3600 / float64(tokens) * 1e6
		}
	}
	finite(e)
	return e, nil
}

// maxFigure bounds every figure of a window's energy, as the matrix's
// results files bound theirs: far beyond any measurement.
const maxFigure = 1e12

// finite sets every figure of e that is not a finite number (as a cost
// of 1e308 dollars an hour makes, overflowing), or is beyond maxFigure,
// to 0, which the reports show as none, and says so in e's notes: JSON
// has no such number, and a report with one could not be written, nor
// a results file with one read back.
func finite(e *metrics.Energy) {
	for _, f := range []struct {
		name string
		v    *float64
	}{
		{"joules", &e.Joules}, {"seconds", &e.Seconds}, {"mean watts", &e.MeanWatts},
		{"tokens per joule", &e.TokensPerJoule}, {"joules per token", &e.JoulesPerToken},
		{"utilization", &e.Utilization}, {"memory", &e.MemoryMiB},
		{"GPU hourly cost", &e.HourlyCost}, {"dollars per million tokens", &e.DollarsPerMillionTokens},
	} {
		switch v := *f.v; {
		case math.IsNaN(v) || math.IsInf(v, 0):
			e.Notes = append(e.Notes, fmt.Sprintf("the %s came out %v, not a number a report can hold: left out", f.name, v))
			*f.v = 0
		case math.Abs(v) > maxFigure:
			e.Notes = append(e.Notes, fmt.Sprintf("the %s came out %.4g, beyond any measurement: left out", f.name, v))
			*f.v = 0
		}
	}
}

// bracket returns the points from the last one at or before a to the
// first one at or after b.
func bracket(pts []point, a, b time.Time) []point {
	lo, hi := 0, len(pts)
	for i, p := range pts {
		if !p.at.After(a) {
			lo = i
		}
		if !p.at.Before(b) {
			hi = i + 1
			break
		}
	}
	if lo >= hi {
		return nil
	}
	return pts[lo:hi]
}

// gpuEnergy is the energy one GPU drew in [a, b], in joules: the
// difference of its energy counter (in mJ) where every point has it, over
// a reset what the counter counted since or the power over the interval,
// whichever is more; else its power integrated over time. The
// values between points are interpolated linearly, and beyond them
// extrapolated along the nearest two. ok is false when the points give
// neither.
func gpuEnergy(pts []point, a, b time.Time) (joules float64, integrated bool, resets int, ok bool) {
	counter := len(pts) >= 2
	for _, p := range pts {
		counter = counter && !math.IsNaN(p.energy)
	}
	if counter {
		ts := make([]time.Time, len(pts))
		total := make([]float64, len(pts))
		for i, p := range pts {
			ts[i], total[i] = p.at, p.energy
			if i == 0 {
				continue
			}
			d := p.energy - pts[i-1].energy
			if d < 0 {
				// Reset: the counter holds what the GPU drew since; the
				// power over the whole interval, where published, also
				// counts what it drew before.
				resets++
				d = p.energy
				if q := pts[i-1]; !math.IsNaN(p.power) && !math.IsNaN(q.power) {
					d = max(d, (p.power+q.power)/2*p.at.Sub(q.at).Seconds()*1000)
				}
			}
			total[i] = total[i-1] + d
		}
		return (linear(ts, total, b) - linear(ts, total, a)) / 1000, false, resets, true
	}
	var ts []time.Time
	var watts []float64
	for _, p := range pts {
		if !math.IsNaN(p.power) {
			ts, watts = append(ts, p.at), append(watts, p.power)
		}
	}
	if len(ts) == 0 {
		return 0, false, 0, false
	}
	// The trapezoids of the power between a, the points inside and b,
	// the power held beyond the first and the last.
	held := func(t time.Time) float64 {
		switch {
		case !t.After(ts[0]):
			return watts[0]
		case !t.Before(ts[len(ts)-1]):
			return watts[len(ts)-1]
		}
		return linear(ts, watts, t)
	}
	cuts := []time.Time{a}
	for _, t := range ts {
		if t.After(a) && t.Before(b) {
			cuts = append(cuts, t)
		}
	}
	cuts = append(cuts, b)
	for i := 1; i < len(cuts); i++ {
		joules += (held(cuts[i-1]) + held(cuts[i])) / 2 * cuts[i].Sub(cuts[i-1]).Seconds()
	}
	return joules, true, 0, true
}

// linear interpolates ys over ts at t, and extrapolates beyond them along
// the first or the last two; ts ascend.
func linear(ts []time.Time, ys []float64, t time.Time) float64 {
	if len(ts) == 1 {
		return ys[0]
	}
	i := 1
	for i < len(ts)-1 && ts[i].Before(t) {
		i++
	}
	span := ts[i].Sub(ts[i-1]).Seconds()
	if span <= 0 {
		return ys[i]
	}
	return ys[i-1] + (ys[i]-ys[i-1])*t.Sub(ts[i-1]).Seconds()/span
}
