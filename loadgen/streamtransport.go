package loadgen

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmload/llmload/loadgen/internal/bodyframe"
	"github.com/llmload/llmload/loadgen/internal/conncheck"
)

// StreamTransport is an HTTP/1.1 [http.RoundTripper] made for many long
// response streams. It runs no goroutine of its own: the goroutine that
// calls RoundTrip writes the request and reads the response headers, and
// the goroutine that reads the body reads it straight from the connection
// (with Poll, on Linux, a [Client]'s bodies are read by a few shared
// pollers instead; see Poll).
// An active stream thus costs the one goroutine that reads it and a
// 512-byte buffer, where [http.Transport] adds a read loop and a write loop,
// with their stacks, to every connection: at 1,000 streams StreamTransport
// takes less than half the memory (15 KB a stream instead of 34–39 KB).
// Cancelling a request's context closes its connection.
//
// On Linux it also asks the kernel for receive timestamps (SO_TIMESTAMPNS),
// and a [Client] stamps each chunk with the time its bytes reached the
// socket instead of the time the client got to read them: a client that
// waits for a CPU, or reads a burst of streams one after another, still
// times every chunk as it came. Where a read returns several chunks at once,
// they all take the arrival of its last bytes.
//
// Like net/http's transport, it bounds the bytes of a response's headers,
// the informational (1xx) responses before them included, so a server
// that sends endless headers or 103 Early Hints fails the request with
// [ErrHeadersTooLarge] instead of filling memory; the [Client]'s
// HeaderTimeout bounds how long they may take.
//
// It speaks HTTP/1.1 only, to http and https URLs, and uses no proxy. A
// connection goes back to the idle pool when its response body has been
// read to the end (and neither side asked to close it); before reusing an
// idle connection, StreamTransport checks on Linux that the server has not
// closed it meanwhile. It never sends a request twice. It writes the whole
// request before it reads the response; when the write fails, it still
// returns a response the server sent at once (a proxy's 413 for a body it
// would not read).
//
// The zero value is ready to use; set its fields before the first request.
// A StreamTransport is safe for concurrent use.
type StreamTransport struct {
	// DialContext dials the server's TCP connections. Nil means a
	// [net.Dialer] with a 10 s connect timeout and 30 s keep-alive probes.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLSClientConfig configures https connections; nil means the
	// defaults. ServerName defaults to the URL's host.
	TLSClientConfig *tls.Config
	// MaxIdleConnsPerHost bounds the idle pool of each host; 0 means
	// 1024.
	MaxIdleConnsPerHost int
	// IdleConnTimeout is how long a connection may stay idle and still be
	// reused; 0 means 90 s.
	IdleConnTimeout time.Duration
	// ReadBufferSize is the size of each connection's read buffer; 0 means
	// 512 bytes. It holds the response headers and the chunk framing; the
	// client's SSE reader reads larger blocks past it, straight from the
	// connection.
	ReadBufferSize int
	// MaxResponseHeaderBytes bounds the bytes of a response's headers,
	// the informational (1xx) responses before it included, as net/http's
	// Transport does; 0 means 10 MiB, as there. Beyond it,
	// RoundTrip fails with [ErrHeadersTooLarge]. A request whose trace has
	// a Got1xxResponse hook sees every informational response, and the
	// bound starts afresh after each, as in net/http.
	MaxResponseHeaderBytes int64
	// Poll, on Linux, has the Client read response bodies on a few shared
	// pollers (epoll, up to one per CPU, one more for every 256 streams)
	// instead of on each request's goroutine: one recvmsg a chunk, with
	// its kernel receive timestamp, and the chunk framed, parsed and its
	// tokens recorded where the bytes land, with no goroutine woken for
	// it. A poller woken by the first sockets of a batch (a batching
	// server writes a step's tokens for every stream within a short time)
	// waits for the rest before it reads: a quarter of the shortest time
	// it has seen between two of a stream's tokens, at most 1 ms, so that
	// it does not read two of them as one; the arrival times are the
	// kernel's either way. At 64 and 256 streams of 100 tokens a second
	// the client then makes 1.04-1.18 system calls a token, against
	// 2.2-2.4 without Poll, and takes 20-37% less CPU. The request's
	// goroutine waits for the end of its stream; an [Observer] is then
	// called on a poller's goroutine, up to that wait after the chunk
	// came, and must not block.
	// [Client.Stream], whose loop body is the caller's, and https
	// connections are read as without it. Elsewhere it does nothing.
	Poll bool

	mu    sync.Mutex
	idle  map[string][]*streamConn // by scheme://host:port, most recent last
	polls pollers                  // the pollers of Poll, made on first use (Linux)
}

// pollers are a StreamTransport's pollers (a pollGroup, on Linux), which
// close lets go.
type pollers interface {
	close()
}

// defaultMaxResponseHeaderBytes is the default bound of
// [StreamTransport.MaxResponseHeaderBytes]: 10 MiB, net/http's default.
const defaultMaxResponseHeaderBytes = 10 << 20

// NewStreamTransport returns a StreamTransport that keeps up to conns idle
// connections to each host.
func NewStreamTransport(conns int) *StreamTransport {
	return &StreamTransport{MaxIdleConnsPerHost: max(conns, 1), Poll: pollByDefault}
}

// pollByDefault is Poll in the transports NewStreamTransport makes. The
// tests set it to run on either reading path.
var pollByDefault = false

// streamConn is one connection and its read buffer.
type streamConn struct {
	key      string
	conn     net.Conn
	limit    headerLimit // between conn and br
	br       *bufio.Reader
	arrivals arrivalSource // nil where the kernel gives no receive times
	idleAt   time.Time
}

// headerLimit bounds what is read from a connection while a response's
// headers are read, as net/http's persistConn does: the buffered reader
// above it may read ahead, but never more than n bytes in all.
type headerLimit struct {
	r   io.Reader
	n   int64 // bytes left; < 0: no bound (a body is being read)
	hit bool  // a read found no bytes left
}

func (l *headerLimit) Read(p []byte) (int, error) {
	if l.n < 0 {
		return l.r.Read(p)
	}
	if l.n == 0 {
		l.hit = true
		return 0, ErrHeadersTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

func (t *StreamTransport) maxHeaderBytes() int64 {
	if t.MaxResponseHeaderBytes > 0 {
		return t.MaxResponseHeaderBytes
	}
	return defaultMaxResponseHeaderBytes
}

// lastArrival is when the bytes of the connection's last read arrived, or
// the zero time where the kernel does not say.
func (sc *streamConn) lastArrival() time.Time {
	if sc.arrivals == nil {
		return time.Time{}
	}
	return sc.arrivals.LastArrival()
}

// An arrivalSource knows when the bytes its last read returned arrived.
type arrivalSource interface {
	LastArrival() time.Time
}

// ErrUnsupportedScheme is returned by StreamTransport for a URL that is
// neither http nor https.
var ErrUnsupportedScheme = errors.New("loadgen: StreamTransport speaks only http and https")

var writerPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 1<<10) }}

// RoundTrip sends req on an idle or new connection and returns the
// response once its headers are read. Its body reads from the connection.
func (t *StreamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.roundTrip(req)
	if err != nil && req.Body != nil {
		req.Body.Close()
	}
	return resp, err
}

func (t *StreamTransport) roundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if req.URL == nil {
		return nil, errors.New("loadgen: StreamTransport: request without a URL")
	}
	scheme := req.URL.Scheme
	if scheme != "http" && scheme != "https" {
		return nil, fmt.Errorf("%w: %q", ErrUnsupportedScheme, scheme)
	}
	if req.URL.Host == "" {
		return nil, errors.New("loadgen: StreamTransport: request without a host")
	}
	addr := canonicalAddr(req.URL.Hostname(), req.URL.Port(), scheme)
	key := scheme + "://" + addr

	sc := t.getIdle(key)
	if sc == nil {
		var err error
		if sc, err = t.dial(ctx, scheme, addr, req.URL.Hostname()); err != nil {
			return nil, err
		}
		sc.key = key
	}
	// From here on, the context's end closes the connection, which ends any
	// write or read blocked on it.
	stop := context.AfterFunc(ctx, func() { sc.conn.Close() })
	limit := t.maxHeaderBytes()
	sc.limit.n, sc.limit.hit = limit, false
	fail := func(err error) (*http.Response, error) {
		stop()
		sc.conn.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if sc.limit.hit {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrHeadersTooLarge, limit)
		}
		return nil, err
	}

	bw := writerPool.Get().(*bufio.Writer)
	bw.Reset(sc.conn)
	err := req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil)
	writerPool.Put(bw)
	if err != nil {
		// A server may answer before it has read the whole request (a
		// proxy's 413) and close: its answer says more than the failed
		// write, if it comes at once.
		if resp := earlyResponse(ctx, sc, req); resp != nil {
			sc.limit.n = -1
			framing, length := bodyframe.Of(resp)
			resp.Body = &streamBody{t: t, sc: sc, body: resp.Body, stop: stop, at: sc.lastArrival(), framing: framing, length: length}
			return resp, nil
		}
		return fail(fmt.Errorf("loadgen: writing the request: %w", err))
	}
	trace := httptrace.ContextClientTrace(ctx)
	if trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{})
	}

	var resp *http.Response
	for {
		resp, err = http.ReadResponse(sc.br, req)
		if err != nil {
			return fail(fmt.Errorf("loadgen: reading the response: %w", err))
		}
		// 1xx responses other than 101 precede the real one. Their bytes
		// count against the header limit, which thus bounds how many come
		// (net/http's rule); the Client's HeaderTimeout bounds how long.
		if resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		if trace != nil && trace.Got1xxResponse != nil {
			if err := trace.Got1xxResponse(resp.StatusCode, textproto.MIMEHeader(resp.Header)); err != nil {
				return fail(err)
			}
			sc.limit.n = limit // the caller sees each one, and bounds them itself
		}
	}
	sc.limit.n = -1
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return fail(errors.New("loadgen: StreamTransport does not switch protocols"))
	}
	framing, length := bodyframe.Of(resp)
	resp.Body = &streamBody{t: t, sc: sc, body: resp.Body, stop: stop, reuse: !resp.Close && !req.Close, at: sc.lastArrival(),
		framing: framing, length: length}
	return resp, nil
}

// A pollBody is a response body that can be read on a poller:
// StreamTransport's, on Linux. pollSource returns the reader of its bytes,
// which then belong to the poller, or nil where the body must be read as
// an io.Reader (without Poll, over https).
type pollBody interface {
	pollSource() polledBody
}

// A polledBody is a body read on a poller. The client frames its bytes as
// from any reader, and tells it of each chunk with tokens, for the
// poller's gather; run reads the body to its end, calling advance as bytes
// come until it reports the stream done, and returns advance's outcome,
// or, when ctx ends first, the read error the request's reader then
// settles.
type polledBody interface {
	arrivalBody
	io.Reader
	tokenAt(t time.Time)
	run(ctx context.Context, advance func() (bool, error)) (result, readErr error)
}

// pollGatherFixed, when not 0, replaces the gather a poller works out
// (under 0: none); for tests and benchmarks.
var pollGatherFixed atomic.Int64 // a time.Duration

func setPollGather(d time.Duration) time.Duration {
	return time.Duration(pollGatherFixed.Swap(int64(d)))
}

// earlyResponseWait is how long a failed write waits for the server's
// answer.
const earlyResponseWait = 100 * time.Millisecond

// earlyResponse reads a response the server sent before the request was
// written in full, if one comes within earlyResponseWait.
func earlyResponse(ctx context.Context, sc *streamConn, req *http.Request) *http.Response {
	if ctx.Err() != nil {
		return nil
	}
	if err := sc.conn.SetReadDeadline(time.Now().Add(earlyResponseWait)); err != nil {
		return nil
	}
	resp, err := http.ReadResponse(sc.br, req)
	if err != nil || sc.conn.SetReadDeadline(time.Time{}) != nil {
		return nil
	}
	resp.Close = true
	return resp
}

// canonicalAddr is host:port, with the scheme's port by default.
func canonicalAddr(host, port, scheme string) string {
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(host, port)
}

func (t *StreamTransport) dial(ctx context.Context, scheme, addr, host string) (*streamConn, error) {
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: defaultConnectTimeout, KeepAlive: 30 * time.Second}).DialContext
	}
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	conn, arrivals := stampConn(conn)
	if scheme == "https" {
		cfg := &tls.Config{}
		if t.TLSClientConfig != nil {
			cfg = t.TLSClientConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("loadgen: TLS handshake: %w", err)
		}
		conn = tc
	}
	size := t.ReadBufferSize
	if size <= 0 {
		size = 512
	}
	sc := &streamConn{conn: conn, limit: headerLimit{r: conn, n: -1}, arrivals: arrivals}
	sc.br = bufio.NewReaderSize(&sc.limit, size)
	return sc, nil
}

// getIdle returns the most recently used idle connection to key that is
// still open, or nil.
func (t *StreamTransport) getIdle(key string) *streamConn {
	timeout := t.IdleConnTimeout
	if timeout <= 0 {
		timeout = 90 * time.Second
	}
	for {
		t.mu.Lock()
		conns := t.idle[key]
		if len(conns) == 0 {
			t.mu.Unlock()
			return nil
		}
		sc := conns[len(conns)-1]
		conns[len(conns)-1] = nil
		t.idle[key] = conns[:len(conns)-1]
		t.mu.Unlock()
		if time.Since(sc.idleAt) < timeout && sc.br.Buffered() == 0 && conncheck.Open(sc.conn) {
			return sc
		}
		sc.conn.Close()
	}
}

// putIdle pools sc for reuse, or closes it if the pool is full.
func (t *StreamTransport) putIdle(sc *streamConn) {
	limit := t.MaxIdleConnsPerHost
	if limit <= 0 {
		limit = defaultMaxConns
	}
	sc.idleAt = time.Now()
	t.mu.Lock()
	if t.idle == nil {
		t.idle = map[string][]*streamConn{}
	}
	if len(t.idle[sc.key]) < limit {
		t.idle[sc.key] = append(t.idle[sc.key], sc)
		sc = nil
	}
	t.mu.Unlock()
	if sc != nil {
		sc.conn.Close()
	}
}

// CloseIdleConnections closes the connections in the idle pool, and lets
// go of Poll's pollers: each closes its epoll instances once the streams
// it reads have ended, and a later request makes new ones.
func (t *StreamTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle, polls := t.idle, t.polls
	t.idle, t.polls = nil, nil
	t.mu.Unlock()
	if polls != nil {
		polls.close()
	}
	for _, conns := range idle {
		for _, sc := range conns {
			sc.conn.Close()
		}
	}
}

// streamBody is a response body read straight from its connection. Read to
// its end, it gives the connection back to the pool; closed before that, it
// closes the connection, which also ends a Read blocked on it.
type streamBody struct {
	t     *StreamTransport
	sc    *streamConn
	body  io.ReadCloser
	stop  func() bool // stops the context's closing of the connection
	reuse bool
	// How the body ends, for a poller, which reads the connection itself.
	framing bodyframe.Framing
	length  uint64

	released atomic.Bool // the connection is pooled or closed
	at       time.Time   // arrival of the bytes the last Read returned
}

var errBodyClosed = errors.New("http: read on closed response body")

func (b *streamBody) Read(p []byte) (int, error) {
	if b.released.Load() {
		return 0, errBodyClosed
	}
	n, err := b.body.Read(p)
	if n > 0 {
		b.at = b.sc.lastArrival() // now, while the connection is still this body's
	}
	if err != nil && b.released.CompareAndSwap(false, true) {
		b.release(err == io.EOF)
	}
	return n, err
}

// arrival is when the bytes the last Read returned reached the socket, by
// the kernel's receive timestamp, or the zero time where there is none.
// Only the goroutine reading the body may ask.
func (b *streamBody) arrival() time.Time { return b.at }

// Close closes the body. Unless the body was read to its end, it closes the
// connection too.
func (b *streamBody) Close() error {
	if b.released.CompareAndSwap(false, true) {
		b.release(false)
	}
	return nil
}

// release ends the body's use of its connection: back to the pool if the
// whole body was read and the connection may be reused, else closed.
func (b *streamBody) release(atEOF bool) {
	stopped := b.stop() // false: the context ended and closes the connection
	if atEOF && b.reuse && stopped {
		b.t.putIdle(b.sc)
		return
	}
	b.sc.conn.Close()
}

// defaultMaxConns is the connection pool size of a [Client] without an
// HTTPClient.
const defaultMaxConns = 1024

// NewTransport returns an HTTP/1.1 transport for streaming requests to one
// server with up to conns at once: its idle pool keeps conns connections per
// host (net/http's default keeps 2, so every further stream would dial
// anew), it has no overall timeout (streams last minutes; [Client] enforces
// per-phase deadlines instead), and it does not ask for compression (SSE is
// read as it arrives). Its connection buffers are 1 KiB instead of 4: a
// request is written once, and the client reads bodies in its own buffer,
// which bypasses the connection's for large reads; at 1,000 streams this
// saves 6 KiB of memory a stream at no measurable cost in CPU.
func NewTransport(conns int) *http.Transport {
	if conns < 1 {
		conns = 1
	}
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   defaultConnectTimeout,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		WriteBufferSize:     1 << 10,
		ReadBufferSize:      1 << 10,
	}
}

func newHTTPClient(conns int) *http.Client {
	return &http.Client{Transport: NewTransport(conns)}
}
