package shard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// The bounds of the leader's server: a peer that opens connections and
// sends nothing, or trickles, holds a connection a few seconds and no more
// than its share of them.
const (
	// maxConns bounds the connections a leader holds at once, and
	// maxConnsAHost those from one address; beyond them a new connection
	// is closed as it is accepted. A follower holds two or three.
	maxConns      = 1024
	maxConnsAHost = 64
	// readHeaderTimeout bounds a request's headers, readTimeout the whole
	// request (a report of fleet.MaxReportBytes at a few MB/s), and
	// idleTimeout a connection between requests.
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 30 * time.Second
	maxHeaderBytes    = 8 << 10
)

// Serve serves the followers on ln until Close: every request bounded in
// time and size, the connections bounded in number, in all and from each
// address. Serving the Leader on a server of one's own
// ([http.Handler]) leaves those bounds to that server.
func (l *Leader) Serve(ln net.Listener) error {
	l.init()
	srv := &http.Server{
		Handler:           l,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          nil,
	}
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		return ErrRunOver
	}
	l.servers = append(l.servers, srv)
	l.mu.Unlock()
	err := srv.Serve(&limitListener{Listener: ln, hosts: map[string]int{}})
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// shutdown stops the servers of Serve, waiting for their requests until
// ctx ends.
func (l *Leader) shutdown(ctx context.Context) {
	l.mu.Lock()
	servers := l.servers
	l.servers = nil
	l.mu.Unlock()
	for _, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
	}
}

// limitListener closes, as it accepts them, the connections beyond
// maxConns, or beyond maxConnsAHost from one address.
type limitListener struct {
	net.Listener
	mu    sync.Mutex
	all   int
	hosts map[string]int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		l.mu.Lock()
		if l.all >= maxConns || l.hosts[host] >= maxConnsAHost {
			l.mu.Unlock()
			_ = c.Close()
			continue
		}
		l.all++
		l.hosts[host]++
		l.mu.Unlock()
		return &limitedConn{Conn: c, l: l, host: host}, nil
	}
}

func (l *limitListener) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all--
	if l.hosts[host]--; l.hosts[host] <= 0 {
		delete(l.hosts, host)
	}
}

type limitedConn struct {
	net.Conn
	l    *limitListener
	host string
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.host) })
	return err
}
