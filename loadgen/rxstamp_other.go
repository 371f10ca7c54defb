//go:build !linux

package loadgen

import "net"

// stampConn cannot take receive timestamps on this system: reads are timed
// when they return.
func stampConn(c net.Conn) (net.Conn, arrivalSource) { return c, nil }
