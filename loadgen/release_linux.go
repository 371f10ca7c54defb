package loadgen

import (
	"syscall"
	"time"
	"unsafe"
)

// Linux's clock_nanosleep arguments: the clock the runtime's own
// monotonic readings come from, and a deadline rather than a duration.
const (
	clockMonotonic = 1
	timerAbstime   = 1
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
	var now syscall.Timespec
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&now)), 0); e != 0 {
		for time.Now().Before(t) {
		}
		return
	}
	d := time.Until(t)
	if d <= 0 {
		return
	}
	deadline := syscall.NsecToTimespec(now.Nano() + int64(d))
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_CLOCK_NANOSLEEP, clockMonotonic, timerAbstime, uintptr(unsafe.Pointer(&deadline)), 0, 0, 0)
		if e != syscall.EINTR {
			return
		}
	}
}

// fineMargin is how long before a gate's time the launcher stops sleeping
// on the runtime's timer and sleeps in the kernel instead (see waitUntil):
// as long as an arrival is made ready ahead, so that a launcher woken late
// by the runtime still has the kernel's sleep to absorb it.
const fineMargin = releaseLead
