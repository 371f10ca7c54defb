package connlimit

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestListenerBoundsConnections: beyond MaxConnsAHost from one address,
// or MaxConns in all, a connection is closed as it is accepted; one
// closed makes room for the next.
func TestListenerBoundsConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	bounded := Bounds{MaxConns: 3, MaxConnsAHost: 2}.Listener(ln)
	accepted := make(chan net.Conn, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := bounded.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	defer func() {
		bounded.Close()
		<-done
		close(accepted)
		for c := range accepted {
			c.Close()
		}
	}()
	// dial connects from ip and reports whether the connection is held
	// (the server neither closed it nor wrote, within 300 ms).
	dial := func(ip string) (net.Conn, bool) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err = c.Read(make([]byte, 1))
		var ne net.Error
		return c, errors.As(err, &ne) && ne.Timeout()
	}
	_, held := dial("127.0.0.1")
	assert.True(t, held, "the first from 127.0.0.1")
	_, held = dial("127.0.0.1")
	assert.True(t, held, "the second from 127.0.0.1")
	_, held = dial("127.0.0.1")
	assert.False(t, held, "a third from 127.0.0.1 is beyond MaxConnsAHost")
	_, held = dial("127.0.0.2")
	assert.True(t, held, "the first from 127.0.0.2")
	_, held = dial("127.0.0.2")
	assert.False(t, held, "a fourth in all is beyond MaxConns")

	(<-accepted).Close() // the server closes one of 127.0.0.1's
	_, held = dial("127.0.0.1")
	assert.True(t, held, "room for one more")
}
