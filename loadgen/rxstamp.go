package loadgen

import (
	"net"

	"github.com/llmload/llmload/internal/rxstamp"
)

// stampConn turns on receive timestamps for c, a TCP connection, and
// returns it wrapped with the source of its arrival times. Where that is
// not possible (c is not TCP, the system gives none) it returns c as it is
// and nil: reads are then timed when they return.
func stampConn(c net.Conn) (net.Conn, arrivalSource) {
	if s, ok := rxstamp.New(c); ok {
		return s, s
	}
	return c, nil
}
