package shard

import (
	"fmt"
	"time"

	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/internal/fleet"
)

// What a follower takes from a leader: it checks every order against its
// own bounds, and a leader that asks for more is not followed.
const (
	// maxShareTime bounds each of a share's durations (warm-up, its
	// timeout, the window): longer than any matrix cell runs.
	maxShareTime = 6 * time.Hour
	// maxLaunchAhead bounds how far ahead of now a launch may be set.
	maxLaunchAhead = time.Minute
)

// errLeader is an order no leader of this llmload gives.
type errLeader struct{ what string }

func (e *errLeader) Error() string {
	return "shard: the leader asked for " + e.what + ", beyond what a follower does"
}

// checkJoin checks a leader's answer to a join.
func checkJoin(r *joinResponse) error {
	switch s := time.Duration(r.Silence); {
	case r.Index < 1 || r.Index > maxFollowers:
		return &errLeader{fmt.Sprintf("shard index %d (followers are 1 to %d)", r.Index, maxFollowers)}
	case s < 0 || s > maxSilence:
		return &errLeader{fmt.Sprintf("a silence of %v (at most %v)", s, maxSilence)}
	}
	if err := r.Spec.Validate(); err != nil {
		return &errLeader{fmt.Sprintf("a spec that cannot run (%v)", err)}
	}
	return nil
}

// checkShare checks a share a leader gives, now being the leader's time.
func checkShare(sh *fleet.Share, now time.Time) error {
	bad := func(format string, args ...any) error { return &errLeader{fmt.Sprintf(format, args...)} }
	switch {
	case sh.Streams < 1 || sh.Streams > matrix.MaxStreams:
		return bad("%d streams (a process runs 1 to %d)", sh.Streams, matrix.MaxStreams)
	case sh.Concurrency < sh.Streams || sh.Concurrency > matrix.MaxStreams*maxFollowers:
		return bad("%d streams of a cell of %d", sh.Streams, sh.Concurrency)
	case sh.MaxTokens < 1 || sh.MaxTokens > fleet.MaxContextTokens:
		return bad("%d tokens a request", sh.MaxTokens)
	case sh.ContextTokens < 0 || sh.ContextTokens > fleet.MaxContextTokens:
		return bad("a context of %d tokens", sh.ContextTokens)
	case sh.Seq < 1:
		return bad("cell %d", sh.Seq)
	case sh.Launch.Sub(now) > maxLaunchAhead || now.Sub(sh.Launch) > maxLaunchAhead:
		return bad("a launch at %s, %v from now", sh.Launch.Format(time.RFC3339), sh.Launch.Sub(now).Round(time.Second))
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"warm-up", sh.WarmupMin}, {"flow", sh.Flow}, {"queue wait", sh.QueueAfter},
		{"warm-up timeout", sh.WarmupTimeout}, {"window", sh.Duration},
	} {
		if d.d < 0 || d.d > maxShareTime {
			return bad("a %s of %v (at most %v)", d.name, d.d, maxShareTime)
		}
	}
	if sh.Duration <= 0 {
		return bad("an empty window")
	}
	size := 0
	for _, u := range sh.Images {
		size += len(u)
	}
	if len(sh.Images) > fleet.MaxImages || size > fleet.MaxImageBytes {
		return bad("%d images of %d bytes (at most %d images of %d bytes)", len(sh.Images), size, fleet.MaxImages, fleet.MaxImageBytes)
	}
	if s := sh.SLO; s != nil && (s.TTFT < 0 || s.TPOT < 0 || s.Latency < 0 || s.TTFO < 0) {
		return bad("a negative SLO")
	}
	return nil
}

// windowFits reports whether a window's start, on the follower's clock,
// falls in the share's time: after its launch, no later than its warm-up
// and timeout allow.
func windowFits(start time.Time, sh fleet.Share) bool {
	return !start.Before(sh.Launch.Add(-time.Second)) &&
		!start.After(sh.Launch.Add(sh.WarmupMin+sh.WarmupTimeout+maxSilence))
}
