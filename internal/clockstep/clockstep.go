// Package clockstep makes the times a process would read after its system
// clock was stepped (NTP's first sync, a virtual machine resumed), for
// tests of code that must keep a request's times on one clock.
package clockstep

import (
	"time"
	"unsafe"
)

// Wall returns at moved by d on the wall clock alone, as time.Now reads
// it after the system clock was stepped by d: its monotonic reading is
// at's. ok is false where time.Time is laid out otherwise or at has no
// monotonic reading; the caller then has nothing to test.
func Wall(at time.Time, d time.Duration) (stepped time.Time, ok bool) {
	s := at.Add(d)
	// A time.Time is {wall uint64; ext int64; loc}; with a monotonic
	// reading, ext holds it.
	(*[2]int64)(unsafe.Pointer(&s))[1] = (*[2]int64)(unsafe.Pointer(&at))[1]
	return s, s.Sub(at) == 0 && s.UnixNano()-at.UnixNano() == int64(d)
}
