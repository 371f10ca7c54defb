//go:build !linux

package rxstamp

import (
	"net"
	"time"
)

// Conn would read a TCP connection with the kernel's receive timestamps:
// this system gives none, and New never makes one.
type Conn struct{ net.Conn }

// New returns nil and false: this system gives no receive timestamps.
func New(net.Conn) (*Conn, bool) { return nil, false }

// LastArrival returns the zero time.
func (*Conn) LastArrival() time.Time { return time.Time{} }

// Stamped returns false.
func (*Conn) Stamped() bool { return false }
