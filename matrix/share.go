package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/llmload/llmload/internal/background"
	"github.com/llmload/llmload/internal/sleep"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/matrix/internal/fleet"
	"github.com/llmload/llmload/metrics"
)

func init() { fleet.RunShare = runShare }

// sharePart is what one shard measured of a cell, as a follower reports
// it. Its recording's window and times are on the shard's own clock.
type sharePart struct {
	// Recording holds every request of the share, warm-up included (the
	// matrix's scope, metrics.ScopeAll), with its full distributions and,
	// when the cell keeps one, its time series.
	Recording metrics.Recording `json:"recording"`
	// Streams is the shard's view of its own streams in the window.
	Streams *Streams `json:"streams,omitempty"`
	// Health is whether the shard's client kept up.
	Health loadgen.Health `json:"health"`
	// Warmup is how long the share warmed up before the window opened;
	// WarmupEnded why its own warm-up ended, Queued that it ended because
	// the server queued its streams, WarmupTimedOut that it ran to its
	// timeout.
	Warmup         textDuration `json:"warmup"`
	WarmupEnded    string       `json:"warmup_ended,omitempty"`
	Queued         bool         `json:"queued,omitempty"`
	WarmupTimedOut bool         `json:"warmup_timed_out,omitempty"`
	// Error says why the share stopped before its window ended, if it did.
	Error string `json:"error,omitempty"`
}

// shareRequest returns the loadgen request of a share's streams.
func shareRequest(sh *fleet.Share) *loadgen.Request {
	return &loadgen.Request{API: sh.API, Model: sh.Model, Prompt: sh.Prompt, Images: sh.Images, MaxTokens: sh.MaxTokens,
		IgnoreEOS: true, Usage: loadgen.UsageContinuous, ServerTimings: sh.ServerTimings}
}

// runShare runs a follower's share of a cell with c: it waits for the
// launch, keeps sh.Streams closed-loop streams in flight, warms up as a
// cell does (without the server's /metrics, which the leader reads), tells
// ctl when its warm-up is done, and measures the window that starts when
// ctl says. Cancelling ctx ends the share early; it then reports what it
// measured, with the reason in Error.
func runShare(ctx context.Context, c *loadgen.Client, sh fleet.Share, ctl fleet.Control) fleet.Result {
	part := measureShare(ctx, c, sh, ctl)
	b, err := json.Marshal(part)
	if err != nil {
		// A figure JSON cannot hold: the leader is told why instead.
		b, _ = json.Marshal(&sharePart{Error: "the share's report does not encode: " + err.Error(),
			Recording: (&metrics.Recorder{}).Recording(metrics.ScopeAll)})
	}
	return fleet.Result{Report: b, OutputTokens: part.Recording.Summary.OutputTokens, Error: part.Error}
}

func measureShare(ctx context.Context, c *loadgen.Client, sh fleet.Share, ctl fleet.Control) *sharePart {
	if !sleep.Until(ctx, sh.Launch) {
		return &sharePart{Error: fmt.Sprintf("stopped before launch: %v", context.Cause(ctx)),
			Recording: (&metrics.Recorder{}).Recording(metrics.ScopeAll)}
	}
	var rec metrics.Recorder
	if sh.SLO != nil {
		rec.SLO = *sh.SLO
	}
	rec.Every = sh.Series
	streams := newStreamTracker(sh.Streams)
	warm := &warmup{n: sh.Streams, cellN: sh.Concurrency, streams: streams,
		flow: sh.Flow, queueAfter: sh.QueueAfter}
	gate := &shareGate{warm: warm, ctl: ctl, timeout: sh.WarmupTimeout, start: time.Now()}
	req := shareRequest(&sh)
	g := &loadgen.Generator{
		Client: c, Load: loadgen.Closed{Streams: sh.Streams}, Recorder: &rec,
		Source: func(slot, seq int) *loadgen.Request {
			streams.begin(slot, seq)
			return req
		},
		Warmup:      sh.WarmupMin,
		WarmupUntil: gate.until,
		OpenAt:      gate.openAt,
		Duration:    sh.Duration,
		OnWindow:    func(w metrics.Window) { streams.mark(w.Start, w.End) },
	}
	if o, ok := ctl.(fleet.CellObserver); ok {
		o.OnCell(sh.ContextTokens, sh.Concurrency, g)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { observeStreams(g, streams, done) })
	started := time.Now()
	run, err := g.Run(ctx)
	close(done)
	wg.Wait()
	part := &sharePart{
		Recording:      rec.Recording(metrics.ScopeAll),
		Streams:        streams.summary(),
		Health:         run.Health,
		Warmup:         textDuration(warmedUp(run, rec.Window(), started)),
		WarmupEnded:    warm.reason,
		Queued:         gate.queued,
		WarmupTimedOut: gate.timedOut,
	}
	if _, ok := errors.AsType[*loadgen.NothingMeasuredError](err); err != nil && !ok {
		part.Error = err.Error() // a share that measured nothing is judged with the cell
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
	background.Every(done, streamTick, func(now time.Time) bool {
		p := g.Progress()
		streams.observe(now, p.WithToken, p.InFlight-p.WithToken, p.Launched)
		return true
	})
}

// shareGate holds a share's warm-up until the leader opens the window: it
// asks the share's own warm-up whether it is done, tells the cell once, and
// lets the window open when the leader has set its start.
type shareGate struct {
	warm    *warmup
	ctl     fleet.Control
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
			s.warm.reason = s.warm.timedOut()
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
