package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/internal/fleet"
)

// version is the protocol's version. A follower of another version is
// refused at join.
const version = "llmload.shard/v3"

// Timing of the protocol.
const (
	// pollWait is the longest a poll is held when the leader has nothing
	// to say.
	pollWait = time.Second
	// defaultSilence is how long a shard may go without a word from the
	// other side before it is taken for gone.
	defaultSilence = 5 * time.Second
	// DefaultJoinTimeout bounds the leader's wait for its followers before
	// the first cell, and a follower's attempts to reach its leader.
	DefaultJoinTimeout = 2 * time.Minute
	// launchDelay is how far ahead of a cell's start its launch is set:
	// time for every follower to hear of it and measure its clock.
	launchDelay = time.Second
	// windowDelay is how far ahead the window's start is set once every
	// shard's warm-up is done: time for every follower to hear of it.
	windowDelay = 500 * time.Millisecond
	// defaultReportTimeout bounds the wait for a live follower's part after
	// the window's end.
	defaultReportTimeout = 30 * time.Second
	// stopTimeout bounds the wait for the parts of a cell that was stopped
	// (the run interrupted, or the cell ended early), and, at the end of a
	// run, for the followers to hear that it is over.
	stopTimeout = 5 * time.Second
	// maxAnswer bounds a leader's answer: a share holds a prompt of up
	// to fleet.MaxContextTokens tokens, about 8 bytes each at most.
	maxAnswer = 8*fleet.MaxContextTokens + fleet.MaxImageBytes + 1<<20
	// maxRequest bounds a follower's request, but for a report.
	maxRequest = 16 << 10
	// maxReport bounds a follower's report: its part of a cell and the
	// envelope.
	maxReport = fleet.MaxReportBytes + 1<<10
	// maxFollowers bounds the followers a leader takes, and the joins it
	// records (a follower lost and back joins again).
	maxFollowers = 1024
	// maxSilence bounds the silence a leader asks a follower to keep to:
	// a follower whose leader is gone longer than this stops.
	maxSilence = time.Minute
	// interruptWait bounds the wait for the followers' parts of a cell
	// whose leader was interrupted: the run returns within about a second
	// of its context's end, keeping the parts that came by then.
	interruptWait = 500 * time.Millisecond
)

// ErrLeaderGone is returned by [Follower.Run] when the leader could not
// be reached for longer than the follower's Silence.
var ErrLeaderGone = errors.New("shard: the leader is gone")

// ErrRunOver is returned by [Follower.Run] when the leader's run was over
// before the follower could join it.
var ErrRunOver = errors.New("shard: the leader's run is over")

type helloRequest struct {
	Version string `json:"version"`
}

type helloResponse struct {
	Version string `json:"version"`
	// Run is the leader's run, which the follower signs into every
	// request after.
	Run string `json:"run"`
}

type joinRequest struct {
	Version string `json:"version"`
	Name    string `json:"name"`
}

type joinResponse struct {
	Index int         `json:"index"`
	Spec  matrix.Spec `json:"spec"`
	// Silence is the leader's: a follower silent this long is lost.
	Silence textDuration `json:"silence"`
}

// textDuration is a duration on the wire: text, as time.Duration.String
// writes and time.ParseDuration reads ("5s").
type textDuration time.Duration

func (d textDuration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d *textDuration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	*d = textDuration(v)
	return nil
}

type clockRequest struct {
	Sent time.Time `json:"t1"`
}

type clockResponse struct {
	Sent     time.Time `json:"t1"`
	Received time.Time `json:"t2"`
	Replied  time.Time `json:"t3"`
}

type pollRequest struct {
	Index int `json:"index"`
	// Seq is the cell the follower works on or last worked on; Window
	// that it knows the cell's window, Stopped that it knows it stopped.
	Seq     int  `json:"seq"`
	Window  bool `json:"window,omitempty"`
	Stopped bool `json:"stopped,omitempty"`
	// Ready, once the share's warm-up is done.
	Ready *ready `json:"ready,omitempty"`
	// Clock is the follower's latest measure of its clock.
	Clock clock `json:"clock"`
}

type ready struct {
	Reason   string `json:"reason"`
	Queued   bool   `json:"queued,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
}

type clock struct {
	Offset time.Duration `json:"offset_ns"`
	Error  time.Duration `json:"error_ns"`
}

type pollResponse struct {
	// Share is a new cell's share for the follower, times on the leader's
	// clock.
	Share *fleet.Share `json:"share,omitempty"`
	// Seq is the cell the rest is about.
	Seq int `json:"seq,omitempty"`
	// Window is the cell's window's start on the leader's clock, once set.
	Window time.Time `json:"window,omitzero"`
	// Stop says why the cell was stopped, if it was.
	Stop string `json:"stop,omitempty"`
	// Done says the run is over: the follower stops and exits.
	Done bool `json:"done,omitempty"`
	// Rejoin says the leader does not know the follower (it was lost):
	// it joins again.
	Rejoin string `json:"rejoin,omitempty"`
}

type reportRequest struct {
	Index int   `json:"index"`
	Seq   int   `json:"seq"`
	Clock clock `json:"clock"`
	// Part is the follower's report of its share (see fleet.RunShare),
	// which the leader's Runner reads and checks.
	Part json.RawMessage `json:"part"`
}

// Paths of the leader's endpoints.
const (
	pathHello  = "/shard/hello"
	pathJoin   = "/shard/join"
	pathClock  = "/shard/clock"
	pathPoll   = "/shard/poll"
	pathReport = "/shard/report"
)

// statusError is a leader's answer other than 200.
type statusError struct {
	Path       string
	StatusCode int
	Body       string
}

// Error says which request got which answer.
func (e *statusError) Error() string {
	return fmt.Sprintf("shard: %s: the leader answered %d: %s", e.Path, e.StatusCode, e.Body)
}

// post sends in as JSON to base+path, signed with token for the leader's
// run ("" for a hello), and decodes the leader's answer into out once its
// signature is checked.
func post(ctx context.Context, hc *http.Client, token, run, base, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("shard: %s: %w", path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("shard: %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	signRequest(req, token, run, b)
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("shard: %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return &statusError{Path: path, StatusCode: resp.StatusCode, Body: textsafe.Line(string(bytes.TrimSpace(msg)))}
	}
	d, err := checkResponse(resp, token, path, req.Header.Get(headerNonce))
	if err != nil {
		return err
	}
	body, err := readChecked(resp.Body, maxAnswer, d)
	if err != nil {
		return fmt.Errorf("shard: %s: the leader's answer: %w", path, err)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("shard: %s: the leader's answer: %w", path, err)
	}
	return nil
}
