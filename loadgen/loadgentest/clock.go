package loadgentest

import "time"

// The simulator keeps the instants it stores as integers (for atomic
// access and compact records) as nanoseconds on the monotonic clock since
// epoch, not as Unix nanoseconds: a wall clock stepped while a request runs
// (NTP's first sync, a virtual machine resumed) must not move one of its
// times against another, nor against the times a client takes with
// time.Now. Times given back carry the monotonic reading, so they subtract
// correctly from a client's; their wall clock reading is epoch's plus the
// monotonic time since.

// epoch is a second before the package was loaded, so that no stored
// instant is zero, which means "not yet".
var epoch = time.Now().Add(-time.Second)

// monoNanos returns t as nanoseconds since epoch on the monotonic clock.
func monoNanos(t time.Time) int64 { return int64(t.Sub(epoch)) }

// monoTime returns the instant ns nanoseconds after epoch, or the zero
// time for 0.
func monoTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return epoch.Add(time.Duration(ns))
}
