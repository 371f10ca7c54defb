package loadgen

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A request passes through these phases, each with its own deadline.
type phase uint8

const (
	phaseConnect phase = iota // until the request is written
	phaseHeaders              // until the response headers
	phaseFirst                // until the first token
	phaseStream               // between tokens
	numPhases
)

var phaseErrors = [numPhases]error{errConnectTimeout, errHeaderTimeout, errFirstTokenTimeout, errStall}

// watchdog enforces the phase deadlines of one request with one timer. On the
// per-chunk path it only stores the time of the chunk; the timer, when it
// fires, works out whether the deadline really passed and re-arms itself if
// not.
type watchdog struct {
	cancel   context.CancelCauseFunc
	timeouts [numPhases]time.Duration

	last atomic.Int64 // nanoseconds since epoch of the last activity

	mu    sync.Mutex
	phase phase
	timer *time.Timer
	done  bool
}

func newWatchdog(cancel context.CancelCauseFunc, timeouts [numPhases]time.Duration) *watchdog {
	w := &watchdog{cancel: cancel, timeouts: timeouts}
	w.last.Store(int64(time.Since(epoch)))
	w.mu.Lock()
	w.timer = time.AfterFunc(w.arm(timeouts[phaseConnect]), w.fire)
	w.mu.Unlock()
	return w
}

// arm returns d, or a very long time for "no deadline".
func (w *watchdog) arm(d time.Duration) time.Duration {
	if d <= 0 {
		return 1<<63 - 1
	}
	return d
}

// enter starts phase p; its deadline counts from now.
func (w *watchdog) enter(p phase) {
	w.last.Store(int64(time.Since(epoch)))
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || p <= w.phase && p != phaseConnect {
		return
	}
	w.phase = p
	w.timer.Reset(w.arm(w.timeouts[p]))
}

// touch records activity at t: in the stream phase it pushes the stall
// deadline back.
func (w *watchdog) touch(t time.Time) {
	w.last.Store(int64(t.Sub(epoch)))
}

func (w *watchdog) fire() {
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
	if since := time.Since(epoch) - time.Duration(w.last.Load()); since < d {
		w.timer.Reset(d - since)
		return
	}
	w.done = true
	w.cancel(phaseErrors[w.phase])
}

func (w *watchdog) stop() {
	w.mu.Lock()
	w.done = true
	w.timer.Stop()
	w.mu.Unlock()
}
