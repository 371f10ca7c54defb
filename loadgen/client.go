package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/llmload/llmload/internal/origin"
	"github.com/llmload/llmload/internal/redact"
	"github.com/llmload/llmload/loadgen/internal/chunk"
	"github.com/llmload/llmload/loadgen/internal/sse"
	"github.com/llmload/llmload/loadgen/internal/watchdog"
	"github.com/llmload/llmload/metrics"
)

// The defaults of a [Client]'s zero fields. The deadlines are generous: a 256K-token prompt
// can take minutes to prefill on a small card, and a request may wait in the
// server's queue before that.
const (
	defaultConnectTimeout    = 10 * time.Second
	defaultHeaderTimeout     = 10 * time.Minute
	defaultFirstTokenTimeout = 30 * time.Minute
	defaultStallTimeout      = 2 * time.Minute
	// defaultMaxEventSize bounds one SSE event, so a hostile or broken
	// server cannot make the client buffer without limit.
	defaultMaxEventSize = 1 << 20
	// defaultMaxBodySize bounds the whole answer of an Embeddings or Rerank
	// request: 64 inputs of 4,096 dimensions, written as decimals, take
	// about 5 MiB.
	defaultMaxBodySize = 64 << 20
	// defaultMaxBodyInFlight bounds the Embeddings and Rerank answers a
	// Client holds at once: four answers of the largest size by default.
	defaultMaxBodyInFlight = 256 << 20
)

// Client streams completions from one OpenAI-compatible server and
// timestamps every chunk as it arrives. Its zero value needs only BaseURL.
// A Client is safe for concurrent use; set its fields before the first
// request.
//
// A Client has no whole-request timeout, which would cut long streams.
// Instead each phase of a request has its own deadline and its own error:
// connecting and writing the request (KindConnect), waiting for the
// response headers, informational (1xx) responses and redirects included
// (KindHeaderTimeout), waiting for the first token after them
// (KindFirstTokenTimeout), and the longest gap between tokens after that
// (KindStall; StallRule says what counts). Zero means the default; a
// negative value means no deadline.
//
// Credentials stay with their origin. The client follows a 307 or 308
// redirect (up to 10 in a row) but a request it sends to another origin
// (scheme, host and port) carries neither the API key nor any other header
// of the client's or the request's own; it refuses a 301, 302 or 303, which
// would turn the POST into a GET, and a loop ([RedirectError]). Its errors
// never show the password of a URL's user information.
//
// # What counts
//
// A request succeeds only when its stream ends with [DONE] or a
// finish_reason and carried a token or a tool call: a stream that simply
// stops is of kind KindTruncated, one that ends as it should with no token
// (only [DONE], a message_stop with no content) is of kind
// KindEmptyAnswer, and an error object inside a 200 stream is a
// [*StreamError]. The first token is the
// first chunk that carries content, reasoning (reasoning_content or
// reasoning), completion text or a tool call; role-only and empty deltas do
// not count. When the server sends usage on every chunk (vLLM's
// continuous_usage_stats, which requests ask for by default), each chunk
// carries the growth of completion_tokens; otherwise one token per non-empty
// delta, and a final usage that reports more is recorded as extra tokens
// (see [github.com/llmload/llmload/metrics.TokenSource]). A usage that does
// not grow while text arrives (Ollama's completions API sends an all-zero
// usage on every chunk) is not a running count, and the client counts the
// deltas instead. A count that cannot be true — one that goes down, or is
// larger than any request can carry (10^8 tokens, or 100 times the
// request's MaxTokens, at least 1,000) — makes the request
// malformed with a [*UsageError]; the tokens counted before it are kept.
//
// The client reads its own response (never through a reconnecting SSE
// client, so a POST is never silently re-sent) and frames it as the HTML
// standard's event-stream rules say, without copying an event's data; it is
// fuzzed against go-sse's sse.Read. One deliberate difference: a last event
// whose last line is complete is dispatched even when the server closes
// without the blank line. The chunk parser reads OpenAI chat and completion
// chunks, TGI's native /generate_stream events and Anthropic's Messages
// events; it accepts exactly the JSON that encoding/json accepts.
//
// # A hostile server
//
// The client assumes nothing of a server it is pointed at. Its API key and
// extra headers go to the BaseURL's origin only: a redirect to another
// scheme, host or port carries none of them (net/http's client would copy
// them to another port of the same host). Errors show URLs with their
// password redacted. Every wait has a deadline, and the stall deadline
// moves only on tokens ([Client.StallRule]): a server sending one token and
// then empty chunks stalls. Response headers, informational responses
// included, are bounded on both transports (10 MiB, net/http's rule), as
// is an SSE event ([Client.MaxEventSize]). Text from the server reaches an
// error's message on one line, its control characters escaped, so printing
// an error runs none of its terminal escape sequences; the raw text stays
// in the error's fields.
type Client struct {
	// BaseURL is the API root, such as "http://127.0.0.1:8000/v1".
	BaseURL string
	// APIKey is sent as "Authorization: Bearer"; it is never logged or
	// written anywhere else.
	APIKey string
	// Header holds extra headers for every request.
	Header http.Header
	// HTTPClient sends the requests. Nil means a client on
	// NewTransport(1024). Its Timeout must be 0: a client with
	// a Timeout is refused (see [Client.Validate]). The Client sends
	// through a copy of it whose CheckRedirect applies the Client's
	// redirect policy first, then HTTPClient's own, if any.
	HTTPClient *http.Client

	// ConnectTimeout bounds connecting and writing the request; 0 means
	// 10 s.
	ConnectTimeout time.Duration
	// HeaderTimeout bounds the wait for the response headers; 0 means
	// 10 min.
	HeaderTimeout time.Duration
	// FirstTokenTimeout bounds the wait for the first token after the
	// headers; 0 means 30 min.
	FirstTokenTimeout time.Duration
	// StallTimeout bounds the longest gap between tokens; 0 means 2 min.
	StallTimeout time.Duration
	// StallRule says what moves the stall deadline on: by default only a
	// chunk that carries tokens, so a server that sends one token and then
	// empty deltas, usage-only chunks or keep-alive comments stalls.
	StallRule StallRule
	// MaxEventSize bounds one SSE event in bytes, so a hostile or broken
	// server cannot make the client buffer without limit; 0 means 1 MiB.
	MaxEventSize int
	// MaxBodySize bounds, in bytes, the whole answer of an Embeddings or
	// Rerank request, which comes as one JSON body rather than a stream;
	// 0 means 64 MiB.
	MaxBodySize int
	// MaxBodyInFlight bounds, in bytes, the Embeddings and Rerank answers
	// the Client buffers at once, over all its requests in flight (the copy
	// of a Client a [Generator] sends through counts its own); 0 means
	// 256 MiB, or MaxBodySize if that is larger. A request whose answer
	// would take the buffers past it fails at once, of kind KindOversize
	// with an error that wraps [ErrBodyInFlight], rather than wait:
	// requests that each hold part of the budget while they wait for more
	// could wait for each other for ever. Decoding an answer takes about as
	// much memory again, for as long as it lasts.
	MaxBodyInFlight int

	// The state below is made on first use and never copied (a Client
	// holds a sync.Once): Clone copies the settings above, field by
	// field, and its test fails when one is missed.
	once   sync.Once
	bodies atomic.Int64 // bytes of answers buffered now, under MaxBodyInFlight
	reads  readCounts   // bodies read so far, by how
	hc     *http.Client
	err    error  // what Validate found
	shown  string // BaseURL without user information, for messages
}

// Clone returns a Client with c's settings, not yet used, for the caller
// to change before its first request, as [crypto/tls.Config.Clone] does: a
// Client that has sent a request cannot be copied by value. Its Header is
// a copy of c's; its HTTPClient is c's.
func (c *Client) Clone() *Client {
	return &Client{
		BaseURL:           c.BaseURL,
		APIKey:            c.APIKey,
		Header:            c.Header.Clone(),
		HTTPClient:        c.HTTPClient,
		ConnectTimeout:    c.ConnectTimeout,
		HeaderTimeout:     c.HeaderTimeout,
		FirstTokenTimeout: c.FirstTokenTimeout,
		StallTimeout:      c.StallTimeout,
		StallRule:         c.StallRule,
		MaxEventSize:      c.MaxEventSize,
		MaxBodySize:       c.MaxBodySize,
		MaxBodyInFlight:   c.MaxBodyInFlight,
	}
}

// withTransport returns a Client with c's settings on a transport for n
// connections.
func (c *Client) withTransport(n int) *Client {
	cc := c.Clone()
	cc.HTTPClient = newHTTPClient(n)
	return cc
}

// setup checks the client and picks its HTTP client, once. It returns what
// Validate found.
func (c *Client) setup() error {
	c.once.Do(func() {
		base := c.HTTPClient
		if base == nil {
			base = newHTTPClient(defaultMaxConns)
		}
		hc := *base // the caller's client is not changed
		hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			return checkRedirect(req, via, base.CheckRedirect)
		}
		c.hc = &hc
		c.err = c.Validate()
		c.shown = strings.TrimRight(c.BaseURL, "/")
		if u, err := url.Parse(c.shown); err == nil {
			c.shown = u.Redacted()
		}
	})
	return c.err
}

func (c *Client) httpClient() *http.Client {
	_ = c.setup()
	return c.hc
}

// checkRedirect is the redirect policy of a Client: see [RedirectError].
// A redirect to another origin keeps only the headers that describe the
// request itself (Content-Type, Accept, User-Agent): net/http copies the
// rest, Authorization included, to another port of the same host, and
// Referer names the first URL. Then the caller's own policy has its say.
func checkRedirect(req *http.Request, via []*http.Request, then func(*http.Request, []*http.Request) error) error {
	first := via[0]
	fail := func(reason string) error {
		status := 0
		if req.Response != nil {
			status = req.Response.StatusCode
		}
		return &RedirectError{StatusCode: status, Location: req.URL.Redacted(), Redirects: len(via) - 1, Reason: reason}
	}
	if req.Method != first.Method {
		return fail(fmt.Sprintf("following it would re-send the %s as a %s without its body; point BaseURL at the new location", first.Method, req.Method))
	}
	for _, v := range via {
		if v.URL.String() == req.URL.String() {
			return fail("a redirect loop")
		}
	}
	if len(via) >= maxRedirects {
		return fail(fmt.Sprintf("stopped after %d redirects", maxRedirects))
	}
	if !origin.Same(first.URL, req.URL) {
		for k := range req.Header {
			switch k {
			case "Content-Type", "Accept", "User-Agent":
			default:
				delete(req.Header, k)
			}
		}
	}
	if then != nil {
		return then(req, via)
	}
	return nil
}

// urlOf returns the URL req goes to, without user information, for
// messages.
func (c *Client) urlOf(req *Request) string {
	return c.shown + req.API.path()
}

// CloseIdleConnections closes the idle connections of the client's
// transport.
func (c *Client) CloseIdleConnections() {
	c.httpClient().CloseIdleConnections()
}

func pick(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// StallRule says what moves a request's stall deadline ([Client.StallTimeout])
// on, once its first token has come.
type StallRule uint8

const (
	// StallOnTokens moves the deadline on a chunk that carries tokens
	// only. It is the zero value.
	StallOnTokens StallRule = iota
	// StallOnChunks moves it on every data event, tokens or not: empty
	// deltas, role-only deltas and usage-only chunks count; SSE comments
	// do not. It suits a server that streams long silent stretches as
	// empty chunks on purpose.
	StallOnChunks
)

// An Observer receives the tokens of each chunk as it arrives.
// [*metrics.Recorder] is one. Observe is called from the goroutine that
// reads the stream: the request's own, or, on a [StreamTransport] with
// Poll, a poller's goroutine that reads many streams, so it must be quick
// and must not block.
type Observer interface {
	Observe(tl *metrics.Timeline, t time.Time, tokens int)
}

// Chunk is one streamed chunk that carried tokens, a finish reason or usage
// (and, in loadgentest's record of a request, one write of the simulator's
// that carried tokens: its flush time and count).
type Chunk struct {
	// Time is when the chunk arrived.
	Time time.Time `json:"time"`
	// Tokens is how many output tokens it carried (see [metrics.TokenSource]
	// for the rules).
	Tokens int `json:"tokens"`
	// Text and Reasoning are the first choice's content and reasoning deltas.
	Text      string `json:"text,omitempty"`
	Reasoning string `json:"reasoning,omitempty"`
	// FinishReason is set on the chunk that ends the choice.
	FinishReason string `json:"finish_reason,omitempty"`
	// PromptTokens and CompletionTokens are the usage it reported, if
	// HasUsage.
	HasUsage         bool `json:"has_usage,omitempty"`
	PromptTokens     int  `json:"prompt_tokens,omitempty"`
	CompletionTokens int  `json:"completion_tokens,omitempty"`
}

// Response is a finished request: its timeline, and its text.
type Response struct {
	metrics.Timeline
	// ID is the server's X-Request-Id response header (vLLM sends it with
	// --enable-request-id-headers; llmload's simulator always does), cut
	// to its first 256 bytes followed by "…" when longer.
	ID string
	// Text and Reasoning are the whole content and reasoning of the first
	// choice.
	Text, Reasoning string
	// ChunkTimes holds the arrival of every chunk that carried tokens.
	ChunkTimes []time.Time
}

// Do sends req, reads its whole stream and returns the response. The error,
// if any, is also in the response's timeline (Kind, Err), and everything
// measured before it is kept. Do keeps the text and each chunk's time; to
// measure many requests without that, use [Client.Measure].
func (c *Client) Do(ctx context.Context, req *Request) (*Response, error) {
	r := &Response{}
	var text, reasoning strings.Builder
	err := c.stream(ctx, req, &r.Timeline, &r.ID, nil, true, func(ch *Chunk) bool {
		text.WriteString(ch.Text)
		reasoning.WriteString(ch.Reasoning)
		if ch.Tokens > 0 {
			r.ChunkTimes = append(r.ChunkTimes, ch.Time)
		}
		return true
	})
	r.Text, r.Reasoning = text.String(), reasoning.String()
	return r, err
}

// Measure sends req and fills tl as the stream arrives: its times, token
// counts, usage and outcome. Each chunk's tokens go to obs, which updates tl;
// a nil obs means tl's own [metrics.Timeline.Observe]. The returned error is
// also in tl. Measure allocates per request, not per chunk.
func (c *Client) Measure(ctx context.Context, req *Request, tl *metrics.Timeline, obs Observer) error {
	if tl == nil {
		return &ConfigError{Field: "Client.Measure's Timeline", Reason: "is nil: pass the *metrics.Timeline to fill"}
	}
	return c.stream(ctx, req, tl, nil, obs, false, nil)
}

// Stream sends req and yields each chunk that carries tokens, a finish
// reason or usage, stamped with its arrival time. It never yields a chunk
// together with an error; the last value is the request's error, if any.
// Breaking out of the loop cancels the request.
func (c *Client) Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		var tl metrics.Timeline
		stopped := false
		err := c.stream(ctx, req, &tl, nil, nil, false, func(ch *Chunk) bool {
			if !yield(*ch, nil) {
				stopped = true
				return false
			}
			return true
		})
		if err != nil && !stopped {
			yield(Chunk{}, err)
		}
	}
}

// errStopped is the cause when an iterator's consumer stops early.
var errStopped = errors.New("loadgen: the reader stopped")

// stream is the one implementation behind Do, Measure and Stream. emit, when
// not nil, receives decoded chunks; returning false stops the request.
// ownEmit says emit is the client's own, which may run on a poller.
//
// A Client or Request that cannot work is refused before anything is sent:
// the error is its [*ConfigError], of kind KindOther.
func (c *Client) stream(ctx context.Context, req *Request, tl *metrics.Timeline, id *string, obs Observer, ownEmit bool, emit func(*Chunk) bool) error {
	rs, body, err := c.begin(req, tl)
	if err != nil {
		return err
	}
	rs.obs, rs.emit, rs.ownEmit, rs.id = obs, emit, ownEmit, id
	return rs.end(rs.run(ctx, c, req, body))
}

// begin starts the request's timeline and returns its state and body, or
// why c or req cannot work. It and end are apart from stream for the
// reason given at [requestState.send].
//
//go:noinline
func (c *Client) begin(req *Request, tl *metrics.Timeline) (*requestState, []byte, error) {
	now := time.Now()
	if tl.Start.IsZero() {
		tl.Start = now
	}
	if tl.Due.IsZero() {
		tl.Due = tl.Start
	}
	body, err := c.check(req)
	if err != nil {
		tl.End = now
		tl.Kind, tl.Err = metrics.KindOther, err
		return nil, nil, err
	}
	return &requestState{tl: tl}, body, nil
}

// end closes the request's timeline and returns its error, err as an
// [*Error], if any.
//
//go:noinline
func (rs *requestState) end(err error) error {
	tl := rs.tl
	tl.End = time.Now()
	if !rs.answerEnd.IsZero() {
		tl.End = rs.answerEnd // a whole answer's arrival, read from the socket
	}
	rs.finish()
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Kind: metrics.KindOther, Err: err}
		}
		e.Chunks = tl.Chunks
		tl.Kind, tl.Err = e.Kind, e
		return e
	}
	return nil
}

// check returns the body of req, or why c or req cannot work.
func (c *Client) check(req *Request) ([]byte, error) {
	if c == nil {
		return nil, &ConfigError{Field: "Client", Reason: "is nil"}
	}
	if err := c.setup(); err != nil {
		return nil, err
	}
	return req.Body()
}

// requestState is one request in flight.
type requestState struct {
	tl   *metrics.Timeline
	obs  Observer
	emit func(*Chunk) bool
	// ownEmit reports that emit is the client's own (Do's), which may run
	// on a poller's goroutine; a caller's (Stream's) runs on its own.
	ownEmit bool
	id      *string // where to put X-Request-Id, if wanted
	rule    StallRule

	// When the request was written, and when its headers were, as
	// httptrace reports them: nanoseconds since epoch, 0 until then.
	sent, wroteHeaders atomic.Int64

	count     tokenCount
	kinds     chunk.ReasoningSplit
	lastTime  time.Time
	answerEnd time.Time // when a whole answer (Embeddings, Rerank) came
	done      bool
	streamErr error
	// timingsBad names the first server timing that was not a number of
	// milliseconds; the request's server timings are then dropped.
	timingsBad string
}

func (rs *requestState) run(ctx context.Context, c *Client, req *Request, body []byte) error {
	rs.rule = c.StallRule
	rs.count.limit = tokenLimit(req.MaxTokens)
	rs.count.maxTokens = req.MaxTokens
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wd := watchdog.New(cancel, [watchdog.NumPhases]time.Duration{
		watchdog.Connect: pick(c.ConnectTimeout, defaultConnectTimeout),
		watchdog.Headers: pick(c.HeaderTimeout, defaultHeaderTimeout),
		watchdog.First:   pick(c.FirstTokenTimeout, defaultFirstTokenTimeout),
		watchdog.Stream:  pick(c.StallTimeout, defaultStallTimeout),
	}, &phaseErrors, epoch)
	defer wd.Stop()

	resp, err := rs.send(ctx, c, req, body, wd)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	label, err := rs.answered(ctx, cancel, c, req, resp, wd)
	if err != nil || req.API.pooled() {
		return err
	}
	return rs.read(ctx, cancel, c, resp, label, req, wd)
}

// send writes the request and returns the response, its headers read. It
// and answered are apart from run so that their locals are off the stack
// while the body is read: the request's goroutine then waits with a stack
// small enough for the collector to halve it (a goroutine a stream, so its
// stack is most of a stream's memory).
//
//go:noinline
func (rs *requestState) send(ctx context.Context, c *Client, req *Request, body []byte, wd *watchdog.Watchdog) (*http.Response, error) {
	trace := &httptrace.ClientTrace{
		WroteHeaders: func() {
			rs.wroteHeaders.CompareAndSwap(0, time.Since(epoch).Nanoseconds())
		},
		WroteRequest: func(httptrace.WroteRequestInfo) {
			if rs.sent.CompareAndSwap(0, time.Since(epoch).Nanoseconds()) {
				wd.Enter(watchdog.Headers)
			}
		},
	}
	hreq, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost,
		strings.TrimRight(c.BaseURL, "/")+req.API.path(), bytes.NewReader(body))
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redact.URL(ue.URL) // url.Parse quotes the whole URL, password included
		}
		return nil, &Error{Kind: metrics.KindOther, Err: err}
	}
	hreq.Header.Set("Content-Type", "application/json")
	if req.API.pooled() {
		hreq.Header.Set("Accept", "application/json")
	} else {
		hreq.Header.Set("Accept", "text/event-stream")
	}
	if c.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	if req.API == Messages {
		// Anthropic's API asks for its version and takes the key here.
		hreq.Header.Set("Anthropic-Version", "2023-06-01")
		if c.APIKey != "" {
			hreq.Header.Set("X-Api-Key", c.APIKey)
		}
	}
	for k, vs := range c.Header {
		hreq.Header[k] = vs
	}
	for k, vs := range req.Header {
		hreq.Header[k] = vs
	}

	resp, err := c.hc.Do(hreq)
	if err != nil {
		if ns := rs.sent.Load(); ns != 0 {
			rs.tl.Sent = rs.at(ns)
		}
		if e := asNotHTTP("POST "+c.urlOf(req), err); e != nil && context.Cause(ctx) == nil {
			return nil, e
		}
		return nil, rs.classify(ctx, err, true)
	}
	return resp, nil
}

// answered records what the response's headers say and returns how its
// body is labelled, or the error its status or headers make of it. For api
// Embeddings and Rerank it reads the whole answer too.
//
//go:noinline
func (rs *requestState) answered(ctx context.Context, cancel context.CancelCauseFunc, c *Client, req *Request, resp *http.Response, wd *watchdog.Watchdog) (streamLabel, error) {
	// The request, its headers and URL, is not needed again: let it go
	// rather than hold it for as long as the stream lasts.
	resp.Request = nil
	arrivals, _ := resp.Body.(arrivalBody)
	rs.tl.Headers = arrivalTime(arrivals, time.Now())
	rs.tl.Sent = rs.sentBefore(rs.tl.Headers)
	rs.tl.ID = requestID(resp.Header.Get("X-Request-Id"))
	if rs.id != nil {
		*rs.id = rs.tl.ID
	}
	st, ok, bad := timingHeaders(resp.Header)
	if ok {
		rs.tl.Server = st
	}
	rs.timingsBad = bad
	wd.Enter(watchdog.First)

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := readStatusError(resp)
		se.URL = "POST " + c.urlOf(req)
		return 0, &Error{Kind: se.kind(), Err: se}
	}
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		// net/http's transport decodes gzip itself when it asked for it;
		// anything still encoded here would be read as garbage.
		return 0, &Error{Kind: metrics.KindContentEncoding, Err: fmt.Errorf("%w: %q; the request did not ask for it", errContentEncoding, enc)}
	}
	if req.API.pooled() {
		return 0, rs.readAnswer(ctx, c, resp, req)
	}
	label := labelOf(resp.Header.Get("Content-Type"))
	if label == labelNotSSE {
		return 0, &Error{Kind: metrics.KindNotEventStream, Err: notEventStream("POST "+c.urlOf(req), resp, nil, cancel)}
	}
	return label, nil
}

// maxRequestIDLen bounds the server's X-Request-Id as a request keeps it,
// in bytes: ids in use (UUIDs, vLLM's "chatcmpl-" ids) are under 100, and
// without a bound a hostile server could make every request's record as
// large as its headers.
const maxRequestIDLen = 256

// requestID returns the server's X-Request-Id as the request keeps it: as
// it came when it is at most maxRequestIDLen bytes, else its first
// maxRequestIDLen bytes, cut at a character's start, followed by "…".
func requestID(v string) string {
	if len(v) <= maxRequestIDLen {
		return v
	}
	n := maxRequestIDLen
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return v[:n] + "…"
}

// An arrivalBody is a response body that knows when the bytes of its last
// Read reached the socket: [StreamTransport]'s, from the kernel's receive
// timestamps on Linux. The client stamps chunks with that time rather than
// the time it got to them, so a client short of CPU still times every token
// as it came.
type arrivalBody interface {
	arrival() time.Time
}

// arrivalTime is body's last arrival time, if body is not nil and has one
// no later than now, and now otherwise.
func arrivalTime(body arrivalBody, now time.Time) time.Time {
	if body != nil {
		if t := body.arrival(); !t.IsZero() && !t.After(now) {
			return t
		}
	}
	return now
}

// epoch anchors the monotonic nanosecond stamps kept in atomics.
var epoch = time.Now()

// at returns the time of a stamp of ns nanoseconds since epoch, on the
// wall clock as the request's start read it: epoch's own wall reading
// would differ from the start's by any step the system clock took between
// (a virtual machine resumed, the time synchronised).
func (rs *requestState) at(ns int64) time.Time {
	return rs.tl.Start.Add(time.Duration(ns) - rs.tl.Start.Sub(epoch))
}

// sentBefore returns when the request was written, given that its response
// headers arrived at headers. It is when net/http, or StreamTransport, said
// it wrote the request; but net/http says so from its writing goroutine
// once the body is out, and the response can overtake that report: a busy
// machine keeps the goroutine waiting for a CPU, or the server answers
// before it has read the whole body. A report that is missing or later
// than the headers is late; then the time the request's headers were
// written, just before its body, is the best known; failing that, the
// response's arrival. Sent is never after Headers, so time to first token
// is never cut to nothing by a late report.
func (rs *requestState) sentBefore(headers time.Time) time.Time {
	for _, ns := range [...]int64{rs.sent.Load(), rs.wroteHeaders.Load()} {
		if t := rs.at(ns); ns != 0 && !t.After(headers) {
			return t
		}
	}
	return headers
}

// netHTTPHeadersTooLarge starts net/http's error for response headers
// beyond its MaxResponseHeaderBytes; net/http has no error value for it.
const netHTTPHeadersTooLarge = "net/http: server response headers exceeded"

// classify turns a transport or read error into an *Error, preferring the
// cause the watchdog or the caller gave the context.
func (rs *requestState) classify(ctx context.Context, err error, beforeHeaders bool) error {
	if cause := context.Cause(ctx); cause != nil {
		switch {
		case errors.Is(cause, errConnectTimeout):
			return &Error{Kind: metrics.KindConnect, Err: cause}
		case errors.Is(cause, errHeaderTimeout):
			return &Error{Kind: metrics.KindHeaderTimeout, Err: cause}
		case errors.Is(cause, errFirstTokenTimeout):
			return &Error{Kind: metrics.KindFirstTokenTimeout, Err: cause}
		case errors.Is(cause, errStall):
			return &Error{Kind: metrics.KindStall, Err: cause}
		case errors.Is(cause, errStopped):
			return nil
		default:
			return &Error{Kind: metrics.KindCanceled, Err: cause}
		}
	}
	var re *RedirectError
	switch {
	case errors.As(err, &re):
		return &Error{Kind: metrics.KindRedirect, Err: re}
	case errors.Is(err, ErrHeadersTooLarge):
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // StreamTransport's, with the limit; the URL is the request's own
		}
		return &Error{Kind: metrics.KindOversize, Err: err}
	case strings.Contains(err.Error(), netHTTPHeadersTooLarge):
		return &Error{Kind: metrics.KindOversize, Err: fmt.Errorf("%w (%s)", ErrHeadersTooLarge, errors.Unwrap(err))}
	case errors.Is(err, sse.ErrEventTooLarge):
		return &Error{Kind: metrics.KindOversize, Err: errOversize}
	case beforeHeaders && rs.tl.Sent.IsZero():
		return &Error{Kind: metrics.KindConnect, Err: err}
	}
	return &Error{Kind: metrics.KindTruncated, Err: &causes{rule: errTruncated, err: err}}
}

// read consumes the SSE body of resp, labelled as label says: on a poller,
// where the transport offers one and the request allows it (see
// [pollBody]), or else by reading the body here.
func (rs *requestState) read(ctx context.Context, cancel context.CancelCauseFunc, c *Client, resp *http.Response, label streamLabel, req *Request, wd *watchdog.Watchdog) error {
	maxEvent := c.MaxEventSize
	if maxEvent <= 0 {
		maxEvent = defaultMaxEventSize
	}
	sr := &streamReader{rs: rs, ctx: ctx, cancel: cancel, c: c, resp: resp, label: label, req: req, wd: wd}
	if pb, ok := resp.Body.(pollBody); ok && (rs.emit == nil || rs.ownEmit) {
		if src := pb.pollSource(); src != nil {
			c.reads[readPolled].Add(1)
			sr.polled = src
			sr.events = sse.NewReader(src, maxEvent)
			sr.arrivals = src
			err, readErr := src.run(ctx, sr.advance)
			if readErr != nil {
				return sr.fail(readErr)
			}
			return err
		}
	}
	sr.events = sse.NewReader(resp.Body, maxEvent)
	sr.arrivals, _ = resp.Body.(arrivalBody)
	if sr.arrivals != nil {
		c.reads[readGoroutine].Add(1)
	} else {
		c.reads[readNetHTTP].Add(1)
	}
	_, err := sr.advance()
	return err
}

// streamReader frames and handles the events of one response as its bytes
// come. Read by the goroutine of the request, one call to advance reads the
// whole stream; fed by a poller, each call handles what the socket held and
// returns at sse.ErrWouldBlock.
type streamReader struct {
	rs       *requestState
	ctx      context.Context
	cancel   context.CancelCauseFunc
	c        *Client
	resp     *http.Response
	label    streamLabel
	req      *Request
	wd       *watchdog.Watchdog
	events   *sse.Reader
	arrivals arrivalBody
	polled   polledBody // the body, where it is read on a poller
	ch       chunk.Chunk
	started  bool // past checkStart
}

// fail settles a read that failed: once the stream was complete, or the
// server had said what went wrong, the tail (a stall, a reset) does not
// matter.
func (sr *streamReader) fail(err error) error {
	if sr.rs.done || sr.rs.streamErr != nil {
		return sr.rs.streamErr
	}
	return sr.rs.classify(sr.ctx, err, false)
}

// advance handles the events that can be framed from what is read. done
// reports that the stream has ended, and err is then its outcome; done is
// false only when the reader has no more bytes for now (sse.ErrWouldBlock).
func (sr *streamReader) advance() (done bool, err error) {
	rs, events := sr.rs, sr.events
	if !sr.started {
		notSSE, err := events.CheckStart(sampleSize)
		if err == sse.ErrWouldBlock {
			return false, nil
		}
		if err != nil {
			return true, rs.classify(sr.ctx, err, false)
		}
		sr.started = true
		if notSSE != nil || (sr.label == labelUnsure && events.Drained()) {
			if notSSE == nil && sr.arrivals != nil {
				if sr.polled != nil {
					notSSE = []byte{} // the body is empty, and its socket the poller's
				}
			}
			return true, &Error{Kind: metrics.KindNotEventStream, Err: notEventStream("POST "+sr.c.urlOf(sr.req), sr.resp, notSSE, sr.cancel)}
		}
	}
	ch := &sr.ch
	for {
		data, err := events.Next()
		if err == sse.ErrWouldBlock {
			return false, nil
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return true, sr.fail(err)
		}
		t := arrivalTime(sr.arrivals, time.Now())
		if rs.done || len(data) == 0 {
			continue // after [DONE], read on to EOF so the connection is reused
		}
		if events.ErrorEvent {
			if rs.streamErr == nil {
				rs.streamErr = &Error{Kind: metrics.KindStreamError, Err: eventError(data)}
			}
			continue
		}
		if err := chunk.Parse(data, ch); err != nil {
			return true, &Error{Kind: metrics.KindMalformed, Err: newChunkError(data, err)}
		}
		if ch.Done {
			rs.done = true
			rs.tl.Done = true
			continue
		}
		if ch.IsError {
			if rs.streamErr == nil {
				rs.streamErr = &Error{Kind: metrics.KindStreamError, Err: &StreamError{
					Message: chunk.DecodeString(ch.ErrMsg), Type: chunk.DecodeString(ch.ErrType), Code: chunk.DecodeString(ch.ErrCode),
				}}
			}
			continue // vLLM follows its error with [DONE]: read on
		}
		if rs.streamErr != nil {
			continue
		}
		more, err := rs.onChunk(ch, t, sr.wd)
		if err != nil {
			return true, err
		}
		if sr.polled != nil && ch.Tokens > 0 {
			sr.polled.tokenAt(t)
		}
		if !more {
			sr.cancel(errStopped)
			return true, nil
		}
		if ch.End {
			rs.tl.Done = true
			rs.done = true
		}
	}
	if rs.streamErr != nil {
		return true, rs.streamErr
	}
	if !rs.done && rs.tl.FinishReason == "" {
		if err := context.Cause(sr.ctx); err != nil {
			return true, rs.classify(sr.ctx, err, false)
		}
		return true, &Error{Kind: metrics.KindTruncated, Err: errTruncated}
	}
	if rs.count.empty() && !rs.tl.ToolCall {
		return true, &Error{Kind: metrics.KindEmptyAnswer, Err: errEmptyAnswer}
	}
	return true, nil
}

// eventError is the server's error in an SSE event of type "error": an
// error object as in a chunk, an object with a top-level message (OpenAI's
// Responses API, Anthropic), or plain text.
func eventError(data []byte) *StreamError {
	var ch chunk.Chunk
	if chunk.Parse(data, &ch) == nil {
		se := &StreamError{Message: chunk.DecodeString(ch.ErrMsg), Type: chunk.DecodeString(ch.ErrType), Code: chunk.DecodeString(ch.ErrCode)}
		if se.Message == "" {
			se.Message = chunk.DecodeString(ch.TopMessage)
		}
		if se.Message != "" {
			return se
		}
	}
	msg := strings.TrimSpace(string(data))
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	return &StreamError{Message: msg}
}

// onChunk counts a chunk's tokens and passes it on. It reports whether to go
// on reading, or why the chunk's counts cannot be true.
func (rs *requestState) onChunk(ch *chunk.Chunk, t time.Time, wd *watchdog.Watchdog) (bool, error) {
	k, err := rs.count.add(ch)
	if err != nil {
		return false, &Error{Kind: metrics.KindMalformed, Err: err}
	}
	if ch.HasUsage {
		rs.tl.CompletionTokens = int(ch.Completion)
	}
	if ch.Prompt > 0 {
		rs.tl.PromptTokens = int(ch.Prompt)
	}
	if ch.Cached > 0 {
		rs.tl.CachedTokens = int(ch.Cached)
	}
	if ch.Timings.Set {
		rs.tl.Server = ch.Timings.Server()
	}
	if ch.Timings.Bad != "" && rs.timingsBad == "" {
		rs.timingsBad = ch.Timings.Bad
	}
	if ch.Finish != nil && rs.tl.FinishReason == "" {
		rs.tl.FinishReason = chunk.DecodeString(ch.Finish)
	}
	if ch.ToolCall {
		rs.tl.ToolCall = true
	}
	r := rs.kinds.Split(ch, k)
	rs.tl.ReasoningTokens += r
	if r < k && rs.tl.FirstAnswer.IsZero() {
		rs.tl.FirstAnswer = t
	}
	if k > 0 {
		if rs.tl.Chunks == 0 {
			wd.Enter(watchdog.Stream)
		}
		rs.observe(t, k)
		wd.Touch(t)
	} else if rs.rule == StallOnChunks && rs.tl.Chunks > 0 {
		wd.Touch(t)
	}
	rs.lastTime = t
	if rs.emit != nil && (k > 0 || ch.Finish != nil || ch.HasUsage) {
		out := Chunk{Time: t, Tokens: k, HasUsage: ch.HasUsage,
			PromptTokens: int(ch.Prompt), CompletionTokens: int(ch.Completion)}
		out.Text = chunk.DecodeString(ch.Content)
		out.Reasoning = chunk.DecodeString(ch.Reasoning)
		if ch.Finish != nil {
			out.FinishReason = chunk.DecodeString(ch.Finish)
		}
		return rs.emit(&out), nil
	}
	return true, nil
}

func (rs *requestState) observe(t time.Time, k int) {
	if rs.obs != nil {
		rs.obs.Observe(rs.tl, t, k)
	} else {
		rs.tl.Observe(t, k)
	}
}

// finish settles the token count once the stream has ended.
func (rs *requestState) finish() {
	tl := rs.tl
	if pending := rs.count.flush(); pending > 0 && !rs.lastTime.IsZero() {
		rs.observe(rs.lastTime, pending) // no visible token ever came
	}
	tl.Source, tl.ExtraTokens = rs.count.source(tl.Chunks > 0)
	tl.ReasoningTokens, tl.ReasoningOverclaim = rs.kinds.Tokens(tl.ReasoningTokens, tl.OutputTokens())
	rs.settleServer()
}

// readStatusError reads an error response's body (at most 64 KiB) for the
// server's message.
func readStatusError(resp *http.Response) *StatusError {
	se := &StatusError{StatusCode: resp.StatusCode}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		se.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		se.Message = fmt.Sprintf("(a body in the %q content encoding)", enc)
		return se
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var ch chunk.Chunk
	if chunk.Parse(b, &ch) == nil && (ch.IsError || ch.TopMessage != nil) {
		se.Message = chunk.DecodeString(ch.ErrMsg)
		if se.Message == "" {
			se.Message = chunk.DecodeString(ch.TopMessage)
		}
		se.Type = chunk.DecodeString(ch.ErrType)
		if se.Type == "" {
			se.Type = chunk.DecodeString(ch.TopType)
		}
		se.Code = chunk.DecodeString(ch.ErrCode)
		return se
	}
	var detail struct {
		Detail json.RawMessage `json:"detail"` // FastAPI
	}
	if json.Unmarshal(b, &detail) == nil && len(detail.Detail) > 0 {
		se.Message = chunk.DecodeString(detail.Detail)
		return se
	}
	se.Message = strings.TrimSpace(string(b))
	if len(se.Message) > 500 {
		se.Message = se.Message[:500] + "…"
	}
	return se
}
