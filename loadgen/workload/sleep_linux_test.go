package workload_test

import (
	"syscall"
	"time"
	"unsafe"
)

// sleepUntil sleeps in the kernel until t, an absolute deadline on the
// monotonic clock, as a C program would.
func sleepUntil(t time.Time) {
	var now syscall.Timespec
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&now)), 0); e != 0 {
		time.Sleep(time.Until(t))
		return
	}
	d := time.Until(t)
	if d <= 0 {
		return
	}
	deadline := syscall.NsecToTimespec(now.Nano() + int64(d))
	for {
		// CLOCK_MONOTONIC (1), TIMER_ABSTIME (1).
		if _, _, e := syscall.Syscall6(syscall.SYS_CLOCK_NANOSLEEP, 1, 1, uintptr(unsafe.Pointer(&deadline)), 0, 0, 0); e != syscall.EINTR {
			return
		}
	}
}
