package shard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/llmload/llmload/internal/connlimit"
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

// bounds are the leader's server's.
var bounds = connlimit.Bounds{
	MaxConns: maxConns, MaxConnsAHost: maxConnsAHost,
	ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout, WriteTimeout: writeTimeout, IdleTimeout: idleTimeout,
	MaxHeaderBytes: maxHeaderBytes,
}

// Serve serves the followers on ln until Close: every request bounded in
// time and size, the connections bounded in number, in all and from each
// address. Serving the Leader on a server of one's own
// ([http.Handler]) leaves those bounds to that server.
func (l *Leader) Serve(ln net.Listener) error {
	l.init()
	srv := bounds.Server(l)
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		return ErrRunOver
	}
	l.servers = append(l.servers, srv)
	l.mu.Unlock()
	err := srv.Serve(bounds.Listener(ln))
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
