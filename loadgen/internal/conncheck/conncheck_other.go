//go:build !linux

package conncheck

import "net"

// Open cannot look at the socket on this system; the idle timeout alone
// retires connections.
func Open(net.Conn) bool { return true }
