package matrix

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// Share is one shard's part of a cell in a sharded run: the streams it
// keeps in flight and how its warm-up and window go. The leader sends one
// to every follower taking part in the cell (see
// [github.com/llmload/llmload/matrix/shard]); durations are wall time.
type Share struct {
	// Seq numbers the cells of a run, from 1.
	Seq           int `json:"seq"`
	ContextTokens int `json:"context_tokens"`
	// Concurrency is the cell's, over every shard; Streams this shard's
	// part of it.
	Concurrency int `json:"concurrency"`
	Streams     int `json:"streams"`

	// The request every stream sends, again and again.
	API       loadgen.API `json:"api"`
	Model     string      `json:"model,omitempty"`
	Prompt    string      `json:"prompt"`
	MaxTokens int         `json:"max_tokens"`

	// Launch is when the streams start, on the clock of the process that
	// runs the share (the leader's in what it sends; a follower moves it
	// to its own clock).
	Launch time.Time `json:"launch"`
	// WarmupMin, Flow and QueueAfter shape the warm-up as a single
	// process's cell does; WarmupTimeout ends it, the share then reporting
	// that it timed out.
	WarmupMin     Duration `json:"warmup_min"`
	Flow          Duration `json:"flow"`
	QueueAfter    Duration `json:"queue_after"`
	WarmupTimeout Duration `json:"warmup_timeout"`
	// Duration is the window's length.
	Duration Duration `json:"duration"`
	// SLO, in wall time, decides goodput.
	SLO *metrics.SLO `json:"slo,omitempty"`
	// Speed is the simulator's speed factor, for the warm-up's reasons.
	Speed float64 `json:"speed,omitempty"`
}

// request returns the loadgen request of the share's streams.
func (sh *Share) request() *loadgen.Request {
	return &loadgen.Request{API: sh.API, Model: sh.Model, Prompt: sh.Prompt, MaxTokens: sh.MaxTokens,
		IgnoreEOS: true, Usage: loadgen.UsageContinuous}
}

// SharePart is what one shard measured of a cell. Its recording's window
// and times are on the shard's own clock.
type SharePart struct {
	// Recording holds every request of the share, warm-up included (the
	// matrix's scope, metrics.ScopeAll), with its full distributions.
	Recording metrics.Recording `json:"recording"`
	// Streams is the shard's view of its own streams in the window.
	Streams *Streams `json:"streams,omitempty"`
	// Health is whether the shard's client kept up.
	Health loadgen.Health `json:"health"`
	// Warmup is how long the share warmed up before the window opened;
	// WarmupEnded why its own warm-up ended, Queued that it ended because
	// the server queued its streams, WarmupTimedOut that it ran to its
	// timeout.
	Warmup         Duration `json:"warmup"`
	WarmupEnded    string   `json:"warmup_ended,omitempty"`
	Queued         bool     `json:"queued,omitempty"`
	WarmupTimedOut bool     `json:"warmup_timed_out,omitempty"`
	// Error says why the share stopped before its window ended, if it did.
	Error string `json:"error,omitempty"`
}

// ShareControl connects a share to the rest of its cell.
type ShareControl interface {
	// Ready tells the cell that the share's warm-up is done, and why:
	// queued when it found the server queuing its streams, timedOut when
	// it ran to its timeout. It is called once.
	Ready(reason string, queued, timedOut bool)
	// WindowStart returns when the window starts, on the share's clock,
	// once the leader has set it.
	WindowStart() (time.Time, bool)
}

// RunShare runs a follower's share of a cell with c: it waits for the
// launch, keeps sh.Streams closed-loop streams in flight, warms up as a
// cell does (without the server's /metrics, which the leader reads), tells
// ctl when its warm-up is done, and measures the window that starts when
// ctl says. Cancelling ctx ends the share early; it then returns what it
// measured, with the reason in Error.
func RunShare(ctx context.Context, c *loadgen.Client, sh Share, ctl ShareControl) *SharePart {
	if err := sleepUntil(ctx, sh.Launch); err != nil {
		return &SharePart{Error: fmt.Sprintf("stopped before launch: %v", context.Cause(ctx)),
			Recording: (&metrics.Recorder{}).Recording(metrics.ScopeAll)}
	}
	var rec metrics.Recorder
	if sh.SLO != nil {
		rec.SLO = *sh.SLO
	}
	streams := newStreamTracker(sh.Streams)
	warm := &warmup{n: sh.Streams, cellN: sh.Concurrency, streams: streams, speed: max(sh.Speed, 1),
		flow: time.Duration(sh.Flow), queueAfter: time.Duration(sh.QueueAfter)}
	gate := &shareGate{warm: warm, ctl: ctl, timeout: time.Duration(sh.WarmupTimeout), start: time.Now()}
	req := sh.request()
	g := &loadgen.Generator{
		Client: c, Concurrency: sh.Streams, Recorder: &rec,
		Source: func(slot, seq int) *loadgen.Request {
			streams.begin(slot, seq)
			return req
		},
		Warmup:      time.Duration(sh.WarmupMin),
		WarmupUntil: gate.until,
		OpenAt:      gate.openAt,
		Duration:    time.Duration(sh.Duration),
		OnWindow:    func(w metrics.Window) { streams.mark(w.Start, w.End) },
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { observeStreams(g, streams, done) })
	started := time.Now()
	run, err := g.Run(ctx)
	close(done)
	wg.Wait()
	part := &SharePart{
		Recording:      rec.Recording(metrics.ScopeAll),
		Streams:        streams.summary(),
		Health:         run.Health,
		Warmup:         Duration(warmedUp(run, rec.Window(), started)),
		WarmupEnded:    warm.reason,
		Queued:         gate.queued,
		WarmupTimedOut: gate.timedOut,
	}
	if err != nil {
		part.Error = err.Error()
	}
	return part
}

// warmedUp returns how long a share warmed up: from its start to its
// window's, which may have opened a while before it started (see
// loadgen.Generator.OpenAt).
func warmedUp(run *loadgen.Run, w metrics.Window, started time.Time) time.Duration {
	if w.Start.After(started) {
		return w.Start.Sub(started)
	}
	return run.Warmup
}

// observeStreams reads a generator's streams every streamTick until done.
func observeStreams(g *loadgen.Generator, streams *streamTracker, done <-chan struct{}) {
	t := time.NewTicker(streamTick)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			p := g.Progress()
			streams.observe(now, p.WithToken, p.InFlight-p.WithToken, p.Launched)
		}
	}
}

// shareGate holds a share's warm-up until the leader opens the window: it
// asks the share's own warm-up whether it is done, tells the cell once, and
// lets the window open when the leader has set its start.
type shareGate struct {
	warm    *warmup
	ctl     ShareControl
	timeout time.Duration
	start   time.Time

	told             bool
	queued, timedOut bool
}

func (s *shareGate) until(p loadgen.Progress) bool {
	if !s.told {
		switch {
		case s.warm.until(p):
			s.queued = s.warm.queued
			s.told = true
		case s.timeout > 0 && time.Since(s.start) >= s.timeout:
			s.warm.reason = s.warm.timedOut(time.Since(s.start))
			s.timedOut, s.told = true, true
		}
		if s.told {
			s.ctl.Ready(s.warm.reason, s.queued, s.timedOut)
		}
	}
	_, ok := s.ctl.WindowStart()
	return ok
}

func (s *shareGate) openAt() time.Time {
	at, _ := s.ctl.WindowStart()
	return at
}

// sleepUntil waits until t, or until ctx ends and returns its error.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
