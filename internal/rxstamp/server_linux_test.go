package rxstamp

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// slowListener hands each connection it accepts over after delay: the
// bytes a client sent meanwhile wait in the socket.
type slowListener struct {
	net.Listener
	delay atomic.Int64 // nanoseconds
}

func (l *slowListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	time.Sleep(time.Duration(l.delay.Load()))
	return c, err
}

// handled is a request as its handler saw it.
type handled struct {
	at      time.Time // FirstByte
	stamped bool
	called  time.Time // when the handler was called
	body    string
}

// serveRecording serves requests with Serve, records each on the
// returned channel, and stops when the test ends.
func serveRecording(t *testing.T) (*slowListener, <-chan handled) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sl := &slowListener{Listener: ln}
	got := make(chan handled, 16)
	served := make(chan error, 1)
	go func() {
		served <- Serve(sl, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := handled{called: time.Now()}
			h.at, h.stamped = FirstByte(r)
			b, _ := io.ReadAll(r.Body)
			h.body = string(b)
			got <- h
			_, _ = io.WriteString(w, "ok")
		}))
	}()
	t.Cleanup(func() {
		ln.Close()
		if err := <-served; !errors.Is(err, net.ErrClosed) {
			t.Errorf("Serve returned %v, want net.ErrClosed", err)
		}
	})
	return sl, got
}

// client is a connection to the test's server that writes requests by
// hand, in parts, and reads the responses.
type client struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
}

func dial(t *testing.T, addr net.Addr) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, conn: c, br: bufio.NewReader(c)}
}

// write writes s and returns the times before and after.
func (c *client) write(s string) (writing, written time.Time) {
	c.t.Helper()
	writing = time.Now()
	if _, err := io.WriteString(c.conn, s); err != nil {
		c.t.Fatal(err)
	}
	return writing, time.Now()
}

// response reads a response to its end.
func (c *client) response() {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
}

// next returns the next request the server handled.
func next(t *testing.T, got <-chan handled) handled {
	t.Helper()
	select {
	case h := <-got:
		return h
	case <-time.After(10 * time.Second):
		t.Fatal("the server handled no request")
		return handled{}
	}
}

const post = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"

// A request's first bytes are timed by the kernel as they reached the
// server's socket, not when the server read them or called its handler:
// a request that waited 100 ms in the socket before the server took its
// connection is timed at its write. On the kept-alive connection, a
// second request whose body ends 50 ms after its headers, read in its
// handler, is timed at its headers; a third, sent 100 ms after the
// second's response, at its own write, not at the rest of the second's
// body.
//
// A write is bracketed by the clock read before it and the one after (on
// loopback the kernel stamps the bytes inside the write), with 20 ms to
// spare for a writer kept from its next clock read on a busy machine.
func TestFirstByteIsTheArrival(t *testing.T) {
	sl, got := serveRecording(t)
	// The kernel turns receive timestamps on for everyone a moment after
	// the first socket asks: bytes that came before were never stamped.
	for deadline := time.Now().Add(5 * time.Second); ; {
		c := dial(t, sl.Addr())
		c.write(post + "0123456789")
		c.response()
		if next(t, got).stamped {
			break
		}
		if time.Now().After(deadline) {
			t.Skip("this kernel does not timestamp TCP reads")
		}
		time.Sleep(10 * time.Millisecond)
	}

	within := func(what string, h handled, writing, written time.Time) {
		t.Helper()
		if !h.stamped {
			t.Errorf("%s: not timed by the kernel", what)
		}
		if h.at.Before(writing) || h.at.After(written.Add(20*time.Millisecond)) {
			t.Errorf("%s: first byte %v after its write began, which took %v; want during the write, or within 20 ms of its end",
				what, h.at.Sub(writing), written.Sub(writing))
		}
	}
	sl.delay.Store(int64(100 * time.Millisecond))
	c := dial(t, sl.Addr())
	writing, written := c.write(post + "0123456789")
	c.response()
	first := next(t, got)
	within("the first request", first, writing, written)
	if wait := first.called.Sub(first.at); wait < 90*time.Millisecond {
		t.Errorf("the first request's handler was called %v after its first byte, want about 100 ms: the time is the server's, not the kernel's", wait)
	}

	writing, written = c.write(post + "01234")
	time.Sleep(50 * time.Millisecond)
	c.write("56789")
	c.response()
	second := next(t, got)
	within("the second request", second, writing, written)
	if second.body != "0123456789" {
		t.Errorf("the second request's body is %q", second.body)
	}

	time.Sleep(100 * time.Millisecond)
	writing, written = c.write(post + "abcdefghij")
	c.response()
	within("the third request", next(t, got), writing, written)
}
