package rxstamp

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Serve serves HTTP/1.1 on l, as http.Serve does, and tells h's handlers
// when each request's first bytes reached the server: see FirstByte. It
// returns when l is closed, with the error Accept gave.
//
// A request's first bytes are those of the first read on its connection
// after the previous request's handler returned, with what it left of its
// body read: a client that sends its next request only once a response
// has ended (as net/http's and llmload's do) sends nothing the server
// reads in between. A response with a length that its handler flushes
// whole before it returns may let a client send its next request sooner;
// that request's first bytes may then be read meanwhile, and it is timed
// by the first read after the handler returned.
//
// The kernel stamps a read with the arrival of the last bytes it returns,
// and bytes that wait in the socket take the stamp of those that join
// them: a request whose parts arrived apart while the server was not
// reading is timed by the last part its first read returned.
func Serve(l net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           stampRequests(h),
		ConnContext:       withConn,
		ReadHeaderTimeout: time.Minute,
	}
	return srv.Serve(listener{l})
}

// FirstByte returns when the first bytes of r reached the server's socket,
// by the kernel's receive timestamp, and true; where the kernel gave none,
// when the server's read of them returned, and false. A request not
// served by Serve has the zero time.
func FirstByte(r *http.Request) (at time.Time, stamped bool) {
	a, _ := r.Context().Value(arrivalKey{}).(arrival)
	return a.at, a.stamped
}

// listener makes each connection it accepts a requestConn.
type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	rc := &requestConn{Conn: c}
	if s, ok := New(c); ok {
		rc.Conn, rc.stamped = s, s
	}
	return rc, nil
}

// arrival is when a request's first bytes reached the server.
type arrival struct {
	at      time.Time
	stamped bool // by the kernel; else when the read returned
}

// requestConn is a server's connection that notes when each request's
// first bytes arrived. The server reads it on one goroutine at a time
// (its own, or its background read's); the handler's goroutine begins and
// ends each request.
type requestConn struct {
	net.Conn
	stamped *Conn // the same connection, where the kernel gives timestamps

	mu    sync.Mutex
	first arrival // of the first bytes read since the last begin or end
}

func (c *requestConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		a := arrival{at: time.Now()}
		if c.stamped != nil && c.stamped.Stamped() {
			a = arrival{at: c.stamped.LastArrival(), stamped: true}
		}
		c.mu.Lock()
		if c.first.at.IsZero() {
			c.first = a
		}
		c.mu.Unlock()
	}
	return n, err
}

// CloseWrite shuts the connection's writing side, where it can, as the
// server does before it closes a connection it refused.
func (c *requestConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// begin returns the arrival of the request about to enter its handler.
func (c *requestConn) begin() arrival {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.first
	if a.at.IsZero() { // read before a handler returned: see Serve
		a = arrival{at: time.Now()}
	}
	c.first = arrival{}
	return a
}

// end reads what the handler left of the request's body (as the server
// would next, up to its own limit) and forgets the reads of the request's
// body, so that the next read with bytes is the next request's.
func (c *requestConn) end(body io.Reader) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 256<<10))
	c.mu.Lock()
	c.first = arrival{}
	c.mu.Unlock()
}

type connKey struct{}

type arrivalKey struct{}

// withConn is the server's ConnContext: it hands the connection to
// stampRequests.
func withConn(ctx context.Context, c net.Conn) context.Context {
	if rc, ok := c.(*requestConn); ok {
		return context.WithValue(ctx, connKey{}, rc)
	}
	return ctx
}

// stampRequests gives each request to h with its arrival in its context.
func stampRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := r.Context().Value(connKey{}).(*requestConn)
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		body := r.Body
		defer c.end(body)
		r = r.WithContext(context.WithValue(r.Context(), arrivalKey{}, c.begin()))
		h.ServeHTTP(w, r)
	})
}
