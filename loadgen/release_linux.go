package loadgen

import (
	"syscall"
	"time"
)

// waitFine sleeps d, at most about a millisecond, in the kernel: its
// timer wakes a thread within tens of microseconds, where the runtime's
// may wake a goroutine up to a millisecond late.
func waitFine(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
