package matrix

import (
	"slices"
	"time"

	"github.com/llmload/llmload/metrics"
)

// Results hold every figure in wall time: a run against llmload's
// simulator at Speed × runs Speed times faster than the server it
// simulates, and its file says so once, in Server.Speed. The reports speak
// in the simulated server's own time; inServerTime is where they convert,
// the only place a speed is applied.

// inServerTime returns the results as the reports show them: for a
// simulated run at a speed other than 1, a copy with every duration
// multiplied by the speed and every rate divided by it (the client's own
// timer lag too); otherwise r itself. The copy's recordings stay in wall
// time, and are dropped from it so nothing reads them in the wrong clock.
func (r *Results) inServerTime() *Results {
	s := r.Server.Speed
	if !(s > 0) || s == 1 {
		return r
	}
	c := *r
	c.Spec = r.Spec.scaled(s)
	c.Prefill = make([]Prefill, len(r.Prefill))
	for i, p := range r.Prefill {
		c.Prefill[i] = p.scaled(s)
	}
	c.Cells = make([]Cell, len(r.Cells))
	for i, cell := range r.Cells {
		c.Cells[i] = cell
		if m := cell.Measurement; m != nil {
			sm := m.scaled(s)
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
	return s.scaled(1 / speed)
}

// scaled returns the spec with its durations multiplied by f.
func (s Spec) scaled(f float64) Spec {
	s.Duration = Duration(scaleDuration(time.Duration(s.Duration), f))
	if s.Warmup != nil {
		w := *s.Warmup
		for _, d := range []*Duration{&w.Min, &w.Flow, &w.Timeout, &w.PerContextK} {
			*d = Duration(scaleDuration(time.Duration(*d), f))
		}
		s.Warmup = &w
	}
	if s.SLO != nil {
		slo := *s.SLO
		for _, d := range []*time.Duration{&slo.TTFT, &slo.TPOT, &slo.Latency} {
			*d = scaleDuration(*d, f)
		}
		s.SLO = &slo
	}
	return s
}

// scaled returns the row with its time multiplied by f and its rate
// divided by f.
func (p Prefill) scaled(f float64) Prefill {
	p.TTFT *= f
	if p.TTFTs != nil {
		p.TTFTs = slices.Clone(p.TTFTs)
		for i := range p.TTFTs {
			p.TTFTs[i] *= f
		}
	}
	p.PromptTokensPerSec /= f
	return p
}

// scaled returns a copy of the measurement with its times multiplied by f
// and its rates divided by f.
func (m *Measurement) scaled(f float64) *Measurement {
	c := *m
	c.TotalTokensPerSec /= f
	c.PerRequestTokensPerSec /= f
	c.Goodput /= f
	for _, q := range []*Quantiles{&c.TTFT, &c.TBT, &c.ITL, &c.TTFO} {
		q.P50, q.P90, q.P99 = q.P50*f, q.P90*f, q.P99*f
	}
	c.MeasuredS *= f
	c.WarmupS *= f
	if m.Streams != nil {
		st := *m.Streams
		st.MeanWaitMs *= f
		st.DecodeMs *= f
		c.Streams = &st
	}
	c.Client.Lag = scaleDistribution(m.Client.Lag, f)
	return &c
}

func scaleDistribution(d metrics.Distribution, f float64) metrics.Distribution {
	for _, v := range []*time.Duration{&d.Min, &d.Mean, &d.P50, &d.P90, &d.P99, &d.Max} {
		*v = scaleDuration(*v, f)
	}
	return d
}

func scaleDuration(d time.Duration, f float64) time.Duration {
	return time.Duration(float64(d) * f)
}

// toWallTime converts results of schema v1, whose figures (but not their
// recordings or the client's health) were in the simulated server's time,
// into wall time.
func (r *Results) toWallTime() {
	s := r.Server.Speed
	if !(s > 0) || s == 1 {
		return
	}
	f := 1 / s
	r.Spec = r.Spec.scaled(f)
	for i := range r.Prefill {
		r.Prefill[i] = r.Prefill[i].scaled(f)
	}
	for i := range r.Cells {
		if m := r.Cells[i].Measurement; m != nil {
			w := m.scaled(f)
			w.Client.Lag = m.Client.Lag // the client's health was in wall time
			r.Cells[i].Measurement = w
		}
	}
}
