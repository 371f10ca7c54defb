// Package conncheck tells whether a server has closed an idle connection.
package conncheck

import (
	"crypto/tls"
	"net"
	"syscall"
	"unsafe"

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
		// recvfrom without an address (x/sys/unix's Recvfrom would make
		// one on the heap).
		n, _, e := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1, unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
		switch {
		case e == 0 && n > 0:
			open = isTLS
		case e == unix.EAGAIN:
			open = true
		}
		return true
	})
	return err == nil && open
}
