// Package rxstamp times the bytes read from a TCP connection by the
// kernel's receive timestamps (SO_TIMESTAMPNS, on Linux), so that a reader
// kept from its CPU still knows when each read's bytes arrived.
package rxstamp

import "time"

// A Source knows when the bytes its last read returned arrived.
type Source interface {
	LastArrival() time.Time
}

// Epoch anchors WallOffset: the wall clock's lead on the monotonic one is
// measured from it. Tests step it to stand for a step of the system clock.
var Epoch = time.Now()
