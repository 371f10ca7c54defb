package shard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmload/llmload/internal/redact"
	"github.com/llmload/llmload/internal/sleep"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/internal/tokencount"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/internal/fleet"
)

// Follower is a shard that joins a leader and runs the shares of cells it
// is given, until the leader's run is over. Set the fields, then call Run
// once.
type Follower struct {
	// Leader is the leader's base URL, such as
	// "http://llmload-0.llmload:7070" (a Kubernetes headless Service's
	// name for pod 0); required.
	Leader string
	// Token is the fleet's shared secret, the leader's Token: the
	// follower signs every request with it and takes no answer not signed
	// with it. Required.
	Token string
	// Name names the follower in the leader's results; "" means the host's
	// name.
	Name string
	// Client returns the client that sends the streams to the server, for
	// the spec the leader sent. Nil means a client for spec.URL on
	// loadgen.StreamTransport. The spec's URL has no password: a follower
	// of a server that needs one builds its own client.
	Client func(spec matrix.Spec) (*loadgen.Client, error)
	// HTTPClient talks to the leader; nil means a client of its own.
	HTTPClient *http.Client
	// JoinTimeout bounds the attempts to reach the leader at first (it may
	// not be up yet); 0 means DefaultJoinTimeout.
	JoinTimeout time.Duration
	// Silence is how long the follower goes on without reaching the leader
	// before it stops; 0 means the leader's.
	Silence time.Duration
	// Log receives a line at each step; nil is silent.
	Log io.Writer
	// OnCell, if set, is called with the generator of each share before
	// it runs, with its cell's context and streams (the whole cell's): its
	// Progress may be read while it runs, and an OnRequest set on it sees
	// each request.
	OnCell func(contextTokens, streams int, g *loadgen.Generator)

	// now is the follower's clock; nil means time.Now.
	now func() time.Time
	// shown is the leader's URL as the log shows it, without a password;
	// secrets takes the password out of every line and error.
	shown   string
	secrets *redact.Redactor

	hc      *http.Client
	client  *loadgen.Client
	run     string // the leader's run, from its hello
	index   int
	spec    matrix.Spec
	silence time.Duration
	lastOK  time.Time

	mu    sync.Mutex
	clock clock   // the latest measure of the clock
	share *active // the share in progress or last run
	wake  chan struct{}
}

// active is a share the follower runs or ran.
type active struct {
	seq    int
	share  fleet.Share // on the follower's clock
	cancel context.CancelCauseFunc
	done   chan struct{}

	// Guarded by the follower's mu.
	ready    *ready
	window   time.Time // on the follower's clock
	stopped  bool
	reported bool
}

func (f *Follower) logf(format string, args ...any) {
	if f.Log != nil {
		fmt.Fprintln(f.Log, textsafe.Line(f.secrets.Redact(fmt.Sprintf(format, args...))))
	}
}

func (f *Follower) clockNow() time.Time {
	if f.now != nil {
		return f.now()
	}
	return time.Now()
}

// Run joins the leader and runs the shares it gives until the leader's run
// is over, when it returns nil. It returns [ErrLeaderGone] when the leader
// cannot be reached for Silence, [ErrRunOver] when the run was over before
// it joined, and ctx's cause when ctx ends; the share in progress is
// stopped first.
func (f *Follower) Run(ctx context.Context) error {
	if f.Leader == "" {
		return errors.New("shard: Follower.Leader is empty: give the leader's URL")
	}
	if err := checkToken(f.Token); err != nil {
		return err
	}
	f.Leader = strings.TrimRight(f.Leader, "/")
	f.shown, f.secrets = redact.URL(f.Leader), redact.New(f.Leader)
	f.hc = f.HTTPClient
	if f.hc == nil {
		f.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
		defer f.hc.CloseIdleConnections()
	}
	if f.Name == "" {
		f.Name, _ = os.Hostname()
	}
	f.wake = make(chan struct{}, 1)
	if err := f.join(ctx); err != nil {
		return f.secrets.Error(err)
	}
	defer func() {
		if f.client != nil {
			f.client.CloseIdleConnections()
		}
	}()
	ctx, cancel := context.WithCancelCause(ctx)
	err := f.loop(ctx)
	cancel(err) // and a report in flight: there is no one to take it
	f.stopShare(err)
	return f.secrets.Error(err)
}

// join joins the leader, trying again until JoinTimeout, and measures the
// clock.
func (f *Follower) join(ctx context.Context) error {
	timeout := f.JoinTimeout
	if timeout <= 0 {
		timeout = DefaultJoinTimeout
	}
	deadline := time.Now().Add(timeout)
	for attempt := 0; ; attempt++ {
		var resp joinResponse
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := f.hello(rctx)
		if err == nil {
			err = post(rctx, f.hc, f.Token, f.run, f.Leader, pathJoin, joinRequest{Version: version, Name: f.Name}, &resp)
		}
		cancel()
		if err == nil {
			if err := checkJoin(&resp); err != nil {
				return err
			}
			f.index, f.spec = resp.Index, resp.Spec
			f.silence = f.Silence
			if f.silence <= 0 {
				f.silence = max(time.Duration(resp.Silence), time.Second)
			}
			break
		}
		var se *statusError
		if errors.As(err, &se) && se.StatusCode == http.StatusGone {
			return ErrRunOver
		}
		if errors.As(err, &se) || ctx.Err() != nil {
			return err // the leader refused: trying again changes nothing
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("shard: could not join the leader at %s within %v: %w", f.shown, timeout, err)
		}
		if attempt == 0 {
			f.logf("waiting for the leader at %s (%v)", f.shown, err)
		}
		if !sleep.For(ctx, 500*time.Millisecond) {
			return context.Cause(ctx)
		}
	}
	f.lastOK = time.Now()
	f.measureClock(ctx)
	f.logf("joined %s as shard %d; clock %s", f.shown, f.index, f.clockText())
	if f.client == nil {
		c, err := f.newClient()
		if err != nil {
			return err
		}
		f.client = c
	}
	return nil
}

// hello asks the leader for its run, which every request after is signed
// for.
func (f *Follower) hello(ctx context.Context) error {
	var resp helloResponse
	err := post(ctx, f.hc, f.Token, "", f.Leader, pathHello, helloRequest{Version: version}, &resp)
	var se *statusError
	switch {
	case errors.As(err, &se) && se.StatusCode == http.StatusNotFound:
		return fmt.Errorf("shard: the leader at %s does not know %s: it is an older llmload than this follower, which speaks %s: run the same llmload on every shard (%w)",
			f.shown, pathHello, version, err)
	case err != nil:
		return err
	case resp.Version != version:
		return fmt.Errorf("shard: the leader speaks %q, this follower %q: run the same llmload on every shard", clip(resp.Version), version)
	case len(resp.Run) != 32:
		return &errLeader{fmt.Sprintf("a run named %q (a leader's is 32 characters)", clip(resp.Run))}
	}
	f.run = resp.Run
	return nil
}

func (f *Follower) newClient() (*loadgen.Client, error) {
	if f.Client != nil {
		c, err := f.Client(f.spec)
		if err != nil {
			return nil, fmt.Errorf("shard: the client for the leader's server: %w", err)
		}
		return c, nil
	}
	conns := slices.Max(append([]int{1}, f.spec.Concurrency...)) + 4
	c := &loadgen.Client{BaseURL: f.spec.URL, HTTPClient: &http.Client{Transport: loadgen.NewStreamTransport(conns)}}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("shard: the leader's server %s: %w", f.spec.URL, err)
	}
	return c, nil
}

func (f *Follower) measureClock(ctx context.Context) {
	o, err := measureClock(ctx, f.hc, f.Token, f.run, f.Leader, f.clockNow)
	if err != nil {
		f.logf("could not measure the clock (%v); keeping the last measure", err)
		return
	}
	f.mu.Lock()
	f.clock = clock(o)
	f.mu.Unlock()
}

func (f *Follower) clockText() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("%v from the leader's (±%v)", f.clock.Offset, f.clock.Error)
}

// loop polls the leader and acts on what it says until the run is over.
func (f *Follower) loop(ctx context.Context) error {
	for {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		in := f.pollRequest()
		var resp pollResponse
		pctx, cancel := context.WithTimeout(ctx, pollWait+f.silence)
		stopWake := f.wakeOn(cancel)
		err := post(pctx, f.hc, f.Token, f.run, f.Leader, pathPoll, in, &resp)
		woken := stopWake()
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			if woken {
				continue // news to tell: poll again at once
			}
			if time.Since(f.lastOK) > f.silence {
				f.logf("the leader has not answered for %v (%v): stopping", time.Since(f.lastOK).Round(time.Millisecond), err)
				return fmt.Errorf("%w: no answer from %s for %v: %v", ErrLeaderGone, f.shown, time.Since(f.lastOK).Round(time.Millisecond), err)
			}
			sleep.For(ctx, 200*time.Millisecond)
			continue
		}
		f.lastOK = time.Now()
		switch {
		case resp.Done:
			f.logf("the leader's run is over")
			return nil
		case resp.Rejoin != "":
			f.logf("the leader dropped this shard (%s): joining again", resp.Rejoin)
			f.stopShare(errors.New("the leader dropped this shard"))
			if err := f.join(ctx); err != nil {
				return err
			}
		case resp.Share != nil:
			if err := checkShare(resp.Share, time.Now().Add(-f.offset())); err != nil {
				f.logf("%v: leaving the run", err)
				return err
			}
			f.start(ctx, *resp.Share)
		default:
			f.hear(resp)
		}
	}
}

// wakeOn cancels the poll in flight when the follower has news for the
// leader; the function it returns stops that and says whether it woke.
func (f *Follower) wakeOn(cancel context.CancelFunc) func() bool {
	stop := make(chan struct{})
	woke := make(chan bool, 1)
	go func() {
		select {
		case <-f.wake:
			cancel()
			woke <- true
		case <-stop:
			woke <- false
		}
	}()
	return func() bool {
		close(stop)
		return <-woke
	}
}

func (f *Follower) pollRequest() pollRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := pollRequest{Index: f.index, Clock: f.clock}
	if a := f.share; a != nil {
		in.Seq, in.Window, in.Stopped, in.Ready = a.seq, !a.window.IsZero(), a.stopped, a.ready
	}
	return in
}

// start runs a new share: it measures the clock, moves the share's times
// onto the follower's clock, and runs it until it ends, then reports it.
func (f *Follower) start(ctx context.Context, sh fleet.Share) {
	f.stopShare(errors.New("a new cell began"))
	f.measureClock(ctx)
	f.mu.Lock()
	off := f.clock.Offset
	f.mu.Unlock()
	local := sh
	local.Launch = sh.Launch.Add(off)
	sctx, cancel := context.WithCancelCause(ctx)
	a := &active{seq: sh.Seq, share: local, cancel: cancel, done: make(chan struct{})}
	f.mu.Lock()
	f.share = a
	f.mu.Unlock()
	f.logf("cell %d: context %s × %d, %d streams here, launch in %v", sh.Seq, tokencount.Format(sh.ContextTokens), sh.Concurrency, sh.Streams,
		time.Until(local.Launch).Round(time.Millisecond))
	go func() {
		defer close(a.done)
		part := fleet.RunShare(sctx, f.client, local, &control{f: f, a: a})
		cancel(nil)
		f.report(ctx, a, part)
	}()
}

// hear takes the leader's news of the share in progress.
func (f *Follower) hear(resp pollResponse) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.share
	if a == nil || resp.Seq != a.seq {
		return
	}
	if !resp.Window.IsZero() && a.window.IsZero() && !windowFits(resp.Window.Add(f.clock.Offset), a.share) {
		f.logf("cell %d: the leader set a window at %s, not in the share's time: stopping the share", a.seq, resp.Window.Format(time.RFC3339Nano))
		a.stopped = true
		a.cancel(errors.New("the leader set a window outside the share's time"))
		return
	}
	if !resp.Window.IsZero() && a.window.IsZero() {
		a.window = resp.Window.Add(f.clock.Offset)
		f.logf("cell %d: the window opens in %v", a.seq, max(time.Until(a.window), 0).Round(time.Millisecond))
	}
	if resp.Stop != "" && !a.stopped {
		a.stopped = true
		a.cancel(errors.New(resp.Stop))
	}
}

// report sends a share's part to the leader, trying again until it is
// taken or the leader is silent too long.
func (f *Follower) report(ctx context.Context, a *active, part fleet.Result) {
	f.mu.Lock()
	in := reportRequest{Index: f.index, Seq: a.seq, Clock: f.clock, Part: part.Report}
	f.mu.Unlock()
	start := time.Now()
	for {
		rctx, cancel := context.WithTimeout(ctx, f.silence)
		err := post(rctx, f.hc, f.Token, f.run, f.Leader, pathReport, in, nil)
		cancel()
		if err == nil {
			f.mu.Lock()
			a.reported = true
			f.mu.Unlock()
			f.logf("cell %d: reported %d tokens in %v", a.seq, part.OutputTokens, time.Since(start).Round(time.Millisecond))
			return
		}
		if ctx.Err() != nil || time.Since(start) > f.silence {
			f.logf("cell %d: could not report (%v)", a.seq, err)
			return
		}
		if !sleep.For(ctx, 200*time.Millisecond) {
			return
		}
	}
}

// stopShare stops the share in progress, if any, and waits for it to end.
func (f *Follower) stopShare(why error) {
	f.mu.Lock()
	a := f.share
	f.mu.Unlock()
	if a == nil {
		return
	}
	if why == nil {
		why = errors.New("the run is over")
	}
	a.cancel(why)
	<-a.done
}

// offset returns the latest measure of the follower's clock offset.
func (f *Follower) offset() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clock.Offset
}

// control connects a running share to the leader.
type control struct {
	f *Follower
	a *active
}

// OnCell implements fleet.CellObserver with the Follower's OnCell.
func (c *control) OnCell(contextTokens, streams int, g *loadgen.Generator) {
	if c.f.OnCell != nil {
		c.f.OnCell(contextTokens, streams, g)
	}
}

// Ready implements [fleet.ShareControl]: it is sent with the next poll,
// at once.
func (c *control) Ready(reason string, queued, timedOut bool) {
	c.f.mu.Lock()
	c.a.ready = &ready{Reason: reason, Queued: queued, TimedOut: timedOut}
	c.f.mu.Unlock()
	select {
	case c.f.wake <- struct{}{}:
	default:
	}
}

// WindowStart implements [fleet.ShareControl].
func (c *control) WindowStart() (time.Time, bool) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	return c.a.window, !c.a.window.IsZero()
}
