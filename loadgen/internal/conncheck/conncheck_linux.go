// Package conncheck tells whether a server has closed an idle connection.
package conncheck

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Open reports whether the server has left an idle connection open: a
// peek that must not block finds neither the end of the stream nor stray
// bytes. (A TLS connection may hold a session ticket; only its end counts.)
func Open(c net.Conn) bool {
	isTLS := false
	if tc, ok := c.(*tls.Conn); ok {
		c, isTLS = tc.NetConn(), true
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		switch {
		case n > 0:
			open = isTLS
		case errors.Is(err, unix.EAGAIN):
			open = true
		}
		return true
	})
	return err == nil && open
}
