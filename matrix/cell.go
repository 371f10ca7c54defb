package matrix

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// cell measures one cell: idle barrier, scout, N closed-loop streams, a
// bounded warm-up, the window, classification. It returns an error only
// when the run must stop (ctx ended); the cell then holds what was measured,
// marked Partial.
func (cr *cellRun) cell(ctx context.Context, c *Cell, index, total int) error {
	spec := cr.spec
	row, err := cr.scout(ctx, c.ContextTokens)
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if err != nil {
		// The server refused even one request of this context.
		c.Status, c.Reason = classifyScout(err)
		return nil
	}
	p := cr.prompts[c.ContextTokens]
	req := &loadgen.Request{
		API: spec.API, Model: spec.Model, Prompt: p.text,
		MaxTokens: spec.MaxTokens, IgnoreEOS: true, Usage: loadgen.UsageContinuous,
	}

	n := c.Concurrency
	w := *spec.Warmup
	var rec metrics.Recorder
	if spec.SLO != nil {
		rec.SLO = metrics.SLO{TTFT: cr.r.wall(time.Duration(spec.SLO.TTFT)), TPOT: cr.r.wall(time.Duration(spec.SLO.TPOT)), Latency: cr.r.wall(time.Duration(spec.SLO.Latency))}
	}
	var allSince atomic.Int64 // when every stream first had a token (UnixNano), 0 until then
	g := &loadgen.Generator{
		Client: cr.client, Source: loadgen.Repeat(req), Concurrency: n, Recorder: &rec,
		Warmup: cr.r.wall(time.Duration(w.Min)),
		WarmupUntil: func(pr loadgen.Progress) bool {
			if pr.WithToken < n {
				allSince.Store(0)
				return false
			}
			now := time.Now()
			allSince.CompareAndSwap(0, now.UnixNano())
			since := time.Unix(0, allSince.Load())
			if gauges, ok := cr.sampler.Latest(); ok && (gauges.Waiting > 0 || gauges.Time.Before(since)) {
				return false // requests wait, or the reading predates the streams
			}
			return now.Sub(since) >= cr.r.wall(time.Duration(w.Flow))
		},
		WarmupTimeout: cr.r.wall(time.Duration(w.Timeout) + time.Duration(w.PerContextK)*time.Duration(c.ContextTokens/K)),
		Duration:      cr.r.wall(time.Duration(spec.Duration)),
		OnWindow:      func(w metrics.Window) { cr.sampler.Mark(w.End) },
	}

	cellCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var wg sync.WaitGroup
	watch := make(chan struct{})
	wg.Go(func() { cr.watch(cellCtx, g, stop, watch, index, total, c) })
	run, runErr := g.Run(cellCtx)
	close(watch)
	wg.Wait()
	samples := cr.sampler.Summary()
	if _, ok := errors.AsType[*loadgen.ConfigError](runErr); ok {
		return runErr // nothing was sent
	}
	// The seed's meaning: TTFT and the other per-request figures are over
	// every request the cell launched, warm-up included; throughput is the
	// window's.
	run.Summary = rec.SummaryOf(metrics.ScopeAll)

	m := cr.measurement(run, samples, row.PromptTokens)
	c.Measurement = m
	c.Status, c.Reason = classify(c, run, samples, spec.ErrorThreshold)
	stuck := runErr != nil && context.Cause(cellCtx) == errStuck && ctx.Err() == nil
	if stuck {
		c.Status = OverCapacity
		c.Reason = fmt.Sprintf("starved: no token for %v while the server reported requests waiting; ended early", cr.stuckAfter())
		return nil
	}
	if ctx.Err() != nil {
		m.Partial = true
		return context.Cause(ctx)
	}
	if runErr != nil {
		c.Status, c.Reason = Failed, runErr.Error()
	}
	return nil
}

func (cr *cellRun) stuckAfter() time.Duration {
	if cr.r.StuckAfter > 0 {
		return cr.r.StuckAfter
	}
	return 30 * time.Second
}

// watch writes the progress line and ends a cell whose requests are
// starved: no token for StuckAfter while the server reports requests
// waiting.
func (cr *cellRun) watch(ctx context.Context, g *loadgen.Generator, stop context.CancelCauseFunc, done <-chan struct{}, index, total int, c *Cell) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	stuckAfter := cr.r.wall(cr.stuckAfter())
	var lastTokens int64
	lastChange := time.Now()
	var lastRate struct {
		at     time.Time
		tokens int64
		rate   float64
	}
	for {
		select {
		case <-done:
			if cr.r.Progress != nil {
				fmt.Fprintf(cr.r.Progress, "\r%-100s\r", "")
			}
			return
		case <-ctx.Done():
			return
		case now := <-t.C:
			p := g.Progress()
			if p.Tokens != lastTokens {
				lastTokens, lastChange = p.Tokens, now
			}
			if now.Sub(lastChange) > stuckAfter {
				if gauges, ok := cr.sampler.Latest(); ok && gauges.Waiting > 0 {
					stop(errStuck)
				}
			}
			if cr.r.Progress == nil {
				continue
			}
			if !lastRate.at.IsZero() {
				lastRate.rate = float64(p.Tokens-lastRate.tokens) / now.Sub(lastRate.at).Seconds() / cr.r.speed()
			}
			lastRate.at, lastRate.tokens = now, p.Tokens
			left := ""
			if p.Phase == loadgen.PhaseWindow {
				left = fmt.Sprintf("%.0fs left", max(time.Until(p.Window.End), 0).Seconds()*cr.r.speed())
			}
			fmt.Fprintf(cr.r.Progress, "\rcell %d/%d  %s × %d  %-8s %s  %.1f tok/s  %d/%d streams with tokens   ",
				index, total, FormatTokens(c.ContextTokens), c.Concurrency, p.Phase, left, lastRate.rate, p.WithToken, c.Concurrency)
		}
	}
}

// measurement turns a run into a cell's columns, in the server's own time.
func (cr *cellRun) measurement(run *loadgen.Run, samples *Samples, promptTokens int) *Measurement {
	s := run.Summary
	x := cr.r.speed()
	q := func(d metrics.Distribution) Quantiles {
		return Quantiles{P50: ms(d.P50, x), P90: ms(d.P90, x), P99: ms(d.P99, x)}
	}
	m := &Measurement{
		PromptTokens:   promptTokens,
		TotalTokS:      s.TotalTokensPerSec / x,
		PerRequestTokS: s.PerRequestTokensPerSec / x,
		TTFTms:         q(s.TTFT),
		TBTms:          q(s.TBT),
		ITLms:          q(s.ITL),
		AvgActive:      s.AvgActive,
		Completed:      s.Completed,
		OutputTokens:   s.OutputTokens,
		MeasuredS:      s.MeasuredFor.Seconds() * x,
		Requests:       s.Requests,
		Errors:         s.Failed,
		Goodput:        s.Goodput / x,
		WarmupS:        run.Warmup.Seconds() * x,
		WarmupTimedOut: run.WarmupTimedOut,
		Server:         samples,
		Client:         run.Health,
		ClientLimited:  run.Health.Limited,
	}
	if samples != nil {
		m.AvgActive = samples.AvgRunning
	}
	if len(s.Errors) > 0 {
		m.ErrorKinds = make(map[string]int, len(s.Errors))
		for k, n := range s.Errors {
			m.ErrorKinds[k.String()] = n
		}
	}
	return m
}

func ms(d time.Duration, speed float64) float64 { return d.Seconds() * 1000 * speed }

// classify decides a measured cell's status, as the seed's tool does, with
// one broken stream never voiding a cell.
func classify(c *Cell, run *loadgen.Run, samples *Samples, threshold float64) (Status, string) {
	m, s := c.Measurement, run.Summary
	n := float64(c.Concurrency)
	tooLong := s.Errors[metrics.KindTooLong]
	switch {
	case tooLong > 0 && s.OutputTokens == 0:
		return OverCapacity, fmt.Sprintf("rejected by the server as too long (%d requests)", tooLong)
	case s.OutputTokens == 0 && s.Completed > 0:
		// Requests that finish without a token are the server's failure,
		// not a lack of capacity.
		return Failed, fmt.Sprintf("the server completed %s with no tokens", plural(s.Completed, "request", "requests"))
	case s.OutputTokens == 0:
		return OverCapacity, "starved: no output token in the window"
	}
	if attempted := s.Requests - s.Canceled; attempted > 0 && float64(s.Failed) > threshold*float64(attempted) {
		return Failed, fmt.Sprintf("%d of %d requests failed (%s)", s.Failed, attempted, kinds(m.ErrorKinds))
	}
	var why []string
	if run.WarmupTimedOut {
		why = append(why, "warm-up timed out before every stream ran")
	}
	if samples != nil {
		if samples.MaxWaiting > 0 {
			why = append(why, fmt.Sprintf("the server had up to %.0f requests waiting", samples.MaxWaiting))
		}
		if n > 1 && (samples.AvgRunning < 0.95*n || samples.PeakRunning < n) {
			why = append(why, fmt.Sprintf("the server ran %.2f requests on average (peak %.0f) of %d", samples.AvgRunning, samples.PeakRunning, c.Concurrency))
		}
	} else if n > 1 && s.AvgActive < 0.95*n {
		why = append(why, fmt.Sprintf("%.2f streams were active on average of %d", s.AvgActive, c.Concurrency))
	}
	// Failures the cell absorbed and a client that may have limited it are
	// in the measurement (Errors, ErrorKinds, ClientLimited); the reason says
	// only why the status is not Valid.
	if len(why) > 0 {
		return RequestsQueued, strings.Join(why, "; ")
	}
	return Valid, ""
}

func kinds(k map[string]int) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(k)) {
		parts = append(parts, fmt.Sprintf("%s %d", name, k[name]))
	}
	return strings.Join(parts, ", ")
}

// classifyScout decides a cell whose scout failed.
func classifyScout(err error) (Status, string) {
	switch {
	case errors.Is(err, errNoTokens):
		return Failed, "the server completed 1 request with no tokens (the cell's first)"
	case loadgen.KindOf(err) == metrics.KindTooLong:
		return OverCapacity, "rejected by the server as too long: " + err.Error()
	}
	return Failed, "the first request failed: " + err.Error()
}
