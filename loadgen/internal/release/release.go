// Package release releases an open loop's arrivals on time.
package release

import (
	"context"
	"time"

	"github.com/llmload/llmload/internal/sleep"
)

// How an open loop releases its arrivals on time. Each arrival's request
// is made, and its goroutine started, a little ahead of its due time; the
// goroutine then waits on a gate, which the launcher opens at the due
// time. Arrivals due at the same instant share one gate, so a burst of N
// is released by one close of a channel rather than N goroutines starting
// one after another, and none of them waits on another's preparation.
const (
	// Lead is how long before its due time an arrival is made
	// ready.
	Lead = 5 * time.Millisecond
	// SameInstant is how close together arrivals must be due to share a
	// gate, released at the last one's due time: the others start at most
	// this late.
	SameInstant = 50 * time.Microsecond
	// spinMargin is how long before a gate's time the launcher stops
	// sleeping and watches the clock: it covers a thread's return from
	// the kernel to the runtime.
	spinMargin = 100 * time.Microsecond
)

// A Gate holds the arrivals due at one instant until it opens, at the
// latest due time among them.
type Gate struct {
	At     time.Time // when it opens
	ch     chan struct{}
	Opened bool // Open has opened it
}

// NewGate returns a closed gate that opens at at.
func NewGate(at time.Time) *Gate { return &Gate{At: at, ch: make(chan struct{})} }

// Open waits until the gate's time, or until ctx ends, and opens it; it
// reports whether the time came. It is called from one goroutine.
func (g *Gate) Open(ctx context.Context) bool {
	if g.Opened {
		return true
	}
	if !waitUntil(ctx, g.At) {
		return false
	}
	g.Opened = true
	close(g.ch)
	return true
}

// Wait waits for the gate to open, or ctx to end; it reports whether it
// opened.
func (g *Gate) Wait(ctx context.Context) bool {
	select {
	case <-g.ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// waitUntil returns at t, as closely as it can, or when ctx ends; it
// reports whether t came. It sleeps on the runtime's timer until
// FineMargin before t, then in the kernel to a deadline (sleepUntil),
// then watches the clock for the last tens of microseconds.
//
// The runtime's timer is not trusted for the last stretch: it fires from
// the runtime's scheduler, which on a loaded machine may leave a woken
// goroutine in a run queue behind others (behind the collector's mark
// worker, for one) for tens of milliseconds, and an allocation on waking
// may make the goroutine help the collector first. A thread sleeping in
// the kernel is woken by the kernel, and waits only for a CPU.
func waitUntil(ctx context.Context, t time.Time) bool {
	if !sleep.For(ctx, time.Until(t)-FineMargin) {
		return false
	}
	sleepUntil(t.Add(-spinMargin))
	for time.Now().Before(t) {
	}
	return ctx.Err() == nil
}
