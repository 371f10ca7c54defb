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

	"github.com/llmload/llmload/internal/errorkinds"
	"github.com/llmload/llmload/internal/setting"
	"github.com/llmload/llmload/internal/sleep"
	"github.com/llmload/llmload/loadgen/internal/release"
	"github.com/llmload/llmload/metrics"
)

// Defaults of a Generator.
const (
	// defaultWarmupPoll is how often WarmupUntil is asked whether the
	// window may open.
	defaultWarmupPoll = 100 * time.Millisecond
	// defaultDrainTimeout bounds the wait for in-flight requests at the end
	// of a window when Drain is set.
	defaultDrainTimeout = time.Minute
	// defaultFailurePause is how long a closed-loop worker waits after a
	// failed request before it sends the next one, so a server that fails
	// at once is not hammered in a tight loop.
	defaultFailurePause = 10 * time.Millisecond
)

// lateTolerance is how long after it was due an open-loop arrival may
// start before it is counted late (see Run.Late).
const lateTolerance = 2 * time.Millisecond

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
// Load says how the requests are launched (see [Load]): a closed loop of
// [Closed].Streams workers, each keeping one streaming request in flight;
// an [Open] loop whose requests arrive at a rate, evenly spaced, Poisson or
// gamma, at most MaxInFlight at once; or a [Schedule] of arrivals such as
// a trace's. A nil Load is a closed loop of one stream. In an open loop an
// arrival that finds no free slot waits for one; one that starts more than
// 2 ms after it was due, for want of a slot or because the client
// fell behind, is counted late (see [Run].Late). Arrivals are never moved:
// the next one is due when it was, however late the last one started.
//
// A run warms up, then measures one window of Duration, then cancels the
// requests still in flight (or drains them) and returns. With Requests set
// and Duration zero, it measures until that many requests have finished;
// a Schedule's run lasts until its arrivals end. Time to first token is
// measured from when a request was written, never from when it was waiting
// on the client; that wait is reported apart.
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
	// Load is the shape of the load: [Closed], [Open] or [Schedule]; nil
	// means Closed{Streams: 1}.
	Load Load

	// Warmup is the least time before the window opens. After it,
	// WarmupUntil, if set, is asked every 100 ms and the window
	// opens when it returns true, or when WarmupTimeout has passed since
	// the start (0: no limit; only with WarmupUntil). Requests that end
	// before the window opens are the warm-up's: the run's Summary counts
	// them in Warmup alone, and WarmupSummary summarises them.
	Warmup        time.Duration
	WarmupUntil   func(Progress) bool
	WarmupTimeout time.Duration

	// OpenAt, if set, is called as the warm-up ends and returns when the
	// window starts. A time still to come, on time.Now's clock, opens a
	// window that starts then: chunks that arrive before it are the
	// warm-up's, exactly, so generators in several processes or on several
	// machines, their clocks set to one, measure one window. The zero time,
	// or one already past, opens the window at once.
	OpenAt func() time.Time

	// OnWindow, if set, is called as the window opens, with the window; its
	// start may be still to come (see OpenAt).
	OnWindow func(metrics.Window)

	// Duration is the length of the measurement window.
	Duration time.Duration
	// Requests, if set, stops the run once that many requests have been
	// measured: those in flight when the window opens and those started
	// in it (the warm-up's are apart). With Duration zero the window
	// lasts until they finish.
	Requests int
	// Drain lets the requests in flight at the end of the window finish
	// (within DrainTimeout) instead of cancelling them. Tokens after the
	// window are not counted either way; requests that finish then are
	// counted in CompletedOutside. Only with a Duration.
	Drain bool
	// DrainTimeout bounds the wait for the requests in flight at the end
	// of the window; 0 means 1 min.
	DrainTimeout time.Duration

	// Retries is how many times a failed request is sent again; 0 never
	// re-sends anything. Every attempt is recorded as a request of its
	// own, and Run.Retried counts the re-sends.
	Retries int
	// FailurePause is how long a closed-loop worker waits after a failed
	// request; 0 means 10 ms, negative no pause.
	FailurePause time.Duration
	// Recorder receives every request; nil means a new one. It must be
	// new: one that holds another recording is refused.
	Recorder *metrics.Recorder

	// OnRequest, if set, receives each request as it ends, warm-up and
	// retries included, once Recorder has it: the request sent and its
	// record (times, tokens, outcome, error kind, the server's timings).
	// It is called from the request's goroutine, so concurrently, and the
	// request's slot is held until it returns; tl must not be kept after.
	OnRequest func(req *Request, tl *metrics.Timeline)

	state   atomic.Pointer[runState]
	running atomic.Bool
}

// Phase is where a run is, by name.
type Phase string

// The phases of a run.
const (
	PhaseIdle     Phase = "idle"
	PhaseWarmup   Phase = "warmup"
	PhaseWindow   Phase = "window"
	PhaseDraining Phase = "draining"
	PhaseDone     Phase = "done"
)

// A run keeps its phase as an index into phases, so that Progress reads it
// without a lock.
const (
	phaseIdle uint32 = iota
	phaseWarmup
	phaseWindow
	phaseDraining
	phaseDone
)

var phases = [...]Phase{phaseIdle: PhaseIdle, phaseWarmup: PhaseWarmup, phaseWindow: PhaseWindow, phaseDraining: PhaseDraining, phaseDone: PhaseDone}

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
	// Recorder holds the full distributions (Recorder.Recording).
	Recorder *metrics.Recorder
	// Warmup is how long the warm-up lasted; WarmupTimedOut reports that
	// WarmupUntil never agreed and the window opened at WarmupTimeout.
	Warmup         time.Duration
	WarmupTimedOut bool
	// Launched counts requests started, Retried the re-sends among them.
	Launched, Retried int
	// Late counts open-loop arrivals that started more than 2 ms
	// after they were due, for want of a free slot or because the client
	// fell behind; Lateness is the distribution of start − due over all
	// arrivals. Queued counts the arrivals that found all MaxInFlight
	// slots taken and waited for one.
	Late     int
	Lateness metrics.Distribution
	Queued   int
	// Seed is the seed of an Open load's random arrivals: the Load's, or
	// the fresh one drawn for a zero Seed, which repeats the arrivals when
	// given again. It is 0 for a load without random arrivals.
	Seed uint64
	// Health is the client's own view of whether it kept up.
	Health Health
	// ReadMode says how the run's response bodies were read: "shared
	// pollers" (a [StreamTransport] with Poll, on Linux, over http), "a
	// goroutine per stream" (a StreamTransport otherwise: without Poll,
	// over https, elsewhere than Linux, or for a [Client.Stream]) or
	// "net/http" (any other transport); several joined by " and " where
	// the run used more than one, "" where it read none. A setting that
	// does nothing where it runs, such as Poll over https, shows here.
	ReadMode string
	// Stopped says why the run ended; Err is the error Run returned, the
	// cause of a run Stopped by StopCanceled or StopFailed, nil otherwise.
	Stopped StopReason
	Err     error
}

// StopReason says why a run ended: "window", "requests", "canceled" or
// "failed". Its zero value, [StopUnknown], means it is not set.
type StopReason string

// The reasons a run ends.
const (
	// StopUnknown is the zero StopReason: not set.
	StopUnknown StopReason = ""
	// StopWindow: the window's Duration passed.
	StopWindow StopReason = "window"
	// StopRequests: the run's Requests were sent and every one has ended.
	StopRequests StopReason = "requests"
	// StopCanceled: the caller's context ended; Run.Err is its cause.
	StopCanceled StopReason = "canceled"
	// StopFailed: the run could not go on, or could not start: a setting
	// that cannot work (a [*ConfigError]) or an unreachable server
	// ([ErrUnreachable]); Run.Err says which.
	StopFailed StopReason = "failed"
)

// runState is what a run shares between its goroutines.
type runState struct {
	start    time.Time
	phase    atomic.Uint32
	launched atomic.Int64
	inFlight atomic.Int64
	token    atomic.Int64 // in-flight requests with a first token
	retried  atomic.Int64
	late     atomic.Int64
	queued   atomic.Int64 // open-loop arrivals that waited for a slot
	everUp   atomic.Bool  // some request got response headers
	connFail atomic.Int64 // first requests that failed to connect
	measured atomic.Bool  // some request completed or had a token
	// refusedRun counts the failures in a row, none retryable, while
	// nothing is measured; lastErr is the last failure's cause.
	refusedRun atomic.Int64
	failMu     sync.Mutex
	lastErr    error
	rec        *metrics.Recorder

	lateMu   sync.Mutex
	lateness metrics.Histogram
}

// Progress returns a live view of the run in progress, or a Progress in
// PhaseIdle when none is.
func (g *Generator) Progress() Progress {
	st := g.state.Load()
	if st == nil {
		return Progress{Phase: PhaseIdle}
	}
	return Progress{
		Phase:     phases[st.phase.Load()],
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

// Run runs the load and returns what it measured. The error is non-nil
// when the run could not go on — a setting that cannot work (a
// [*ConfigError], before anything is sent, or from the Source), ctx ended
// (its cause is returned), the server was unreachable from the start — or
// when it measured nothing: no request completed and none had a token, or
// its first 20 requests in a row failed for a cause that sending again
// would not change, and it stopped then (a [*NothingMeasuredError], which
// names the failures and the last cause). The Run is never nil: it holds
// everything measured so far, Stopped says why it ended and Err repeats
// the error. Other request failures are not errors of Run: they are
// counted in the summary by kind.
func (g *Generator) Run(ctx context.Context) (*Run, error) {
	if g == nil {
		return refused(&ConfigError{Field: "Generator", Reason: "is nil"})
	}
	if !g.running.CompareAndSwap(false, true) {
		return refused(&ConfigError{Field: "Generator", Reason: "is already running: a Generator runs once at a time; use one Generator per concurrent run"})
	}
	defer g.running.Store(false)
	if err := g.Validate(); err != nil {
		return refused(err)
	}
	r := g.start(ctx)
	defer r.close()
	if g.Warmup > 0 || g.WarmupUntil != nil {
		r.warmUp()
	}
	r.stop(r.measure())
	return r.finish()
}

// refused is the Run of a run that could not start: nothing was sent, and
// Err says why.
func refused(err error) (*Run, error) {
	return &Run{Recorder: &metrics.Recorder{}, Stopped: StopFailed, Err: err}, err
}

// A runner is one run in progress. Its methods are the phases of
// [Generator.Run], called in turn by the goroutine that called it: start,
// warmUp, measure, stop, finish.
type runner struct {
	g      *Generator
	ctx    context.Context // the caller's
	client *Client
	shape  shape
	slots  int // closed-loop workers, or the open loop's MaxInFlight
	st     *runState
	run    *Run
	health healthMonitor
	reads  [readModes]int64 // the client's read counts when the run began
	budget atomic.Int64     // closed-loop requests left to send when Requests is set

	// workers runs the closed loop's workers, or the open loop's launcher
	// and its requests. They return only errors that end the run (from the
	// Source, or an unreachable server); a request's failure is recorded.
	workers *errgroup.Group
	// launch ends when no more requests may start: at the end of the
	// window, on a fatal error, when ctx ends, or once every worker has
	// returned.
	launch     context.Context
	stopLaunch context.CancelCauseFunc
	// requests is the requests' context. It outlives launch, so a drain
	// can let them finish; it ends with ctx, on a fatal error, or when the
	// run stops.
	requests       context.Context
	cancelRequests context.CancelCauseFunc
	stopAfter      func() bool
	// done is closed when every worker and request has returned; fatal is
	// then the first error that ended the run.
	done  chan struct{}
	fatal error

	// ahead is an open loop's arrivals read ahead of time; warmed, the
	// most connections opened ahead of a burst.
	ahead  *upcoming
	warmed int

	windowTimer *time.Timer
	windowEnd   <-chan time.Time // nil until a window of Duration opens
	ownClient   bool             // client's transport is the run's own
}

// start sets the run up, opens the window at once when there is no
// warm-up, and launches the workers.
func (g *Generator) start(ctx context.Context) *runner {
	sh := g.loadOf().shape()
	r := &runner{g: g, ctx: ctx, client: g.Client, shape: sh, slots: sh.slots, done: make(chan struct{})}
	if r.client.HTTPClient == nil && r.slots > defaultMaxConns {
		r.client, r.ownClient = r.client.withTransport(r.slots), true
	}
	rec := g.Recorder
	if rec == nil {
		rec = &metrics.Recorder{}
	}
	r.run = &Run{Recorder: rec}
	start := time.Now()
	if sh.open {
		start = r.prepareArrivals(ctx, start)
	}
	r.st = &runState{start: start, rec: rec}
	r.st.phase.Store(phaseWarmup)
	g.state.Store(r.st)
	r.budget.Store(int64(g.Requests))

	var workersCtx context.Context
	r.workers, workersCtx = errgroup.WithContext(ctx)
	r.launch, r.stopLaunch = context.WithCancelCause(workersCtx)
	r.requests, r.cancelRequests = context.WithCancelCause(context.WithoutCancel(ctx))
	// A fatal error, or the caller's cancellation, ends the requests too,
	// with its cause.
	r.stopAfter = context.AfterFunc(workersCtx, func() { r.cancelRequests(context.Cause(workersCtx)) })

	r.health.start()
	r.reads = r.client.reads.snapshot()
	if g.Warmup <= 0 && g.WarmupUntil == nil {
		// No warm-up: the window opens before the first request is sent.
		r.openWindow()
	}
	if sh.open {
		r.workers.Go(r.openLoop)
	} else {
		for w := range r.slots {
			r.workers.Go(func() error { return r.worker(w) })
		}
	}
	go func() {
		r.fatal = r.workers.Wait()
		close(r.done)
	}()
	return r
}

// close releases what the run holds once it has ended, or if a callback
// panicked.
func (r *runner) close() {
	r.stopLaunch(nil)
	r.cancelRequests(nil)
	r.stopAfter()
	if r.windowTimer != nil {
		r.windowTimer.Stop()
	}
	r.health.stop()
	if r.ownClient {
		r.client.CloseIdleConnections()
	}
}

// warmUp waits until the window may open and opens it, unless the run
// ended first.
func (r *runner) warmUp() {
	r.run.Warmup, r.run.WarmupTimedOut = r.g.warmup(r.launch, r.st)
	if r.launch.Err() == nil {
		r.openWindow()
	}
}

// openWindow opens the measurement window now, for Duration or, without
// one, until the requests are done.
func (r *runner) openWindow() {
	d := r.g.Duration
	if d <= 0 {
		d = forever
	}
	r.health.mark()
	now := time.Now
	if r.g.OpenAt != nil {
		if at := r.g.OpenAt(); at.After(time.Now()) {
			now = func() time.Time { return at }
		}
	}
	w := r.st.rec.OpenWindow(now, d)
	// The requests in flight end in the window, and are measured: the
	// window starts what is left of Requests.
	r.budget.Store(int64(r.g.Requests) - r.st.inFlight.Load())
	r.st.phase.Store(phaseWindow)
	if r.g.OnWindow != nil {
		r.g.OnWindow(w)
	}
	if r.g.Duration > 0 {
		r.windowTimer = time.NewTimer(time.Until(w.End))
		r.windowEnd = r.windowTimer.C
	}
}

// measure waits for the run to end: the window's end, its last request's,
// or a fatal error or the caller's cancellation (StopUnknown: finish tells
// them apart).
func (r *runner) measure() StopReason {
	select {
	case <-r.windowEnd:
		return StopWindow
	case <-r.done:
		return StopRequests
	case <-r.launch.Done():
		return StopUnknown
	}
}

// stop ends the run: no more requests start, a window without a Duration
// ends now, the requests in flight drain if the window ended and Drain is
// set, and the rest are cancelled. It returns once every request has been
// recorded.
func (r *runner) stop(reason StopReason) {
	r.run.Health = r.health.since()
	// Requests cut by a fatal error or the caller's cancellation keep that
	// cause; the others, the window's end.
	cause := ErrWindowEnded
	if reason == StopUnknown {
		cause = context.Cause(r.launch)
	}
	r.stopLaunch(cause)
	rec := r.st.rec
	if w := rec.Window(); r.g.Duration <= 0 && !w.IsZero() {
		rec.SetWindow(metrics.Window{Start: w.Start, End: time.Now()})
	}
	if r.g.Drain && reason == StopWindow {
		r.st.phase.Store(phaseDraining)
		r.drain()
	}
	r.cancelRequests(cause)
	<-r.done
	r.st.phase.Store(phaseDone)
	r.run.Stopped = reason
	r.run.ReadMode = readModeSince(r.reads, r.client.reads.snapshot())
}

// drain waits, within DrainTimeout, for the requests in flight to finish.
func (r *runner) drain() {
	timeout := r.g.DrainTimeout
	if timeout <= 0 {
		timeout = defaultDrainTimeout
	}
	ctx, cancel := context.WithTimeout(r.ctx, timeout)
	defer cancel()
	select {
	case <-r.done:
	case <-ctx.Done():
	}
}

// finish summarises the run and says why it ended. It is the run's one
// error path: a fatal error first, then the caller's cancellation.
func (r *runner) finish() (*Run, error) {
	run, rec, st := r.run, r.st.rec, r.st
	if rec.Window().IsZero() {
		// The window never opened: everything was warm-up, and the window
		// is empty, at the end.
		now := time.Now()
		rec.SetWindow(metrics.Window{Start: now, End: now})
	}
	run.Summary = rec.Recording(metrics.ScopeWindow).Summary
	run.WarmupSummary = rec.Recording(metrics.ScopeWarmup).Summary
	run.Launched = int(st.launched.Load())
	run.Retried = int(st.retried.Load())
	run.Late = int(st.late.Load())
	run.Queued = int(st.queued.Load())
	st.lateMu.Lock()
	run.Lateness = st.lateness.Summary()
	st.lateMu.Unlock()

	switch cause := context.Cause(r.ctx); {
	case errors.Is(r.fatal, errRefused):
		run.Stopped, run.Err = StopFailed, r.nothingMeasured(true)
	case r.fatal != nil:
		run.Stopped, run.Err = StopFailed, r.fatal
	case cause != nil:
		run.Stopped, run.Err = StopCanceled, cause
	case !st.measured.Load():
		run.Stopped, run.Err = StopFailed, r.nothingMeasured(false)
	case run.Stopped == StopUnknown:
		// Launching ended without an error: the workers were done.
		run.Stopped = StopRequests
	}
	return run, run.Err
}

// nothingMeasured is the error of a run that measured nothing.
func (r *runner) nothingMeasured(early bool) error {
	e := &NothingMeasuredError{Launched: r.run.Launched, Early: early, Errors: map[metrics.ErrorKind]int{}}
	for _, s := range []metrics.Summary{r.run.Summary, r.run.WarmupSummary} {
		e.Failed += s.Failed
		for k, n := range s.Errors {
			e.Errors[k] += n
		}
	}
	r.st.failMu.Lock()
	e.Last = r.st.lastErr
	r.st.failMu.Unlock()
	return e
}

// A NothingMeasuredError is the error of a run that measured nothing: no
// request completed and none had a token. Either the run ended so (Early
// false), or it stopped early (Early true) because its first 20
// requests in a row failed for a cause that sending again
// would not change, such as a 4xx answer other than 429 or an answer that
// is not an event stream. Run.Stopped is then [StopFailed]. It unwraps to
// the last request's failure, so errors.As finds its [*StatusError].
type NothingMeasuredError struct {
	// Launched counts the requests sent, Failed those that failed, by kind
	// in Errors.
	Launched, Failed int
	Errors           map[metrics.ErrorKind]int
	// Early reports that the stop rule ended the run.
	Early bool
	// Last is the last failure's cause; nil when no request failed.
	Last error
}

// Error says what the run sent, how it failed and the last cause.
func (e *NothingMeasuredError) Error() string {
	msg := fmt.Sprintf("loadgen: the run measured nothing: %d requests sent, none completed", e.Launched)
	if e.Early {
		msg = fmt.Sprintf("loadgen: the run stopped: its first %d requests in a row failed for a cause that sending again would not change (%d requests sent)", refusedLimit, e.Launched)
	}
	if kinds := errorkinds.Format(e.Errors); kinds != "" {
		msg += "; failures: " + kinds
	}
	if e.Last != nil {
		msg += "; the last: " + e.Last.Error()
	}
	if e.Launched == 0 {
		msg = "loadgen: the run measured nothing: it sent no request"
	}
	return msg
}

// Unwrap returns the last failure's cause.
func (e *NothingMeasuredError) Unwrap() error { return e.Last }

// warmup waits for the window to be allowed to open, or for ctx to end. It
// returns how long it waited and whether it gave up at WarmupTimeout.
func (g *Generator) warmup(ctx context.Context, st *runState) (time.Duration, bool) {
	if !sleep.For(ctx, g.Warmup) || g.WarmupUntil == nil {
		return time.Since(st.start), false
	}
	for !g.WarmupUntil(g.Progress()) {
		if g.WarmupTimeout > 0 && time.Since(st.start) >= g.WarmupTimeout {
			return time.Since(st.start), true
		}
		if !sleep.For(ctx, defaultWarmupPoll) {
			break
		}
	}
	return time.Since(st.start), false
}

// worker is closed-loop worker w: it sends one request after another until
// launching stops or the run's Requests are spent. It returns only an error
// that ends the run.
func (r *runner) worker(w int) error {
	g := r.g
	ramp, pause := r.shape.ramp, r.shape.pause
	if ramp > 0 && r.slots > 1 && !sleep.For(r.launch, ramp*time.Duration(w)/time.Duration(r.slots)) {
		return nil
	}
	for seq := 0; r.launch.Err() == nil; seq++ {
		if ok, _ := r.spend(); !ok {
			return nil
		}
		if pause != nil && !sleep.For(r.launch, pause(w, seq)) {
			return nil
		}
		req, err := r.request(w, seq)
		if err != nil {
			return err
		}
		tl, err := r.sendRequest(req, w, seq, time.Time{})
		if err != nil {
			return err
		}
		if tl.Kind != metrics.KindNone && r.launch.Err() == nil {
			sleep.For(r.launch, g.pauseAfter(tl))
		}
	}
	return nil
}

// spend takes a request from the run's Requests, if it sets any, and
// reports whether one was left. A request started in the warm-up takes
// none: the budget is set as the window opens (see openWindow).
// It also reports whether it took one.
func (r *runner) spend() (ok, took bool) {
	if r.g.Requests <= 0 || r.st.phase.Load() == phaseWarmup {
		return true, false
	}
	return r.budget.Add(-1) >= 0, true
}

// openLoop launches the arrivals of an Open or a Schedule load, each
// request in a goroutine of its own holding one of MaxInFlight slots, until
// launching stops, the schedule ends or the run's Requests have arrived.
// The arrivals due at one instant are made ready a little ahead of it and
// released together as it comes (see release.Gate).
func (r *runner) openLoop() error {
	slots := make(chan int, r.slots)
	for i := range cap(slots) {
		slots <- i
	}
	for {
		seq, at, ok := r.ahead.pop()
		if !ok || r.spent() {
			return nil
		}
		r.warmForBursts(at)
		if !sleep.For(r.launch, time.Until(at)-release.Lead) {
			return nil
		}
		gt, first := release.NewGate(at), at
		for ok {
			slot, free := r.takeSlot(slots, gt)
			if !free {
				return nil
			}
			s, due := seq, at
			r.workers.Go(func() error {
				defer func() { slots <- slot }()
				return r.arrive(slot, s, due, gt)
			})
			if gt.Opened { // an arrival waited for a slot: the next has a gate of its own
				break
			}
			seq, at, ok = r.ahead.popBy(first.Add(release.SameInstant))
			if ok {
				gt.At = at // never before an arrival's due time
			}
		}
		if !gt.Open(r.launch) {
			return nil
		}
	}
}

// takeSlot takes a free slot for an arrival of gt. When none is free by
// the gate's time, the arrivals ready go then, and this one waits for a
// slot, counted in Queued. It reports false if launching stopped first.
func (r *runner) takeSlot(slots chan int, gt *release.Gate) (int, bool) {
	select {
	case slot := <-slots:
		return slot, true
	default:
	}
	if !gt.Opened {
		t := time.NewTimer(time.Until(gt.At) - release.FineMargin)
		defer t.Stop()
		select {
		case slot := <-slots:
			return slot, true
		case <-t.C:
		case <-r.launch.Done():
			return 0, false
		}
		if !gt.Open(r.launch) {
			return 0, false
		}
	}
	r.st.queued.Add(1)
	select {
	case slot := <-slots:
		return slot, true
	case <-r.launch.Done():
		return 0, false
	}
}

// arrive makes the request of arrival seq ready, waits for its gate to
// open and sends it, unless the run's Requests are spent.
func (r *runner) arrive(slot, seq int, due time.Time, gt *release.Gate) error {
	ok, took := r.spend()
	if !ok {
		return nil
	}
	req, err := r.request(slot, seq)
	if err != nil {
		return err
	}
	if !gt.Wait(r.launch) {
		return nil
	}
	if !took { // made ready in the warm-up: it counts if the window has opened since
		if ok, _ = r.spend(); !ok {
			return nil
		}
	}
	_, err = r.sendRequest(req, slot, seq, due)
	return err
}

// spent reports that the run's Requests are all sent: no more may start.
func (r *runner) spent() bool {
	return r.g.Requests > 0 && r.st.phase.Load() != phaseWarmup && r.budget.Load() <= 0
}

// prepareArrivals reads an open loop's schedule ahead from a provisional
// start and opens, before the first arrival, a connection for each
// arrival of the largest burst it sees coming: a trace's same-instant
// burst then finds its connections open instead of dialling them as it
// is due. It returns the run's start, after the connections are open,
// and moves the arrivals read ahead to it.
func (r *runner) prepareArrivals(ctx context.Context, start time.Time) time.Time {
	due := r.schedule(start)
	r.ahead = &upcoming{due: due, max: min(r.slots+1, maxAhead)}
	r.warmed = min(r.ahead.burst(r.ahead.fill(start.Add(firstLookahead))), r.slots)
	if r.warmed > 1 {
		r.client.warmConns(ctx, r.warmed)
		// net/http's transport puts a connection back in its pool from
		// its own goroutine, a moment after the answer was read.
		sleep.For(ctx, warmSettle)
	}
	shift := time.Since(start)
	for i := range r.ahead.at {
		r.ahead.at[i] = r.ahead.at[i].Add(shift)
	}
	r.ahead.due = func(seq int) (time.Time, bool) {
		at, ok := due(seq)
		return at.Add(shift), ok
	}
	return start.Add(shift)
}

// warmForBursts looks ahead of the arrival due at: a burst coming larger
// than any the connections were opened for has more opened, in the
// background, before it is due.
func (r *runner) warmForBursts(at time.Time) {
	b := min(r.ahead.burst(r.ahead.fill(at.Add(lookahead))), r.slots)
	if b <= r.warmed {
		return
	}
	r.warmed = b
	// The requests in flight hold connections of their own.
	n := min(b+int(r.st.inFlight.Load()), r.slots)
	r.workers.Go(func() error {
		r.client.warmConns(r.launch, n)
		return nil
	})
}

// schedule returns when each arrival of the open loop is due, from the
// run's start, and records the seed of random arrivals in the Run: the
// Load's, or a fresh one.
func (r *runner) schedule(start time.Time) func(seq int) (time.Time, bool) {
	var seed uint64
	if r.shape.random {
		if o, ok := r.g.Load.(Open); ok {
			seed = o.Seed
		}
		for seed == 0 {
			seed = rand.Uint64()
		}
		r.run.Seed = seed
	}
	return r.shape.due(start, seed)
}

// request returns the Source's request seq of worker, its body encoded,
// or the error that ends the run: the Source gave none, or one that cannot
// work.
func (r *runner) request(worker, seq int) (*Request, error) {
	req := r.g.Source(worker, seq)
	if req == nil {
		return nil, &ConfigError{Field: "Generator.Source", Reason: fmt.Sprintf("returned nil for worker %d, request %d: a Source must return a *Request", worker, seq)}
	}
	if _, err := r.client.check(req); err != nil {
		return nil, err
	}
	return req, nil
}

// sendRequest sends req, request seq of worker (or slot), with its
// retries, and records every attempt; it returns the last attempt's
// timeline. Its error is one that ends the run: the server is unreachable,
// or refuses every request.
func (r *runner) sendRequest(req *Request, worker, seq int, due time.Time) (*metrics.Timeline, error) {
	var tl *metrics.Timeline
	for attempt := 0; attempt <= r.g.Retries; attempt++ {
		if attempt > 0 {
			if r.requests.Err() != nil || !retryable(tl.Kind) {
				break
			}
			r.st.retried.Add(1)
		}
		tl = r.begin(req, due, attempt)
		_ = r.client.Measure(r.requests, req, tl, r.st)
		if err := r.ended(req, tl, seq, attempt); err != nil {
			return tl, err
		}
		if tl.Kind == metrics.KindNone {
			break
		}
	}
	return tl, nil
}

// begin counts an attempt at req, due at due, as launched and in flight,
// and returns its timeline, started. It and ended are apart from
// sendRequest so that their locals are off the stack while the request
// is in flight (see [requestState.send]).
//
//go:noinline
func (r *runner) begin(req *Request, due time.Time, attempt int) *metrics.Timeline {
	st := r.st
	tl := &metrics.Timeline{Due: due, Model: req.Model}
	st.launched.Add(1)
	st.inFlight.Add(1)
	tl.Start = time.Now()
	switch {
	case tl.Due.IsZero():
		tl.Due = tl.Start
	case attempt == 0: // an arrival; a retry is not
		late := tl.Start.Sub(tl.Due)
		if late > lateTolerance {
			st.late.Add(1)
		}
		st.lateMu.Lock()
		st.lateness.Record(late)
		st.lateMu.Unlock()
	}
	return tl
}

// ended records the attempt tl at req, request seq, and returns the error
// that ends the run, if it does: the server unreachable, or every request
// refused.
//
//go:noinline
func (r *runner) ended(req *Request, tl *metrics.Timeline, seq, attempt int) error {
	g, st := r.g, r.st
	st.inFlight.Add(-1)
	if tl.Chunks > 0 {
		st.token.Add(-1)
	}
	st.rec.Record(tl)
	if g.OnRequest != nil {
		g.OnRequest(req, tl)
	}
	if !tl.Headers.IsZero() {
		st.everUp.Store(true)
	} else if tl.Kind == metrics.KindConnect && seq == 0 && attempt == 0 && !r.shape.open {
		if st.connFail.Add(1) >= int64(r.slots) && !st.everUp.Load() {
			return ErrUnreachable
		}
	}
	if r.refused(tl) {
		return errRefused
	}
	return nil
}

// refusedLimit is how many requests in a row a run lets fail for a cause
// that sending again would not change before it stops, while none has
// completed or had a token: see NothingMeasuredError.
const refusedLimit = 20

// errRefused ends a run whose first refusedLimit requests failed for a
// cause sending again would not change; finish makes it a
// NothingMeasuredError.
var errRefused = errors.New("loadgen: every request refused")

// refused keeps count of what the requests measured, and reports that the
// run's stop rule ended it: refusedLimit failures in a row, none of them
// retryable, and nothing measured before them. A length rejection does not
// count: it says the prompt does not fit, which the run reports.
func (r *runner) refused(tl *metrics.Timeline) bool {
	st := r.st
	switch {
	case tl.Kind == metrics.KindNone || tl.Chunks > 0:
		st.measured.Store(true)
		return false
	case tl.Kind == metrics.KindCanceled:
		return false
	}
	st.failMu.Lock()
	st.lastErr = tl.Err
	st.failMu.Unlock()
	switch {
	case st.measured.Load():
		return false
	case retryable(tl.Kind) || tl.Kind == metrics.KindTooLong:
		st.refusedRun.Store(0)
		return false
	}
	return st.refusedRun.Add(1) >= refusedLimit
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
	return setting.Resolve(g.FailurePause, defaultFailurePause)
}
