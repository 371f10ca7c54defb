// Package watchdog cancels a request whose current phase (connecting,
// waiting for headers, for the first token, between tokens) has gone
// quiet for longer than that phase's deadline.
package watchdog

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A Phase is where a request is; each has its own deadline.
type Phase uint8

// The phases, in the order a request passes them; NumPhases counts them.
const (
	Connect Phase = iota // until the request is written
	Headers              // until the response headers
	First                // until the first token
	Stream               // between tokens
	NumPhases
)

// A Watchdog enforces the phase deadlines of one request with one timer. On the
// per-chunk path it only stores the time of the chunk; the timer, when it
// fires, works out whether the deadline really passed and re-arms itself if
// not.
type Watchdog struct {
	cancel   context.CancelCauseFunc
	timeouts [NumPhases]time.Duration
	errs     *[NumPhases]error // the cause of each phase's expiry
	epoch    time.Time         // the anchor of last

	last atomic.Int64 // nanoseconds since epoch of the last activity

	mu    sync.Mutex
	phase Phase
	timer *time.Timer
	done  bool
}

// New returns a Watchdog in phase Connect that calls cancel with errs[p]
// once phase p has seen no activity for timeouts[p] (0 or less: no
// deadline). Times are kept as durations since epoch.
func New(cancel context.CancelCauseFunc, timeouts [NumPhases]time.Duration, errs *[NumPhases]error, epoch time.Time) *Watchdog {
	w := &Watchdog{cancel: cancel, timeouts: timeouts, errs: errs, epoch: epoch}
	w.last.Store(int64(time.Since(epoch)))
	w.mu.Lock()
	w.timer = time.AfterFunc(w.arm(timeouts[Connect]), w.fire)
	w.mu.Unlock()
	return w
}

// arm returns d, or a very long time for "no deadline".
func (w *Watchdog) arm(d time.Duration) time.Duration {
	if d <= 0 {
		return 1<<63 - 1
	}
	return d
}

// Enter starts phase p; its deadline counts from now.
func (w *Watchdog) Enter(p Phase) {
	w.last.Store(int64(time.Since(w.epoch)))
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || p <= w.phase && p != Connect {
		return
	}
	w.phase = p
	w.timer.Reset(w.arm(w.timeouts[p]))
}

// Touch records activity at t: in the stream phase it pushes the stall
// deadline back.
func (w *Watchdog) Touch(t time.Time) {
	w.last.Store(int64(t.Sub(w.epoch)))
}

func (w *Watchdog) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	d := w.timeouts[w.phase]
	if d <= 0 {
		return
	}
	// In the stream phase, chunks push the deadline back; in the others,
	// the phase may have changed as the timer fired. Either way the
	// deadline counts from the last activity.
	if since := time.Since(w.epoch) - time.Duration(w.last.Load()); since < d {
		w.timer.Reset(d - since)
		return
	}
	w.done = true
	w.cancel(w.errs[w.phase])
}

func (w *Watchdog) Stop() {
	w.mu.Lock()
	w.done = true
	w.timer.Stop()
	w.mu.Unlock()
}
