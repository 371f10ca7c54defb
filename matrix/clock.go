package matrix

import (
	"math"
	"slices"
	"time"

	"github.com/llmload/llmload/internal/figure"

	"github.com/llmload/llmload/metrics"
)

// Results hold every figure in wall time: a run against llmload's
// simulator at Speed × runs Speed times faster than the server it
// simulates, and its file says so once, in Server.Speed. The reports speak
// in the simulated server's own time; [Results.InServerTime] is where they convert,
// the only place a speed is applied.

// InServerTime returns the results as the reports show them: for a
// simulated run at a speed other than 1, a copy with every duration
// multiplied by the speed and every rate divided by it (the client's own
// timer lag too); otherwise r itself. The copy's recordings stay in wall
// time, and are dropped from it so nothing reads them in the wrong clock.
func (r *Results) InServerTime() *Results {
	s := r.Server.Speed
	if !(s > 0) || s == 1 {
		return r
	}
	to := toServer(s)
	c := *r
	c.Spec = r.Spec.converted(to)
	c.Prefill = make([]Prefill, len(r.Prefill))
	for i, p := range r.Prefill {
		c.Prefill[i] = p.converted(to)
	}
	c.Cells = make([]Cell, len(r.Cells))
	for i, cell := range r.Cells {
		c.Cells[i] = cell
		if m := cell.Measurement; m != nil {
			sm := m.converted(to)
			sm.Client.Lag = to.distribution(m.Client.Lag)
			sm.Recording = nil
			c.Cells[i].Measurement = sm
		}
	}
	return &c
}

// AtSpeed returns the spec to give a [Runner] that measures llmload's
// simulator at speed × what s says in the simulated server's own time:
// every duration of s (with its defaults) divided by speed. A speed of 0
// or 1 returns s with its defaults.
func (s Spec) AtSpeed(speed float64) Spec {
	s = s.WithDefaults()
	if !(speed > 0) || speed == 1 {
		return s
	}
	return s.converted(toWall(speed))
}

// toWallTime converts results of schema v1, whose figures (but not their
// recordings or the client's health) were in the simulated server's time,
// into wall time.
func (r *Results) toWallTime() {
	s := r.Server.Speed
	if !(s > 0) || s == 1 {
		return
	}
	to := toWall(s)
	r.Spec = r.Spec.converted(to)
	for i := range r.Prefill {
		r.Prefill[i] = r.Prefill[i].converted(to)
	}
	for i := range r.Cells {
		if m := r.Cells[i].Measurement; m != nil {
			r.Cells[i].Measurement = m.converted(to) // the client's health was in wall time
		}
	}
}

// A clockConversion carries figures from one clock to the other: from wall
// time to the simulated server's time, where times grow by the speed and
// rates shrink by it, or back. It multiplies and divides by the speed
// itself, never by its inverse (1/3 or 1/20 is not exact in binary), and
// rounds what it gives in the server's time to 12 significant digits: a
// figure read from a file in the server's time, carried into wall time and
// back for a report, comes back as it was written, not as 2811.5999999999995.
// Twelve digits are far more than any figure measures.
type clockConversion struct {
	speed    float64
	toServer bool
}

// toServer converts wall time into the time of a server simulated at speed ×.
func toServer(speed float64) clockConversion { return clockConversion{speed, true} }

// toWall converts the time of a server simulated at speed × into wall time.
func toWall(speed float64) clockConversion { return clockConversion{speed, false} }

// time converts a time (of any unit) between the clocks.
func (c clockConversion) time(x float64) float64 {
	if c.toServer {
		return figure.Round(x * c.speed)
	}
	return x / c.speed
}

// rate converts a rate (anything per second) between the clocks.
func (c clockConversion) rate(x float64) float64 {
	if c.toServer {
		return figure.Round(x / c.speed)
	}
	return x * c.speed
}

// duration converts a duration between the clocks, to the nanosecond.
func (c clockConversion) duration(d time.Duration) time.Duration {
	return time.Duration(math.Round(c.time(float64(d))))
}

// distribution converts each of a distribution's durations.
func (c clockConversion) distribution(d metrics.Distribution) metrics.Distribution {
	for _, v := range []*time.Duration{&d.Min, &d.Mean, &d.P50, &d.P90, &d.P99, &d.Max} {
		*v = c.duration(*v)
	}
	return d
}

// converted returns the spec with its durations in the other clock.
func (s Spec) converted(to clockConversion) Spec {
	s.Duration = to.duration(s.Duration)
	if s.Series > 0 {
		s.Series = to.duration(s.Series)
	}
	if s.WarmupRule != nil {
		w := *s.WarmupRule
		for _, d := range []*time.Duration{&w.Min, &w.Flow, &w.Timeout, &w.PerContextK} {
			*d = to.duration(*d)
		}
		s.WarmupRule = &w
	}
	if s.SLO != nil {
		slo := *s.SLO
		for _, d := range []*time.Duration{&slo.TTFT, &slo.TPOT, &slo.Latency} {
			*d = to.duration(*d)
		}
		s.SLO = &slo
	}
	return s
}

// converted returns the row with its time and rate in the other clock.
func (p Prefill) converted(to clockConversion) Prefill {
	p.TTFT = to.time(p.TTFT)
	if p.TTFTs != nil {
		p.TTFTs = slices.Clone(p.TTFTs)
		for i := range p.TTFTs {
			p.TTFTs[i] = to.time(p.TTFTs[i])
		}
	}
	p.PromptTokensPerSec = to.rate(p.PromptTokensPerSec)
	return p
}

// converted returns a copy of the measurement with its times and rates in
// the other clock; the client's own timer lag is left as it was.
func (m *Measurement) converted(to clockConversion) *Measurement {
	c := *m
	for _, r := range []*float64{&c.OutputTokensPerSec, &c.PerRequestTokensPerSec, &c.Goodput} {
		*r = to.rate(*r)
	}
	for _, q := range []*Quantiles{&c.TTFT, &c.TBT, &c.ITL, &c.TTFO, &c.ServerQueue, &c.ServerPrefill, &c.Rest} {
		q.P50, q.P90, q.P99 = to.time(q.P50), to.time(q.P90), to.time(q.P99)
	}
	c.MeasuredS = to.time(c.MeasuredS)
	c.WarmupS = to.time(c.WarmupS)
	if m.Streams != nil {
		st := *m.Streams
		st.MeanWaitMs = to.time(st.MeanWaitMs)
		st.DecodeMs = to.time(st.DecodeMs)
		c.Streams = &st
	}
	c.Series = to.series(m.Series)
	if m.Energy != nil {
		// Energy is an amount, as tokens are; power is its rate, and the
		// cost of a token grows with the time it took.
		e := *m.Energy
		e.Seconds = to.time(e.Seconds)
		e.MeanWatts = to.rate(e.MeanWatts)
		e.DollarsPerMillionTokens = to.time(e.DollarsPerMillionTokens)
		c.Energy = &e
	}
	return &c
}

// series returns a copy of a time series in the other clock: its interval
// and latencies converted as times, its throughput as a rate; its start
// stays the wall-clock time it was, its end and window as far from it as
// the clock makes them.
func (c clockConversion) series(s *metrics.Series) *metrics.Series {
	if s == nil {
		return nil
	}
	out := *s
	out.Every = c.duration(s.Every)
	at := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return s.Start.Add(c.duration(t.Sub(s.Start)))
	}
	out.End, out.Window.Start, out.Window.End = at(s.End), at(s.Window.Start), at(s.Window.End)
	conv := func(col []float64, f func(float64) float64) []float64 {
		res := make([]float64, len(col))
		for i, v := range col {
			res[i] = f(v)
		}
		return res
	}
	out.TokensPerSec = conv(s.TokensPerSec, c.rate)
	out.TTFTP50, out.TTFTP90, out.TTFTP99 = conv(s.TTFTP50, c.time), conv(s.TTFTP90, c.time), conv(s.TTFTP99, c.time)
	out.ITLP50, out.ITLP90, out.ITLP99 = conv(s.ITLP50, c.time), conv(s.ITLP90, c.time), conv(s.ITLP99, c.time)
	return &out
}
