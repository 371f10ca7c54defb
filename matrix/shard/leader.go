package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmload/llmload/internal/redact"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/internal/fleet"
)

// Leader leads a sharded run. It is the fleet.Fleet of the run's
// [matrix.Runner] and the [http.Handler] its followers join: serve it on
// an address the followers reach, set it as the Runner's Fleet, run, then
// Close it.
//
// Set the fields before serving; the Leader is safe for concurrent use.
type Leader struct {
	// Spec is sent to the followers as they join; its URL's password is
	// not (a follower that needs one is given the URL itself).
	Spec matrix.Spec
	// Followers is how many followers the first cell waits for, at most
	// JoinTimeout; cells run with the followers that have joined.
	Followers int
	// JoinTimeout bounds the wait for Followers before the first cell; 0
	// means DefaultJoinTimeout.
	JoinTimeout time.Duration
	// Silence is how long a follower may go without a word before it is
	// lost; 0 means defaultSilence.
	Silence time.Duration
	// ReportTimeout bounds the wait for a live follower's part after the
	// window's end; 0 means defaultReportTimeout.
	ReportTimeout time.Duration
	// Token is the fleet's shared secret, at least MinTokenLen bytes:
	// every follower's request must be signed with it, and every answer
	// is. Required; [NewToken] makes one. A follower's requests are
	// signed for this Leader's run alone (a random id it makes), so that
	// one recorded from another Leader of the same Token is refused.
	Token string
	// Log receives a line when a follower joins or is lost, or a request
	// is refused; nil is silent.
	Log io.Writer

	once    sync.Once
	created time.Time
	run     string // this leader's run, random: what every request but a hello is signed for

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change; guarded by mu
	followers []*follower   // by index; guarded by mu
	cell      *cell         // the cell in progress, if any; guarded by mu
	done      bool          // the run is over; guarded by mu
	waited    bool          // the first cell waited for the followers; guarded by mu

	nonces     nonces
	servers    []*http.Server // of Serve; guarded by mu
	refusals   int            // requests refused; guarded by mu
	refusedLog time.Time      // when a refusal was last logged; guarded by mu
}

// follower is the leader's record of one follower.
type follower struct {
	index    int
	name     string
	lastSeen time.Time
	clock    clock
	lost     string // why it was lost; it is then out of the run
	sawDone  bool
}

// cell is a cell in progress on the fleet.
type cell struct {
	l       *Leader
	share   fleet.Share            // the leader's, on its clock
	shares  map[int]fleet.Share    // the followers' by index
	ready   map[int]bool           // by index, the leader's at 0
	parts   map[int]*reportRequest // by index
	lost    map[int]string         // followers lost in this cell, by index
	window  time.Time              // the window's start, once set
	stopped string                 // why the cell was stopped, if it was
	stopAt  time.Time
	ctx     context.Context // the cell's, on the leader
	stopCtx func() bool
	ended   chan struct{} // closed when the cell ends
	endOnce sync.Once
}

func (l *Leader) init() {
	l.once.Do(func() {
		l.created = time.Now()
		l.run = newNonce()
		l.changed = make(chan struct{})
	})
}

// broadcast wakes every waiter; l.mu is held.
func (l *Leader) broadcast() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *Leader) silence() time.Duration {
	if l.Silence > 0 {
		return l.Silence
	}
	return defaultSilence
}

func (l *Leader) logf(format string, args ...any) {
	if l.Log != nil {
		fmt.Fprintln(l.Log, textsafe.Line(fmt.Sprintf(format, args...)))
	}
}

// ServeHTTP answers the followers. A request is refused before its body
// is read unless it is signed with the Token (401, and the connection
// closed), and its body is read only up to its path's bound (413 beyond).
func (l *Leader) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.init()
	if r.Method != http.MethodPost {
		refuse(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	limit := int64(maxRequest)
	switch r.URL.Path {
	case pathHello, pathClock, pathJoin, pathPoll:
	case pathReport:
		limit = maxReport
	default:
		refuse(w, "404 page not found", http.StatusNotFound)
		return
	}
	if err := checkToken(l.Token); err != nil {
		refuse(w, "the leader has no token", http.StatusServiceUnavailable)
		return
	}
	received := time.Now()
	if err := l.checkRequest(r, received); err != nil {
		l.refused(r, err)
		refuse(w, err.Error(), http.StatusUnauthorized)
		return
	}
	body, err := bodyOf(w, r, limit)
	if err != nil {
		code := http.StatusBadRequest
		if _, ok := err.(*tooLarge); ok {
			code = http.StatusRequestEntityTooLarge
		}
		l.refused(r, err)
		refuse(w, err.Error(), code)
		return
	}
	var out any
	switch r.URL.Path {
	case pathHello:
		var in helloRequest
		if err = decode(r, body, &in); err == nil {
			out = &helloResponse{Version: version, Run: l.run}
		}
	case pathClock:
		var in clockRequest
		if err = decode(r, body, &in); err == nil {
			out = &clockResponse{Sent: in.Sent, Received: received}
		}
	case pathJoin:
		var in joinRequest
		if err = decode(r, body, &in); err == nil {
			out, err = l.join(in)
		}
	case pathPoll:
		var in pollRequest
		if err = decode(r, body, &in); err == nil {
			out = l.poll(r.Context(), in)
		}
	case pathReport:
		var in reportRequest
		if err = decode(r, body, &in); err == nil {
			err = l.report(in)
			out = struct{}{}
		}
	}
	if err != nil {
		code := http.StatusBadRequest
		switch {
		case errors.Is(err, ErrRunOver):
			code = http.StatusGone
		case errors.Is(err, errFull):
			code = http.StatusTooManyRequests
		}
		refuse(w, err.Error(), code)
		return
	}
	if c, ok := out.(*clockResponse); ok {
		c.Replied = time.Now()
	}
	b, err := json.Marshal(out)
	if err != nil {
		refuse(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	signResponse(w.Header(), l.Token, r.URL.Path, r.Header.Get(headerNonce), b)
	_, _ = w.Write(b)
}

// refuse answers a request with an error and closes its connection.
func refuse(w http.ResponseWriter, msg string, code int) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
}

// refused logs a refused request, at most once a second.
func (l *Leader) refused(r *http.Request, err error) {
	l.mu.Lock()
	now := time.Now()
	l.refusals++
	if now.Sub(l.refusedLog) < time.Second {
		l.mu.Unlock()
		return
	}
	l.refusedLog = now
	n := l.refusals
	l.mu.Unlock()
	l.logf("refused %s %s from %s: %v (%d refused so far)", r.Method, r.URL.Path, r.RemoteAddr, err, n)
}

func decode(r *http.Request, body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("shard: %s: a malformed message: %w", r.URL.Path, err)
	}
	return nil
}

// errFull is a join beyond maxFollowers.
var errFull = fmt.Errorf("shard: the run has taken %d followers, its most", maxFollowers)

func (l *Leader) join(in joinRequest) (*joinResponse, error) {
	if in.Version != version {
		return nil, fmt.Errorf("shard: the follower speaks %q, the leader %q: run the same llmload on every shard", clip(in.Version), version)
	}
	if len(in.Name) > fleet.MaxNameBytes {
		return nil, fmt.Errorf("shard: the follower's name is %d bytes, above %d", len(in.Name), fleet.MaxNameBytes)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return nil, ErrRunOver
	}
	if len(l.followers) >= maxFollowers {
		return nil, errFull
	}
	f := &follower{index: len(l.followers) + 1, name: in.Name, lastSeen: time.Now()}
	l.followers = append(l.followers, f)
	l.broadcast()
	l.logf("shard %d (%s) joined", f.index, in.Name)
	spec := l.Spec
	spec.URL = redact.URL(spec.URL)
	return &joinResponse{Index: f.index, Spec: spec, Silence: textDuration(l.silence())}, nil
}

// member returns the follower of an index, nil if unknown or lost; l.mu
// is held.
func (l *Leader) member(index int) *follower {
	if index < 1 || index > len(l.followers) {
		return nil
	}
	if f := l.followers[index-1]; f.lost == "" {
		return f
	}
	return nil
}

// poll answers a follower's poll: at once when the leader has news for
// it, else when some comes, at most pollWait later.
func (l *Leader) poll(ctx context.Context, in pollRequest) *pollResponse {
	timer := time.NewTimer(pollWait)
	defer timer.Stop()
	for {
		l.mu.Lock()
		f := l.member(in.Index)
		if f == nil {
			why := "unknown follower"
			if in.Index >= 1 && in.Index <= len(l.followers) {
				why = l.followers[in.Index-1].lost
			}
			l.mu.Unlock()
			if l.isDone() {
				return &pollResponse{Done: true}
			}
			return &pollResponse{Rejoin: why}
		}
		f.lastSeen = time.Now()
		f.clock = in.Clock
		if in.Ready != nil && l.cell != nil && l.cell.seq() == in.Seq {
			l.cell.setReady(in.Index)
		}
		out := l.news(f, in)
		changed := l.changed
		l.mu.Unlock()
		if out != nil {
			return out
		}
		select {
		case <-changed:
		case <-timer.C:
			return &pollResponse{}
		case <-ctx.Done():
			return &pollResponse{}
		}
	}
}

func (l *Leader) isDone() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
}

// news returns what the leader has to tell a follower that it does not
// know yet, or nil; l.mu is held.
func (l *Leader) news(f *follower, in pollRequest) *pollResponse {
	if l.done {
		f.sawDone = true
		return &pollResponse{Done: true}
	}
	c := l.cell
	if c == nil {
		return nil
	}
	sh, ok := c.shares[f.index]
	if !ok || c.lost[f.index] != "" {
		return nil
	}
	if in.Seq < sh.Seq {
		return &pollResponse{Share: &sh}
	}
	if in.Seq != sh.Seq {
		return nil
	}
	out := &pollResponse{Seq: sh.Seq}
	news := false
	if !c.window.IsZero() && !in.Window {
		out.Window, news = c.window, true
	}
	if c.stopped != "" && !in.Stopped {
		out.Stop, news = c.stopped, true
	}
	if !news {
		return nil
	}
	return out
}

func (l *Leader) report(in reportRequest) error {
	if len(in.Part) == 0 {
		return fmt.Errorf("shard: a report of cell %d without its part", in.Seq)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.member(in.Index)
	if f == nil {
		return fmt.Errorf("shard: a report from follower %d, which is not in the run", in.Index)
	}
	f.lastSeen = time.Now()
	f.clock = in.Clock
	c := l.cell
	if c == nil || c.seq() != in.Seq {
		return nil // a cell already collected: too late
	}
	if _, ok := c.shares[in.Index]; !ok || c.lost[in.Index] != "" {
		return nil
	}
	c.parts[in.Index] = &in
	l.broadcast()
	return nil
}

// lose takes a follower out of the run; l.mu is held.
func (l *Leader) lose(f *follower, why string) {
	if f.lost != "" {
		return
	}
	f.lost = why
	if c := l.cell; c != nil {
		if _, ok := c.shares[f.index]; ok && c.parts[f.index] == nil {
			c.lost[f.index] = why
			delete(c.ready, f.index)
			c.checkReady()
		}
	}
	l.broadcast()
	l.logf("shard %d (%s) lost: %s", f.index, f.name, why)
}

// sweep loses the followers that have been silent too long; l.mu is held.
func (l *Leader) sweep(now time.Time) {
	for _, f := range l.followers {
		if f.lost == "" && now.Sub(f.lastSeen) > l.silence() {
			l.lose(f, fmt.Sprintf("no word from it for %v (since %s)", now.Sub(f.lastSeen).Round(100*time.Millisecond), f.lastSeen.UTC().Format("15:04:05.000")))
		}
	}
}

// Shards implements fleet.Fleet: the leader and the Followers it waits
// for.
func (l *Leader) Shards() int { return 1 + max(l.Followers, 0) }

// StartCell implements fleet.Fleet: it waits (before the first cell)
// for the followers, splits the cell's streams among the leader and the
// live followers, and sets the launch launchDelay ahead.
func (l *Leader) StartCell(ctx context.Context, sh fleet.Share) (fleet.Cell, error) {
	l.init()
	if err := checkToken(l.Token); err != nil {
		return nil, err
	}
	if l.Followers >= maxFollowers {
		return nil, fmt.Errorf("shard: Leader.Followers is %d; a run takes at most %d", l.Followers, maxFollowers-1)
	}
	if err := l.waitFollowers(ctx); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return nil, ErrRunOver
	}
	if c := l.cell; c != nil {
		// A cell the Runner left without collecting it: it is over.
		if c.stopped == "" {
			c.stopped, c.stopAt = "the leader left the cell", time.Now()
		}
		c.end()
	}
	l.sweep(time.Now())
	var live []*follower
	for _, f := range l.followers {
		if f.lost == "" {
			live = append(live, f)
		}
	}
	split := fleet.Split(sh.Concurrency, 1+len(live))
	if split[0] > matrix.MaxStreams {
		return nil, fmt.Errorf("shard: %d streams over %s (of %d planned) are %d a shard, above %d, the most one process runs with honest timing",
			sh.Concurrency, shardCount(1+len(live)), l.Shards(), split[0], matrix.MaxStreams)
	}
	sh.Launch = time.Now().Add(launchDelay).Round(0)
	c := &cell{l: l, shares: map[int]fleet.Share{}, ready: map[int]bool{},
		parts: map[int]*reportRequest{}, lost: map[int]string{}, ended: make(chan struct{})}
	c.share = sh
	c.share.Streams = split[0]
	c.ready[0] = false
	for i, f := range live {
		if split[i+1] == 0 {
			continue // fewer streams than shards
		}
		s := sh
		s.Streams = split[i+1]
		c.shares[f.index] = s
		c.ready[f.index] = false
	}
	c.ctx = ctx
	c.stopCtx = context.AfterFunc(ctx, func() { c.stop(c.stopReason()) })
	l.cell = c
	l.broadcast()
	go c.watch()
	return c, nil
}

func shardCount(n int) string {
	if n == 1 {
		return "1 shard"
	}
	return fmt.Sprintf("%d shards", n)
}

// waitFollowers waits, before the first cell, until Followers have joined
// or JoinTimeout has passed since the leader started.
func (l *Leader) waitFollowers(ctx context.Context) error {
	l.mu.Lock()
	if l.waited {
		l.mu.Unlock()
		return nil
	}
	l.waited = true
	l.mu.Unlock()
	timeout := l.JoinTimeout
	if timeout <= 0 {
		timeout = DefaultJoinTimeout
	}
	deadline := time.NewTimer(time.Until(l.created.Add(timeout)))
	defer deadline.Stop()
	logged := false
	for {
		l.mu.Lock()
		joined := 0
		for _, f := range l.followers {
			if f.lost == "" {
				joined++
			}
		}
		changed := l.changed
		l.mu.Unlock()
		if joined >= l.Followers {
			return nil
		}
		if !logged {
			l.logf("waiting for %d more followers (at most until %s)", l.Followers-joined, l.created.Add(timeout).Format("15:04:05"))
			logged = true
		}
		select {
		case <-changed:
		case <-deadline.C:
			l.logf("%d of %d followers joined in %v; the cells run with them", joined, l.Followers, timeout)
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

func (c *cell) seq() int { return c.share.Seq }

func (c *cell) stopReason() string {
	return fmt.Sprintf("the leader stopped the cell: %v", context.Cause(c.ctx))
}

// end ends the cell: its watch returns; l.mu is held.
func (c *cell) end() {
	c.endOnce.Do(func() {
		close(c.ended)
		if c.l.cell == c {
			c.l.cell = nil
		}
		c.l.broadcast()
	})
}

// Own implements [fleet.Cell].
func (c *cell) Own() fleet.Share { return c.share }

// Ready implements [fleet.ShareControl] for the leader's share.
func (c *cell) Ready(string, bool, bool) {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.setReady(0)
}

// setReady records that a shard's warm-up is done; l.mu is held.
func (c *cell) setReady(index int) {
	if _, ok := c.ready[index]; !ok {
		return
	}
	c.ready[index] = true
	c.checkReady()
}

// checkReady sets the window's start once every shard still in the cell
// is ready; l.mu is held.
func (c *cell) checkReady() {
	if !c.window.IsZero() || c.stopped != "" {
		return
	}
	for _, r := range c.ready {
		if !r {
			return
		}
	}
	c.window = time.Now().Add(windowDelay).Round(0)
	c.l.broadcast()
}

// WindowStart implements [fleet.ShareControl] for the leader's share.
func (c *cell) WindowStart() (time.Time, bool) {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	return c.window, !c.window.IsZero()
}

func (c *cell) stop(why string) {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.stopped == "" {
		c.stopped, c.stopAt = why, time.Now()
		c.l.broadcast()
	}
}

// readyDeadline is when a follower that has not said its warm-up is done
// is dropped: its own timeout has passed, and the silence after it.
func (c *cell) readyDeadline() time.Time {
	return c.share.Launch.Add(time.Duration(c.share.WarmupMin) + time.Duration(c.share.WarmupTimeout) + c.l.silence())
}

// watch loses the followers that fall silent while the cell runs, and the
// ones not ready long after the warm-up's timeout, until the cell ends.
func (c *cell) watch() {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-c.ended:
			return
		case now := <-t.C:
			l := c.l
			l.mu.Lock()
			l.sweep(now)
			if c.window.IsZero() && c.stopped == "" && now.After(c.readyDeadline()) {
				for i, r := range c.ready {
					if !r && i > 0 {
						l.lose(l.followers[i-1], fmt.Sprintf("its warm-up was not done %v after its timeout", l.silence()))
					}
				}
			}
			l.mu.Unlock()
		}
	}
}

// Collect implements [fleet.Cell]: it waits for every follower's
// part, or for it to be lost, at most ReportTimeout after the window's end
// (stopTimeout after a stop), and ends the cell.
func (c *cell) Collect(ctx context.Context) []fleet.Part {
	l := c.l
	c.stopCtx()
	switch {
	case c.ctx.Err() != nil:
		c.stop(c.stopReason())
	default:
		if _, open := c.WindowStart(); !open {
			c.stop("the leader's share ended before the window opened")
		}
	}
	reportTimeout := l.ReportTimeout
	if reportTimeout <= 0 {
		reportTimeout = defaultReportTimeout
	}
	var interrupted time.Time // when ctx ended
	done := ctx.Done()
	for {
		l.mu.Lock()
		now := time.Now()
		deadline, late := c.stopAt.Add(stopTimeout), fmt.Sprintf("no part of cell %d within %v of its stop", c.seq(), stopTimeout)
		if c.stopped == "" {
			deadline = c.window.Add(time.Duration(c.share.Duration) + reportTimeout)
			late = fmt.Sprintf("no part of cell %d within %v of its window's end", c.seq(), reportTimeout)
		}
		if ctx.Err() != nil {
			// The leader's run is over: a live follower's part of the
			// interrupted cell is worth interruptWait, no more.
			if interrupted.IsZero() {
				interrupted = now
			}
			if d := interrupted.Add(interruptWait); d.Before(deadline) {
				deadline, late = d, fmt.Sprintf("no part of cell %d within %v of the leader's interruption", c.seq(), interruptWait)
			}
		}
		waiting := 0
		for i := range c.shares {
			if c.parts[i] == nil && c.lost[i] == "" {
				if now.After(deadline) {
					l.lose(l.followers[i-1], late)
					continue
				}
				waiting++
			}
		}
		changed := l.changed
		if waiting == 0 {
			out := c.result()
			c.end()
			l.mu.Unlock()
			return out
		}
		l.mu.Unlock()
		wait := time.NewTimer(min(time.Until(deadline)+time.Millisecond, 250*time.Millisecond))
		select {
		case <-changed:
		case <-wait.C:
		case <-done:
			c.stop("the leader stopped waiting: " + context.Cause(ctx).Error())
			done = nil // from now on the deadline is interruptWait away
		}
		wait.Stop()
	}
}

// result returns the followers' parts; l.mu is held.
func (c *cell) result() []fleet.Part {
	idx := make([]int, 0, len(c.shares))
	for i := range c.shares {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	out := make([]fleet.Part, 0, len(idx))
	for _, i := range idx {
		f := c.l.followers[i-1]
		sp := fleet.Part{Index: i, Name: f.name, Streams: c.shares[i].Streams}
		ck := f.clock
		if p := c.parts[i]; p != nil {
			sp.Report = p.Part
			ck = p.Clock
		} else {
			sp.Lost = c.lost[i]
		}
		sp.ClockOffset, sp.ClockError = ck.Offset, ck.Error
		out = append(out, sp)
	}
	return out
}

// Close ends the run: every follower is told, at its next poll, that the
// run is over, and Close waits for each live one to hear it, at most five
// seconds or until ctx ends, then stops the servers of Serve. Followers
// that join later are refused.
func (l *Leader) Close(ctx context.Context) {
	l.init()
	l.mu.Lock()
	l.done = true
	if c := l.cell; c != nil {
		if c.stopped == "" {
			c.stopped, c.stopAt = "the run is over", time.Now()
		}
		c.end()
	}
	l.broadcast()
	l.mu.Unlock()
	defer l.shutdown(ctx) // the servers of Serve, once the followers have heard
	deadline := time.NewTimer(stopTimeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		var waiting []string
		for _, f := range l.followers {
			if f.lost == "" && !f.sawDone && time.Since(f.lastSeen) <= l.silence() {
				waiting = append(waiting, fmt.Sprint(f.index))
			}
		}
		changed := l.changed
		l.mu.Unlock()
		if len(waiting) == 0 {
			return
		}
		tick := time.NewTimer(100 * time.Millisecond)
		select {
		case <-changed:
		case <-tick.C:
		case <-deadline.C:
			tick.Stop()
			l.logf("shards %s did not hear that the run is over within %v", strings.Join(waiting, ", "), stopTimeout)
			return
		case <-ctx.Done():
			tick.Stop()
			return
		}
		tick.Stop()
	}
}

// clip cuts a peer's text for an error.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
