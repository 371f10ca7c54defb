package matrix

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmload/llmload/internal/figure"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/counts"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// cell measures one cell: idle barrier, scout, N closed-loop streams, a
// warm-up that ends when the cell is steady or clearly never will be, the
// window, classification. It returns an error only when the run must stop
// (ctx ended); the cell then holds what was measured, marked Partial, or
// is left undecided when its window had counted no token.
func (cr *cellRun) cell(ctx context.Context, c *Cell, index, total int) error {
	sc := cr.scout(ctx, c.ContextTokens, "cell")
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	c.PromptTokens, c.ImageTokens = sc.PromptTokens, sc.ImageTokens
	c.Requests, c.Errors, c.ErrorKinds = sc.Requests, sc.Errors, maps.Clone(sc.ErrorKinds)
	if sc.Status != Valid {
		c.Status, c.Reason = sc.Status, sc.Reason
		return nil
	}
	a := &cellAttempt{cr: cr, c: c, p: cr.prompts[c.ContextTokens], sc: sc}
	cellCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if err := a.start(cellCtx); err != nil {
		if ctx.Err() != nil {
			// Interrupted while waiting for the fleet: nothing was
			// measured, and the cell is left for -resume.
			c.Status, c.Reason = StatusUnknown, "interrupted before its window opened"
			return context.Cause(ctx)
		}
		c.Status, c.Reason = Failed, err.Error()
		return nil
	}
	run, runErr := a.run(cellCtx, stop, index, total)
	if _, ok := errors.AsType[*loadgen.ConfigError](runErr); ok {
		return runErr // nothing was sent
	}
	return a.conclude(ctx, cellCtx, run, runErr)
}

// cellAttempt is one cell on its way through the run: its scout's
// answer, its streams' requests and the generator that sends them.
type cellAttempt struct {
	cr *cellRun
	c  *Cell
	p  *prompt
	sc scoutResult

	req           *loadgen.Request
	warmupTimeout time.Duration
	queueAfter    time.Duration
	fleet         *fleetCell
	local         int // the streams this process runs
	rec           metrics.Recorder
	streams       *streamTracker
	warm          *warmup
	g             *loadgen.Generator

	samples  *serverSamples // the server's /metrics over the window
	readings []gauges       // the readings kept for the cell's series
}

// start works out the cell's request and warm-up, joins the fleet, if
// any, and builds the generator of this process's streams.
func (a *cellAttempt) start(ctx context.Context) error {
	cr, c, spec := a.cr, a.c, a.cr.spec
	a.req = &loadgen.Request{
		API: spec.API, Model: spec.Model, Prompt: a.p.text, Images: cr.images,
		MaxTokens: spec.MaxTokens, IgnoreEOS: true, Usage: loadgen.UsageContinuous,
		ServerTimings: cr.res.Server.Engine == capacity.EngineVLLM,
	}
	w := *spec.WarmupRule
	// A stream that waits for its first token longer than the server would
	// take to prefill every stream's prompt from scratch, one after
	// another, waits for a place, not for prefill. (A server with a prefix
	// cache per slot, as llama.cpp's and Ollama's, prefills the prompt
	// again in every slot the scout did not warm.)
	a.queueAfter = w.Flow + time.Duration(c.Concurrency)*max(a.p.coldTTFT, a.sc.ttft)
	a.warmupTimeout = w.Timeout + w.PerContextK*time.Duration(c.ContextTokens/tokensK)
	// With a fleet, this process runs its share of the streams, the
	// followers theirs.
	var err error
	a.fleet, a.local, err = cr.startFleet(ctx, c, a.req, a.warmupTimeout, a.queueAfter)
	if err != nil {
		return err
	}
	if spec.SLO != nil {
		a.rec.SLO = *spec.SLO
	}
	if every := spec.Series; every > 0 {
		a.rec.Every = every
		cr.sampler.Keep()
	}
	a.streams = newStreamTracker(a.local)
	a.warm = &warmup{
		n: a.local, cellN: c.Concurrency, streams: a.streams, sampler: cr.sampler,
		flow: w.Flow, queueAfter: a.queueAfter, knownCap: cr.queueCap,
	}
	a.g = a.generator(w.Min)
	return nil
}

// generator is the generator of this process's streams, warming up for
// at least warmupMin.
func (a *cellAttempt) generator(warmupMin time.Duration) *loadgen.Generator {
	cr, c, streams, req := a.cr, a.c, a.streams, a.req
	g := &loadgen.Generator{
		Client: cr.client, Load: loadgen.Closed{Streams: a.local}, Recorder: &a.rec,
		Source: func(slot, seq int) *loadgen.Request {
			streams.begin(slot, seq)
			return req
		},
		Warmup:        warmupMin,
		WarmupUntil:   a.warm.until,
		WarmupTimeout: a.warmupTimeout,
		Duration:      cr.spec.Duration,
		OnWindow: func(w metrics.Window) {
			cr.sampler.MarkWindow(w)
			if cr.gpus != nil {
				cr.gpus.Mark(w)
			}
			streams.mark(w.Start, w.End)
			cr.r.logf("  warmed up: the window opens in %v, for %v", max(time.Until(w.Start), 0).Round(time.Millisecond), w.End.Sub(w.Start))
		},
	}
	a.fleet.configure(g, a.warm)
	if cr.r.OnCell != nil {
		cr.r.OnCell(c.ContextTokens, c.Concurrency, g)
	}
	return g
}

// run launches the fleet, if any, and runs this process's streams,
// watched for a stuck server, through the warm-up and the window; then it
// takes the server's samples.
func (a *cellAttempt) run(ctx context.Context, stop context.CancelCauseFunc, index, total int) (*loadgen.Run, error) {
	cr := a.cr
	var wg sync.WaitGroup
	watch := make(chan struct{})
	wg.Go(func() { cr.watch(ctx, a.g, a.streams, stop, watch, index, total, a.c) })
	run, runErr := &loadgen.Run{Recorder: &a.rec}, a.fleet.launch(ctx)
	if runErr == nil {
		run, runErr = a.g.Run(ctx)
	}
	if _, ok := errors.AsType[*loadgen.NothingMeasuredError](runErr); ok {
		runErr = nil // a cell that measured nothing is judged by classify
	}
	close(watch)
	wg.Wait()
	a.samples = cr.sampler.Summary()
	a.readings = cr.sampler.Kept()
	return run, runErr
}

// conclude merges the shards' parts, if any, into the cell's measurement
// and classifies the cell. ctx is the run's, cellCtx the cell's.
func (a *cellAttempt) conclude(ctx, cellCtx context.Context, run *loadgen.Run, runErr error) error {
	c := a.c
	// The seed's meaning: TTFT and the other per-request figures are over
	// every request the cell launched, warm-up included; throughput is the
	// window's.
	recording := a.rec.Recording(metrics.ScopeAll)
	run.Summary = recording.Summary
	st := a.streams.summary()
	if err := a.fleet.merge(ctx, run, &recording, &st, a.warm); err != nil {
		if errors.Is(err, errNoWindow) && ctx.Err() != nil {
			// Interrupted before a window opened: nothing to keep, and
			// the cell is left for -resume to run again.
			c.Status, c.Reason = StatusUnknown, "interrupted before its window opened"
			return context.Cause(ctx)
		}
		c.Status, c.Reason = Failed, "the shards' parts do not merge: "+err.Error()
		if ctx.Err() != nil {
			return context.Cause(ctx) // the run was interrupted all the same
		}
		return nil
	}
	if ctx.Err() != nil && (a.rec.Window().Start.IsZero() || run.Summary.OutputTokens == 0) {
		// Interrupted in its warm-up, or before its window counted a
		// token: no tokens says nothing of the server's capacity here, so
		// the cell is left undecided, for Resume to run again.
		c.Status, c.Reason = StatusUnknown, "interrupted before its window measured a token"
		return context.Cause(ctx)
	}
	m := a.measure(ctx, run, &recording, st)
	a.classify(run, m)
	stuck := runErr != nil && context.Cause(cellCtx) == errStuck && ctx.Err() == nil
	if stuck {
		c.Status = OverCapacity
		c.Reason = "starved: no token arrived for Runner.StuckAfter while the server reported requests waiting; ended early"
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

// measure makes the cell's measurement of its run: the figures, its
// series with the server's readings, the GPUs' energy, and the cell's
// requests and errors.
func (a *cellAttempt) measure(ctx context.Context, run *loadgen.Run, recording *metrics.Recording, st *Streams) *Measurement {
	cr, c := a.cr, a.c
	m := cr.measurement(run, a.samples, st)
	// The cell's series, every shard's merged: the results keep it once,
	// without what it merged from.
	if s := recording.Series; s != nil {
		c := *s
		c.From, c.Tokens, c.TTFTBins, c.ITLBins = time.Time{}, nil, nil, nil
		m.Series = &c
		addServer(m.Series, a.readings)
	}
	recording.Series = nil
	m.Recording = recording
	if cr.gpus != nil && !run.Summary.Window.Start.IsZero() {
		e, err := cr.gpus.Energy(ctx, run.Summary.Window, m.OutputTokens, cr.r.GPUHourlyCost)
		if err != nil {
			cr.r.logf("  the GPUs' energy: %v", err)
		}
		m.Energy = e
	}
	if st := m.Streams; st != nil {
		if m.OutputTokensPerSec > 0 && st.AvgDecoding > 0 {
			st.DecodeMs = 1000 * float64(cr.spec.MaxTokens) * st.AvgDecoding / m.OutputTokensPerSec
		}
	}
	c.Measurement = m
	s := run.Summary
	c.Requests += s.Requests
	c.Errors += s.Failed
	c.ErrorKinds = counts.Add(c.ErrorKinds, s.Errors)
	m.WarmupEnded = a.warm.reason
	if run.WarmupTimedOut {
		m.WarmupEnded = a.warm.timedOut()
	}
	return m
}

// classify decides the measured cell's status and writes its notes.
func (a *cellAttempt) classify(run *loadgen.Run, m *Measurement) {
	cr, c := a.cr, a.c
	// The prompt's prefill, cached: the idle server's quickest answer to
	// it, not this scout's if the server was still busy.
	prefill := a.sc.ttft
	if a.p.warmTTFT > 0 {
		prefill = min(prefill, a.p.warmTTFT)
	}
	c.Status, c.Reason = classify(a.fleet.measured(c), run, a.samples, m.Streams, prefill, cr.spec.ErrorThreshold)
	if c.Status == RequestsQueued {
		cr.learnCap(c.Concurrency, a.samples, m.Streams)
	}
	m.Notes = append(explain(a.fleet.measured(c), m, a.p.coldTTFT), energyNotes(m.Energy)...)
	if note := outsideNote(run.Summary.Split, m); note != "" {
		m.Notes = append(m.Notes, note)
	}
	m.Noisy = noisy(a.fleet.measured(c), m)
	a.fleet.finish(m)
}

// warmup decides when a cell's window may open. A cell is steady once
// every stream has decoded at once or every closed-loop slot has finished
// a request (a slot between two requests is not waiting for the server),
// and tokens have then flowed for Flow. It ends early, with the reason,
// when it is clear the cell will never have every stream running: the
// server reports requests waiting throughout Flow, or (where it publishes
// no waiting count) the streams decoding at once stayed below the
// concurrency, with others waiting for a first token, for longer than
// prefilling every stream's prompt in turn would take, or for Flow at the
// number an earlier cell found the server runs at once.
type warmup struct {
	n          int
	cellN      int // the cell's streams over every shard, when n is one shard's; 0 when they are the same
	knownCap   int // the most requests the server ran at once in an earlier queued cell; 0 unknown
	streams    *streamTracker
	sampler    *sampler
	flow       time.Duration
	queueAfter time.Duration

	steadySince  time.Time
	lastSample   time.Time
	waitingSince time.Time
	waiting      float64
	reason       string
	queued       bool // the warm-up ended because the server queued the streams
}

func (w *warmup) until(loadgen.Progress) bool {
	now := time.Now()
	if w.steadySince.IsZero() && (w.streams.allDecoded() || w.streams.everySlotFinished()) {
		w.steadySince = now
	}
	if g, ok := w.latest(); ok && g.Waiting >= 0 && g.Time.After(w.lastSample) {
		w.lastSample = g.Time
		switch {
		case g.Waiting < 1:
			w.waitingSince = time.Time{}
		case w.waitingSince.IsZero():
			w.waitingSince, w.waiting = g.Time, g.Waiting
		default:
			w.waiting = min(w.waiting, g.Waiting)
		}
	}
	if !w.waitingSince.IsZero() && w.lastSample.Sub(w.waitingSince) >= w.flow {
		w.reason = fmt.Sprintf("the server kept at least %.0f of %d requests waiting throughout the warm-up's flow time: it runs fewer at once and queues the rest",
			w.waiting, max(w.n, w.cellN))
		w.queued = true
		return true
	}
	if d, at := w.streams.capped(now); w.knownCap > 0 && at == w.knownCap && d >= w.flow {
		w.reason = fmt.Sprintf("at most %d of %d streams decoded at once throughout the warm-up's flow time while the others waited for a first token, as many as the server ran at once in an earlier cell: it queues the rest",
			at, w.n)
		w.queued = true
		return true
	}
	if d, at := w.streams.capped(now); d >= w.queueAfter {
		w.reason = fmt.Sprintf("at most %d of %d streams decoded at once while the others waited for a first token, for longer than prefilling every stream's prompt in turn takes: the server queues them",
			at, w.n)
		w.queued = true
		return true
	}
	if !w.steadySince.IsZero() && now.Sub(w.steadySince) >= w.flow {
		w.reason = "every stream produced tokens, then tokens flowed for the warm-up's flow time"
		return true
	}
	return false
}

// latest returns the server's latest reading, if the warm-up has a
// sampler (a follower's share has none: the leader reads the server).
func (w *warmup) latest() (gauges, bool) {
	if w.sampler == nil {
		return gauges{}, false
	}
	return w.sampler.Latest()
}

// timedOut says why a warm-up that ran to its timeout did not end sooner.
func (w *warmup) timedOut() string {
	s := "timed out: "
	if w.steadySince.IsZero() {
		return s + "not every stream had produced tokens (requests outlast the warm-up, or the server never ran them all)"
	}
	return s + "tokens had not flowed long enough"
}

func (cr *cellRun) stuckAfter() time.Duration {
	if cr.r.StuckAfter > 0 {
		return cr.r.StuckAfter
	}
	return min(defaultStuckAfter, cr.spec.Duration)
}

// watch reads the streams' state every streamTick, writes the progress
// line and ends a cell whose requests are starved: no token for StuckAfter
// while the server reports requests waiting.
func (cr *cellRun) watch(ctx context.Context, g *loadgen.Generator, streams *streamTracker, stop context.CancelCauseFunc, done <-chan struct{}, index, total int, c *Cell) {
	t := time.NewTicker(streamTick)
	defer t.Stop()
	stuckAfter := cr.stuckAfter()
	var lastTokens int64
	lastChange := time.Now()
	var lastShown time.Time
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
			streams.observe(now, p.WithToken, p.InFlight-p.WithToken, p.Launched)
			if p.Tokens != lastTokens {
				lastTokens, lastChange = p.Tokens, now
			}
			if now.Sub(lastChange) > stuckAfter {
				if gauges, ok := cr.sampler.Latest(); ok && gauges.Waiting > 0 {
					stop(errStuck)
				}
			}
			if cr.r.Progress == nil || now.Sub(lastShown) < 500*time.Millisecond {
				continue
			}
			lastShown = now
			if !lastRate.at.IsZero() {
				lastRate.rate = float64(p.Tokens-lastRate.tokens) / now.Sub(lastRate.at).Seconds()
			}
			lastRate.at, lastRate.tokens = now, p.Tokens
			left := ""
			if p.Phase == loadgen.PhaseWindow {
				left = fmt.Sprintf("%.1fs left", max(time.Until(p.Window.End), 0).Seconds())
			}
			fmt.Fprintf(cr.r.Progress, "\rcell %d/%d  %s × %d  %-8s %s  %.1f tok/s  %d/%d streams decoding   ",
				index, total, formatTokens(c.ContextTokens), c.Concurrency, p.Phase, left, lastRate.rate, p.WithToken, c.Concurrency)
		}
	}
}

// learnCap keeps the most requests the server ran at once in a queued
// cell of n streams, from its running count or the client's timeline, for
// later cells' warm-ups.
func (cr *cellRun) learnCap(n int, samples *serverSamples, streams *Streams) {
	cap := 0
	switch {
	case samples != nil && samples.PeakRunning > 0:
		cap = int(samples.PeakRunning)
	case streams != nil:
		cap = streams.Ceiling
	}
	if cap > 0 && cap < n {
		cr.queueCap = cap
	}
}

// measurement turns a run into a cell's columns.
func (cr *cellRun) measurement(run *loadgen.Run, samples *serverSamples, streams *Streams) *Measurement {
	s := run.Summary
	q := func(d metrics.Distribution) Quantiles {
		return Quantiles{P50: ms(d.P50), P90: ms(d.P90), P99: ms(d.P99)}
	}
	m := &Measurement{
		OutputTokensPerSec:     s.OutputTokensPerSec,
		PerRequestTokensPerSec: s.PerRequestTokensPerSec,
		TTFT:                   q(s.TTFT),
		TBT:                    q(s.TBT),
		ITL:                    q(s.ITL),
		AvgActive:              s.AvgActive,
		Completed:              s.Completed,
		OutputTokens:           s.OutputTokens,
		MeasuredS:              s.MeasuredFor.Seconds(),
		Goodput:                s.Goodput,
		WarmupS:                run.Warmup.Seconds(),
		WarmupTimedOut:         run.WarmupTimedOut,
		Server:                 samples,
		Streams:                streams,
		Client:                 run.Health,
		ClientLimited:          run.Health.Limited,
		ReadMode:               run.ReadMode,
	}
	if s.ReasoningTokens > 0 {
		m.TTFO, m.ReasoningTokens, m.AnswerTokens = q(s.TTFO), s.ReasoningTokens, s.AnswerTokens
	}
	if sp := s.Split; sp.Requests > 0 {
		m.SplitRequests = int(sp.Requests)
		m.ServerQueue, m.ServerPrefill, m.Rest = q(sp.Queue), q(sp.Prefill), q(sp.Rest)
		if sp.Outside {
			m.OutsideServer = "network"
			if run.Health.Limited {
				m.OutsideServer = "client"
			}
		}
	}
	if samples != nil {
		m.AvgActive = samples.AvgRunning
	}
	return m
}

// outsideNote says why a cell is flagged as having spent much of its TTFT
// outside the server (Measurement.OutsideServer), or "" when it is not.
func outsideNote(sp metrics.TTFTSplit, m *Measurement) string {
	if m.OutsideServer == "" || sp.TTFT.Mean <= 0 {
		return ""
	}
	s := fmt.Sprintf("%s of the mean TTFT was spent outside the server (its own timings of %s put the rest in its queue and its prefill): ",
		fmtShare(float64(sp.Rest.Mean)/float64(sp.TTFT.Mean)), fmtInt(int(sp.Requests))+" requests")
	if m.OutsideServer == "client" {
		return s + "the client's, which was short of CPU (" + m.Client.Reason + ")"
	}
	return s + "the network's, as the client kept up"
}

// ms is a duration in milliseconds.
func ms(d time.Duration) float64 { return d.Seconds() * 1000 }

// classify decides a measured cell's status, with one broken stream never
// voiding a cell. "Requests queued" means the server made requests wait:
// from its waiting count where it publishes one (waiting in most samples,
// or never running them all), else from the client's own timeline (the
// streams decoding at once held below the concurrency, with others waiting
// for a first token, for most of the window). A stream between two
// requests of its closed loop, or waiting for its prompt's prefill, is not
// queued.
func classify(c *Cell, run *loadgen.Run, samples *serverSamples, streams *Streams, prefill time.Duration, threshold float64) (Status, string) {
	s := run.Summary
	n := c.Concurrency
	tooLong := s.Errors[metrics.KindTooLong]
	switch {
	case tooLong > 0 && s.OutputTokens == 0:
		return OverCapacity, fmt.Sprintf("rejected by the server as too long (%d requests)", tooLong)
	case s.OutputTokens == 0 && s.Completed+s.Errors[metrics.KindEmptyAnswer] > 0:
		// Requests that finish without a token (empty answers, counted
		// as failed by the client) are the server's failure, not a lack
		// of capacity.
		empty := s.Completed + s.Errors[metrics.KindEmptyAnswer]
		return Failed, fmt.Sprintf("the server completed %s with no tokens", figure.Plural(empty, "request", "requests"))
	case s.OutputTokens == 0:
		return OverCapacity, "starved: no output token in the window"
	}
	if attempted := s.Requests - s.Canceled; attempted > 0 && float64(s.Failed) > threshold*float64(attempted) {
		return Failed, fmt.Sprintf("%d of %d requests failed (%s)", s.Failed, attempted, kinds(s.Errors))
	}
	if why := queued(n, samples, streams, prefill); why != "" {
		return RequestsQueued, why
	}
	// Failures the cell absorbed and a client that may have limited it are
	// in the cell (Errors, ErrorKinds, ClientLimited); the reason says only
	// why the status is not Valid.
	return Valid, ""
}

// queued says why a cell's requests waited in the server's queue, or "".
// prefill is how long the idle server took to answer the cell's prompt
// (its scout, with the prompt in its prefix cache).
//
// From the client's timeline alone a queue shows as a ceiling (the
// streams decoding at once stay at or below some count short of N while
// others wait for a first token) and as long waits: a stream queued
// behind others waits for requests to finish, at least half a request's
// decoding when N is twice the ceiling, while a stream that waits only for
// its prompt's prefill (or for a slot's turnover on a server short of
// CPU) waits far less. So the client calls a cell queued only when its
// requests' mean wait in the window passes twice the prompt's prefill plus
// half a request's decoding. A server that runs one request fewer than the
// cell sends is then seldom caught; its running count (or the limit the
// user gives) says so.
func queued(n int, samples *serverSamples, streams *Streams, prefill time.Duration) string {
	if n <= 1 {
		return "" // one stream waits for nobody
	}
	if samples != nil {
		var why []string
		if !samples.NoWaiting && samples.WaitingShare >= 0.5 {
			why = append(why, fmt.Sprintf("the server had requests waiting in %.0f%% of its samples (up to %.0f)", 100*samples.WaitingShare, samples.MaxWaiting))
		}
		// Where the server counts its waiting requests, they say; its
		// running count alone also dips in a closed loop's turnover
		// between two short requests, where nothing waits.
		if samples.NoWaiting && samples.PeakRunning < float64(n) && samples.AvgRunning < float64(n)-0.5 {
			why = append(why, fmt.Sprintf("the server ran at most %.0f of %d requests at once (%.2f on average)", samples.PeakRunning, n, samples.AvgRunning))
		}
		return strings.Join(why, "; ")
	}
	if streams == nil || streams.Ceiling >= n || streams.WaitingShare < 0.5 || streams.DecodeMs <= 0 {
		return ""
	}
	prefillMs := prefill.Seconds() * 1000
	if streams.MeanWaitMs <= 2*prefillMs+streams.DecodeMs/2 {
		return ""
	}
	return fmt.Sprintf("at most %d of %d streams decoded at once (%d for %.0f%% of the window); the others waited for a first token %s as long as a request's decoding on average (the prompt's prefill takes %s of it)",
		streams.Ceiling, n, streams.Ceiling, 100*streams.CeilingShare, fmtTimes(streams.MeanWaitMs/streams.DecodeMs), fmtShare(prefillMs/streams.DecodeMs))
}

// fmtTimes is a ratio as the notes say it: "1.1×", "12×". Notes compare
// figures rather than quote them, so they read the same in any clock a
// report speaks in.
func fmtTimes(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f×", v)
	}
	return fmt.Sprintf("%.0f×", v)
}

// fmtShare is a share as the notes say it: "12%", "0.5%".
func fmtShare(v float64) string {
	if v < 0.01 {
		return fmt.Sprintf("%.1f%%", 100*v)
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

// energyNotes are the notes of a cell's GPU energy (readings dropped,
// figures left out), for the cell's notes.
func energyNotes(e *metrics.Energy) []string {
	if e == nil {
		return nil
	}
	notes := make([]string, len(e.Notes))
	for i, n := range e.Notes {
		notes[i] = "the GPUs' energy: " + n
	}
	return notes
}

// explain returns notes on a measured cell whose figures would otherwise
// contradict each other: a total rate well below the per-request rate
// times the streams. The total is the streams decoding at once on average
// times the rate of a decoding stream, so the note says which fell short:
// the streams spent part of the window not decoding (waiting for a first
// token, or between requests), or they decoded slower in the window than
// the median request did over its whole life.
func explain(c *Cell, m *Measurement, coldTTFT time.Duration) []string {
	st := m.Streams
	if st == nil || m.PerRequestTokensPerSec <= 0 || m.OutputTokensPerSec <= 0 {
		return nil
	}
	n := float64(c.Concurrency)
	if m.OutputTokensPerSec >= 0.85*m.PerRequestTokensPerSec*n {
		return nil
	}
	var why []string
	share := st.AvgDecoding / n
	if share < 0.9 {
		s := fmt.Sprintf("the streams decoded %.0f%% of the window (%.2f of %d at once on average)", 100*share, st.AvgDecoding, c.Concurrency)
		waitShare := st.AvgWaiting / n
		switch {
		case c.Status == RequestsQueued && waitShare > 0.05:
			s += fmt.Sprintf("; %.0f%% they waited for a first token, in the server's queue or for prefill", 100*waitShare)
		case waitShare > 0.05:
			s += fmt.Sprintf("; %.0f%% they waited for a first token (prefill)", 100*waitShare)
		}
		if rest := 1 - share - waitShare; rest > 0.05 {
			s += fmt.Sprintf("; %.0f%% was between requests", 100*rest)
		}
		why = append(why, s)
	}
	if st.AvgDecoding > 0 {
		if rate := m.OutputTokensPerSec / st.AvgDecoding; rate < 0.85*m.PerRequestTokensPerSec {
			why = append(why, fmt.Sprintf("a decoding stream made %s of the median request's tokens a second in the window (slower requests took more of the window)",
				fmtShare(rate/m.PerRequestTokensPerSec)))
		}
	}
	if len(why) == 0 {
		return nil
	}
	notes := []string{fmt.Sprintf("the total tok/s is %s of the per-request rate × %s: %s",
		fmtShare(m.OutputTokensPerSec/(m.PerRequestTokensPerSec*n)), figure.Plural(c.Concurrency, "stream", "streams"), strings.Join(why, "; "))}
	if c.Status != RequestsQueued && c.ContextTokens > 0 && coldTTFT >= minNotedPrefill && m.TTFT.P50 >= 0.5*coldTTFT.Seconds()*1000 {
		notes = append(notes, fmt.Sprintf("the median TTFT is %s of the cold prefill of this prompt: the server prefills it again on every request",
			fmtShare(m.TTFT.P50/(coldTTFT.Seconds()*1000))))
	}
	return notes
}

// Noise bounds: a cell is noisy when its total tok/s is known only within
// more than ±noiseShare of it, or when fewer than minWindowStreams of its
// streams (all of them, for fewer) decoded in its window.
const (
	noiseShare       = 0.25
	minWindowStreams = 3
)

// noisy says why a measured cell's numbers are mostly noise, or "".
func noisy(c *Cell, m *Measurement) string {
	if !hasRates(c) || m.ClientLimited {
		return ""
	}
	var why []string
	if st := m.Streams; st != nil && st.PeakDecoding < min(minWindowStreams, c.Concurrency) {
		why = append(why, fmt.Sprintf("only %d of its %s decoded in the window", st.PeakDecoding, figure.Plural(c.Concurrency, "stream", "streams")))
	}
	if total, _, _, _ := c.Intervals(1); total != nil {
		v := m.OutputTokensPerSec
		if lo, hi := (v-total.Low)/v, (total.High-v)/v; max(lo, hi) > noiseShare {
			why = append(why, fmt.Sprintf("its total tok/s is known only from %.0f%% below to %.0f%% above", 100*lo, 100*hi))
		}
	}
	return strings.Join(why, "; ")
}

// minNotedPrefill is the shortest cold prefill the notes compare a cell's
// TTFT with: a shorter one is within the timers' noise.
const minNotedPrefill = 2 * time.Millisecond

func kinds(k map[metrics.ErrorKind]int) string {
	var parts []string
	for _, kind := range slices.SortedFunc(maps.Keys(k), byName) {
		parts = append(parts, fmt.Sprintf("%s %d", kind, k[kind]))
	}
	return strings.Join(parts, ", ")
}

// byName orders error kinds by their names.
func byName(a, b metrics.ErrorKind) int { return cmp.Compare(a, b) }

// classifyScout decides a cell or prefill row whose scout failed after
// its retries.
func classifyScout(kind metrics.ErrorKind, err error, what string) (Status, string) {
	switch kind {
	case metrics.KindTooLong:
		return OverCapacity, "refused by the server as too long: " + err.Error()
	case metrics.KindEmptyAnswer:
		return Failed, emptyScout(what)
	}
	return Failed, "the first request failed: " + err.Error()
}

// emptyScout is the reason of a cell or prefill row (what) whose first
// request ended without a token.
func emptyScout(what string) string {
	return "the server completed 1 request with no tokens (the " + what + "'s first)"
}
