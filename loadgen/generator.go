package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/llmload/llmload/metrics"
)

// Defaults of a [Generator].
const (
	// DefaultWarmupPoll is how often WarmupUntil is asked whether the
	// window may open.
	DefaultWarmupPoll = 100 * time.Millisecond
	// DefaultDrainTimeout bounds the wait for in-flight requests at the end
	// of a window when Drain is set.
	DefaultDrainTimeout = time.Minute
	// DefaultFailurePause is how long a closed-loop worker waits after a
	// failed request before it sends the next one, so a server that fails
	// at once is not hammered in a tight loop.
	DefaultFailurePause = 10 * time.Millisecond
)

// forever is the length of a window that ends when its requests do.
const forever = 100 * 365 * 24 * time.Hour

// Errors that end a run early. Everything measured up to then is returned
// with them.
var (
	// ErrUnreachable: the first requests of every worker failed to connect
	// and none has ever connected.
	ErrUnreachable = errors.New("loadgen: the server is unreachable: every first request failed to connect")
	// ErrWindowEnded is the cause given to requests cut at the end of the
	// measurement window.
	ErrWindowEnded = errors.New("loadgen: the measurement window ended")
)

// A Source decides each request of a run: worker is the worker's index (in
// an open-loop run, the arrival's slot), seq the request's number, counted
// from 0 per worker in a closed loop and per run in an open loop. It is
// called concurrently. A Source that returns nil, or a Request that cannot
// work (see [Request.Validate]), ends the run with a [*ConfigError].
type Source func(worker, seq int) *Request

// Repeat returns a Source that sends req every time.
func Repeat(req *Request) Source {
	return func(int, int) *Request { return req }
}

// Generator runs load against a server and measures it.
//
// In a closed loop (Rate 0) Concurrency workers each keep one streaming
// request in flight: a finished request is replaced at once. In an open
// loop (Rate > 0) requests arrive at Rate per second, as a Poisson process
// or, with Burstiness, a gamma process, with at most MaxInFlight in flight;
// an arrival that finds no free slot waits for one and is counted late.
//
// A run warms up, then measures one window of Duration, then cancels the
// requests still in flight (or drains them) and returns. With Requests set
// and Duration zero, it measures until that many requests have finished.
// Time to first token is measured from when a request was written, never
// from when it was waiting on the client; that wait is reported apart.
//
// Set the fields before Run; a Generator runs once at a time. Progress may
// be called from any goroutine while it runs. Settings that cannot work, or
// that one another would silently override, are refused by Run before it
// sends anything (see [Generator.Validate]).
type Generator struct {
	// Client sends the requests; required. Without an HTTPClient, Run uses
	// a transport with a connection per worker.
	Client *Client
	// Source decides each request; required.
	Source Source

	// Concurrency is the number of closed-loop workers; 0 means 1. It is
	// refused with a Rate: an open loop's cap is MaxInFlight.
	Concurrency int
	// Ramp spreads the workers' starts evenly over this time; 0 starts them
	// together. Closed loop only.
	Ramp time.Duration

	// Rate, in requests per second, selects an open loop.
	Rate float64
	// Burstiness is the shape of the gamma distribution of inter-arrival
	// times: 1 (or 0) is a Poisson process, below 1 burstier, above 1
	// more regular. Open loop only.
	Burstiness float64
	// MaxInFlight caps the requests in flight in an open loop; 0 means
	// 1024. Open loop only.
	MaxInFlight int
	// Seed makes open-loop arrivals reproducible; 0 picks one at random. A
	// closed loop has no random arrivals and does not use it.
	Seed uint64

	// Warmup is the least time before the window opens. After it,
	// WarmupUntil, if set, is asked every DefaultWarmupPoll and the window
	// opens when it returns true, or when WarmupTimeout has passed since
	// the start (0: no limit; only with WarmupUntil). Requests that end
	// before the window opens are the warm-up's: the run's Summary counts
	// them in Warmup alone, and WarmupSummary summarises them.
	Warmup        time.Duration
	WarmupUntil   func(Progress) bool
	WarmupTimeout time.Duration

	// OnWindow, if set, is called as the window opens.
	OnWindow func(metrics.Window)

	// Duration is the length of the measurement window.
	Duration time.Duration
	// Requests, if set, stops the run after that many requests have
	// started; with Duration zero the window lasts until they finish.
	Requests int
	// Drain lets the requests in flight at the end of the window finish
	// (within DrainTimeout) instead of cancelling them. Tokens after the
	// window are not counted either way; requests that finish then are
	// counted in CompletedOutside. Only with a Duration.
	Drain        bool
	DrainTimeout time.Duration

	// Retries is how many times a failed request is sent again; 0 never
	// re-sends anything. Every attempt is recorded as a request of its
	// own, and Run.Retried counts the re-sends.
	Retries int
	// FailurePause is how long a closed-loop worker waits after a failed
	// request; 0 means DefaultFailurePause, negative no pause.
	FailurePause time.Duration

	// Recorder receives every request; nil means a new one. It must be
	// new: one that holds another recording is refused.
	Recorder *metrics.Recorder

	state   atomic.Pointer[runState]
	running atomic.Bool
}

// Phase is where a run is.
type Phase uint8

// The phases of a run.
const (
	PhaseIdle Phase = iota
	PhaseWarmup
	PhaseWindow
	PhaseDraining
	PhaseDone
)

var phaseNames = [...]string{"idle", "warmup", "window", "draining", "done"}

// String returns the phase's name: "idle", "warmup", "window", "draining"
// or "done".
func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("Phase(%d)", p)
}

// Progress is a live view of a run, cheap enough to take many times a
// second: it reads counters without taking any lock on the per-token path.
type Progress struct {
	Phase   Phase
	Elapsed time.Duration // since the run started
	// Window is the measurement window, zero until it opens.
	Window metrics.Window
	// InFlight counts requests sent and not finished; WithToken those of
	// them that have their first token.
	InFlight, WithToken int
	// Launched counts requests started.
	Launched int64
	// Snapshot has the recorder's counts: the requests finished
	// (Recorded) and failed, and the output tokens so far and inside the
	// window.
	metrics.Snapshot
}

// Run is the result of a run: the summary of its window and how the run
// itself went.
type Run struct {
	// Summary holds the measurement's columns: the window's throughput and
	// the requests that ended after it opened. Those that ended before are
	// counted in Summary.Warmup alone; Summary.Requests counts them all, as
	// Launched does.
	Summary metrics.Summary
	// WarmupSummary summarises the warm-up's requests apart. When the run
	// ends before its window opens, every request is the warm-up's, and
	// the window is empty, at the run's end.
	WarmupSummary metrics.Summary
	// Recorder holds the full distributions (Recorder.Histograms).
	Recorder *metrics.Recorder
	// Warmup is how long the warm-up lasted; WarmupTimedOut reports that
	// WarmupUntil never agreed and the window opened at WarmupTimeout.
	Warmup         time.Duration
	WarmupTimedOut bool
	// Launched counts requests started, Retried the re-sends among them.
	Launched, Retried int
	// Late counts open-loop arrivals that found no free slot and started
	// more than a millisecond after they were due; Lateness is the
	// distribution of start − due over all arrivals.
	Late     int
	Lateness metrics.Distribution
	// Health is the client's own view of whether it kept up.
	Health Health
	// Stopped says why the run ended: "window", "requests", or the error.
	Stopped string
}

// runState is what a run shares between its goroutines.
type runState struct {
	start    time.Time
	phase    atomic.Uint32
	launched atomic.Int64
	inFlight atomic.Int64
	token    atomic.Int64 // in-flight requests with a first token
	retried  atomic.Int64
	late     atomic.Int64
	everUp   atomic.Bool  // some request got response headers
	connFail atomic.Int64 // first requests that failed to connect
	rec      *metrics.Recorder

	lateMu   sync.Mutex
	lateness metrics.Histogram
}

// Progress returns a live view of the run in progress, or the zero
// Progress when none is.
func (g *Generator) Progress() Progress {
	st := g.state.Load()
	if st == nil {
		return Progress{}
	}
	return Progress{
		Phase:     Phase(st.phase.Load()),
		Elapsed:   time.Since(st.start),
		Window:    st.rec.Window(),
		InFlight:  int(st.inFlight.Load()),
		WithToken: int(st.token.Load()),
		Launched:  st.launched.Load(),
		Snapshot:  st.rec.Snapshot(),
	}
}

// Observe passes a chunk to the recorder and keeps count of the requests
// that have their first token.
func (st *runState) Observe(tl *metrics.Timeline, t time.Time, tokens int) {
	if tl.Chunks == 0 && tokens > 0 {
		st.token.Add(1)
	}
	st.rec.Observe(tl, t, tokens)
}

// Run runs the load and returns what it measured. The error is non-nil only
// when the run could not go on: a setting that cannot work (a
// [*ConfigError], before anything is sent, or from the Source), ctx ended
// (its cause is returned), or the server was unreachable from the start.
// The Run is never nil: it holds everything measured so far, and Stopped
// says why it ended. Request failures are not errors of Run: they are
// counted in the summary by kind.
func (g *Generator) Run(ctx context.Context) (*Run, error) {
	if g == nil {
		err := &ConfigError{Field: "Generator", Reason: "is nil"}
		return refused(err)
	}
	if !g.running.CompareAndSwap(false, true) {
		return refused(&ConfigError{Field: "Generator", Reason: "is already running: a Generator runs once at a time; use one Generator per concurrent run"})
	}
	defer g.running.Store(false)
	if err := g.Validate(); err != nil {
		return refused(err)
	}
	client := g.Client
	n := max(g.Concurrency, 1)
	if g.Rate > 0 {
		n = g.maxInFlight()
	}
	if client.HTTPClient == nil && n > DefaultMaxConns {
		client = client.withTransport(n)
		defer client.CloseIdleConnections()
	}
	rec := g.Recorder
	if rec == nil {
		rec = &metrics.Recorder{}
	}
	st := &runState{start: time.Now(), rec: rec}
	st.phase.Store(uint32(PhaseWarmup))
	g.state.Store(st)

	// stopLaunch ends the launching of new requests; cancelRequests (with a
	// cause) ends those in flight.
	launchCtx, stopLaunch := context.WithCancelCause(ctx)
	defer stopLaunch(nil)
	reqCtx, cancelRequests := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelRequests(nil)
	// A cancelled run cancels its requests too.
	stopAfter := context.AfterFunc(ctx, func() { cancelRequests(context.Cause(ctx)) })
	defer stopAfter()

	var health healthMonitor
	health.start()
	defer health.stop()

	run := &Run{Recorder: rec}
	var fatal atomic.Pointer[error]
	fail := func(err error) {
		if fatal.CompareAndSwap(nil, &err) {
			stopLaunch(err)
			cancelRequests(err)
		}
	}

	// The window opens after the warm-up, or, when there is none, before
	// the first request is sent.
	var windowEnd <-chan time.Time
	var windowTimer *time.Timer
	defer func() {
		if windowTimer != nil {
			windowTimer.Stop()
		}
	}()
	openWindow := func() {
		d := g.Duration
		if d <= 0 {
			d = forever // until the requests are done
		}
		health.mark()
		w := rec.OpenWindow(time.Now, d)
		st.phase.Store(uint32(PhaseWindow))
		if g.OnWindow != nil {
			g.OnWindow(w)
		}
		if g.Duration > 0 {
			windowTimer = time.NewTimer(time.Until(w.End))
			windowEnd = windowTimer.C
		}
	}
	warm := g.Warmup > 0 || g.WarmupUntil != nil
	if !warm {
		openWindow()
	}

	var wg errgroup.Group
	allLaunched := make(chan struct{})
	finished := make(chan struct{})
	wg.Go(func() error {
		defer close(allLaunched)
		if g.Rate > 0 {
			g.openLoop(launchCtx, reqCtx, client, st, fail)
		} else {
			g.closedLoop(launchCtx, reqCtx, client, st, n, fail)
		}
		return nil
	})
	go func() { _ = wg.Wait(); close(finished) }()

	if warm {
		run.Warmup, run.WarmupTimedOut = g.warmup(launchCtx, st, finished)
		if launchCtx.Err() == nil {
			openWindow()
		}
	}

	select {
	case <-windowEnd:
		run.Stopped = "window"
	case <-allLaunched:
		// A fixed number of requests: wait for the last ones.
		<-finished
		run.Stopped = "requests"
		if w := rec.Window(); g.Duration <= 0 && !w.IsZero() {
			rec.SetWindow(metrics.Window{Start: w.Start, End: time.Now()})
		}
	case <-launchCtx.Done():
	}
	run.Health = health.since()
	stopLaunch(ErrWindowEnded)
	if g.Drain && run.Stopped == "window" {
		st.phase.Store(uint32(PhaseDraining))
		dt := g.DrainTimeout
		if dt <= 0 {
			dt = DefaultDrainTimeout
		}
		select {
		case <-finished:
		case <-time.After(dt):
		case <-ctx.Done():
		}
	}
	cancelRequests(ErrWindowEnded)
	<-finished
	st.phase.Store(uint32(PhaseDone))

	if rec.Window().IsZero() {
		// The window never opened: everything was warm-up, and the window
		// is empty, at the end.
		now := time.Now()
		rec.SetWindow(metrics.Window{Start: now, End: now})
	}
	run.Summary = rec.Summary()
	run.WarmupSummary = rec.SummaryOf(metrics.ScopeWarmup)
	run.Launched = int(st.launched.Load())
	run.Retried = int(st.retried.Load())
	run.Late = int(st.late.Load())
	st.lateMu.Lock()
	run.Lateness = st.lateness.Summary()
	st.lateMu.Unlock()

	if p := fatal.Load(); p != nil {
		run.Stopped = (*p).Error()
		return run, *p
	}
	if err := context.Cause(ctx); err != nil {
		run.Stopped = err.Error()
		return run, err
	}
	return run, nil
}

// refused is the Run of a run that could not start: nothing was sent, and
// Stopped says why.
func refused(err error) (*Run, error) {
	return &Run{Recorder: &metrics.Recorder{}, Stopped: err.Error()}, err
}

func (g *Generator) maxInFlight() int {
	if g.MaxInFlight > 0 {
		return g.MaxInFlight
	}
	return 1024
}

// warmup waits for the window to be allowed to open. It returns how long it
// waited and whether it gave up at WarmupTimeout.
func (g *Generator) warmup(ctx context.Context, st *runState, finished <-chan struct{}) (time.Duration, bool) {
	wait := func(d time.Duration) bool {
		if d <= 0 {
			return true
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
		case <-finished:
		}
		return false
	}
	if !wait(g.Warmup) || g.WarmupUntil == nil {
		return time.Since(st.start), false
	}
	for !g.WarmupUntil(g.Progress()) {
		if g.WarmupTimeout > 0 && time.Since(st.start) >= g.WarmupTimeout {
			return time.Since(st.start), true
		}
		if !wait(DefaultWarmupPoll) {
			break
		}
	}
	return time.Since(st.start), false
}

// closedLoop runs n workers until launching stops.
func (g *Generator) closedLoop(launchCtx, reqCtx context.Context, c *Client, st *runState, n int, fail func(error)) {
	var budget atomic.Int64 // requests left when Requests is set
	budget.Store(int64(g.Requests))
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			if g.Ramp > 0 && n > 1 {
				if !sleep(launchCtx, g.Ramp*time.Duration(w)/time.Duration(n)) {
					return
				}
			}
			for seq := 0; launchCtx.Err() == nil; seq++ {
				if g.Requests > 0 && budget.Add(-1) < 0 {
					return
				}
				tl := g.send(reqCtx, c, st, w, seq, time.Time{}, fail)
				if tl == nil {
					return // the Source failed, and the run ends
				}
				if tl.Kind != metrics.KindNone && launchCtx.Err() == nil {
					sleep(launchCtx, g.pauseAfter(tl))
				}
			}
		})
	}
	wg.Wait()
}

// openLoop launches arrivals at Rate until launching stops.
func (g *Generator) openLoop(launchCtx, reqCtx context.Context, c *Client, st *runState, fail func(error)) {
	seed := g.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	arrivals := newArrivals(g.Rate, g.Burstiness, seed)
	slots := make(chan int, g.maxInFlight())
	for i := range cap(slots) {
		slots <- i
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	next := time.Now()
	for seq := 0; g.Requests <= 0 || seq < g.Requests; seq++ {
		next = next.Add(arrivals.next())
		due := next
		if !sleep(launchCtx, time.Until(due)) {
			return
		}
		var slot int
		select {
		case slot = <-slots:
		default: // every slot is taken: wait for one, and the arrival is late
			select {
			case slot = <-slots:
			case <-launchCtx.Done():
				return
			}
			if time.Since(due) > time.Millisecond {
				st.late.Add(1)
			}
		}
		wg.Go(func() {
			defer func() { slots <- slot }()
			g.send(reqCtx, c, st, slot, seq, due, fail)
		})
	}
}

// send sends one request of the run, with its retries, and records every
// attempt. It returns the last attempt's timeline, or nil when the Source
// gave no request that can be sent: then the run fails.
func (g *Generator) send(ctx context.Context, c *Client, st *runState, worker, seq int, due time.Time, fail func(error)) *metrics.Timeline {
	req := g.Source(worker, seq)
	if req == nil {
		fail(&ConfigError{Field: "Generator.Source", Reason: fmt.Sprintf("returned nil for worker %d, request %d: a Source must return a *Request", worker, seq)})
		return nil
	}
	if _, err := c.check(req); err != nil {
		fail(err)
		return nil
	}
	var tl *metrics.Timeline
	for attempt := 0; attempt <= g.Retries; attempt++ {
		if attempt > 0 {
			if ctx.Err() != nil || !retryable(tl.Kind) {
				break
			}
			st.retried.Add(1)
		}
		tl = &metrics.Timeline{Due: due}
		st.launched.Add(1)
		st.inFlight.Add(1)
		tl.Start = time.Now()
		if tl.Due.IsZero() {
			tl.Due = tl.Start
		} else {
			st.lateMu.Lock()
			st.lateness.Record(tl.Start.Sub(tl.Due))
			st.lateMu.Unlock()
		}
		_ = c.Measure(ctx, req, tl, st)
		st.inFlight.Add(-1)
		if tl.Chunks > 0 {
			st.token.Add(-1)
		}
		if !tl.Headers.IsZero() {
			st.everUp.Store(true)
		} else if tl.Kind == metrics.KindConnect && seq == 0 && attempt == 0 && g.Rate == 0 {
			if st.connFail.Add(1) >= int64(max(g.Concurrency, 1)) && !st.everUp.Load() {
				fail(ErrUnreachable)
			}
		}
		st.rec.Record(tl)
		if tl.Kind == metrics.KindNone {
			break
		}
	}
	return tl
}

// retryable reports whether a failure may succeed if sent again.
func retryable(k metrics.ErrorKind) bool {
	switch k {
	case metrics.KindConnect, metrics.KindRateLimited, metrics.KindServerStatus,
		metrics.KindTruncated, metrics.KindStall, metrics.KindHeaderTimeout,
		metrics.KindFirstTokenTimeout, metrics.KindStreamError:
		return true
	}
	return false
}

// pauseAfter is how long a worker waits after a failed request: the
// server's Retry-After (at most 5 s), else FailurePause.
func (g *Generator) pauseAfter(tl *metrics.Timeline) time.Duration {
	if tl.Kind == metrics.KindCanceled {
		return 0
	}
	var se *StatusError
	if errors.As(tl.Err, &se) && se.RetryAfter > 0 {
		return min(se.RetryAfter, 5*time.Second)
	}
	switch {
	case g.FailurePause < 0:
		return 0
	case g.FailurePause == 0:
		return DefaultFailurePause
	}
	return g.FailurePause
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
