// Package connlimit serves HTTP within bounds, for the servers llmload
// runs for others to reach (a sharded run's leader, the live metrics): a
// peer that opens connections and sends nothing, trickles, or keeps idle
// connections open holds a connection a few seconds and no more than its
// share of them.
package connlimit

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Bounds are a server's bounds. A zero field is no bound (as in
// [http.Server]).
type Bounds struct {
	// MaxConns bounds the connections held at once, and MaxConnsAHost
	// those from one address: beyond them a new connection is closed as
	// it is accepted.
	MaxConns      int
	MaxConnsAHost int
	// ReadHeaderTimeout bounds a request's headers, ReadTimeout the whole
	// request, WriteTimeout its answer, and IdleTimeout a connection kept
	// alive between requests.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes int
}

// Server returns a server of h with b's timeouts and header size.
func (b Bounds) Server(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: b.ReadHeaderTimeout,
		ReadTimeout:       b.ReadTimeout,
		WriteTimeout:      b.WriteTimeout,
		IdleTimeout:       b.IdleTimeout,
		MaxHeaderBytes:    b.MaxHeaderBytes,
	}
}

// Listener returns ln with b's bounds of connections: it closes, as it
// accepts them, the connections beyond MaxConns held at once, or beyond
// MaxConnsAHost from one address.
func (b Bounds) Listener(ln net.Listener) net.Listener {
	return &listener{Listener: ln, max: b.MaxConns, maxAHost: b.MaxConnsAHost, hosts: map[string]int{}}
}

type listener struct {
	net.Listener
	max, maxAHost int

	mu    sync.Mutex
	all   int
	hosts map[string]int
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		l.mu.Lock()
		if l.max > 0 && l.all >= l.max || l.maxAHost > 0 && l.hosts[host] >= l.maxAHost {
			l.mu.Unlock()
			_ = c.Close()
			continue
		}
		l.all++
		l.hosts[host]++
		l.mu.Unlock()
		return &conn{Conn: c, l: l, host: host}, nil
	}
}

func (l *listener) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all--
	if l.hosts[host]--; l.hosts[host] <= 0 {
		delete(l.hosts, host)
	}
}

// conn is an accepted connection, counted until it is closed.
type conn struct {
	net.Conn
	l    *listener
	host string
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.host) })
	return err
}
