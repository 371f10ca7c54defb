package release

import (
	"time"

	"golang.org/x/sys/unix"
)

// sleepUntil sleeps in the kernel until t, which is at most a few
// milliseconds away. The kernel wakes the thread at the deadline itself:
// no runtime timer has to fire and no goroutine has to be scheduled for
// it, so a process whose goroutines keep the runtime busy (or whose
// collector is marking) still wakes on time, as far as the machine gives
// the thread a CPU. The deadline is absolute, so a thread that was
// stopped between reading the clock and sleeping does not sleep the
// longer for it. It allocates nothing, so it never waits to help the
// collector.
func sleepUntil(t time.Time) {
	// CLOCK_MONOTONIC is the clock the runtime's own monotonic readings
	// come from; TIMER_ABSTIME makes the sleep's end a deadline.
	var now unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &now) != nil {
		for time.Now().Before(t) {
		}
		return
	}
	d := time.Until(t)
	if d <= 0 {
		return
	}
	deadline := unix.NsecToTimespec(now.Nano() + int64(d))
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &deadline, nil) == unix.EINTR {
	}
}

// FineMargin is how long before a gate's time the launcher stops sleeping
// on the runtime's timer and sleeps in the kernel instead (see waitUntil):
// as long as an arrival is made ready ahead, so that a launcher woken late
// by the runtime still has the kernel's sleep to absorb it.
const FineMargin = Lead
