package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/nothttp"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/loadgen/internal/watchdog"
	"github.com/llmload/llmload/metrics"
)

// The causes of the deadlines and rules a request broke. A request's error
// is an [*Error] that wraps one of these, a [*StatusError], a
// [*StreamError], a [*ChunkError] or the context's cause. Its kind, which
// [KindOf] reads, says which: one classification, the one every report
// counts by; [errors.As] reaches the typed causes.
var (
	errConnectTimeout    = errors.New("loadgen: connecting and writing the request took longer than ConnectTimeout")
	errHeaderTimeout     = errors.New("loadgen: no response headers within HeaderTimeout")
	errFirstTokenTimeout = errors.New("loadgen: no token within FirstTokenTimeout of the response headers")
	errStall             = errors.New("loadgen: no token within StallTimeout; the server stalled")
)

// phaseErrors are the causes of the watchdog's phase deadlines, by
// watchdog.Phase.
var phaseErrors = [watchdog.NumPhases]error{errConnectTimeout, errHeaderTimeout, errFirstTokenTimeout, errStall}

var (
	errTruncated = errors.New("loadgen: stream ended without [DONE] or a finish reason")
	errOversize  = errors.New("loadgen: an SSE event is larger than MaxEventSize")
	// errEmptyAnswer is the cause of a stream that ended as it should,
	// with [DONE] or a finish reason (Messages' message_stop, Responses'
	// response.completed), and carried no token and no tool call: it
	// measured nothing, so it is no success.
	errEmptyAnswer = errors.New("loadgen: the answer ended without a token")
	// ErrHeadersTooLarge is the cause of response headers, informational
	// responses included, larger than the transport allows (net/http's
	// MaxResponseHeaderBytes, [StreamTransport.MaxResponseHeaderBytes]).
	ErrHeadersTooLarge = errors.New("loadgen: the response headers exceed the transport's limit")
	// errContentEncoding is the cause of a response body in an encoding
	// the transport did not decode, such as gzip when the request did not
	// ask for it.
	errContentEncoding = errors.New("loadgen: the response body has a content encoding the client does not decode")
)

// Error is the failure of one request: its kind, how far the stream got, and
// the cause. Whatever was measured before the failure stays in the request's
// timeline.
//
// Every failure is an [*Error] with a [github.com/llmload/llmload/metrics.ErrorKind]
// and a cause: [*StatusError] for a response outside 2xx, naming the
// request (a length rejection is of kind
// [github.com/llmload/llmload/metrics.KindTooLong], a 429 of kind
// KindRateLimited with its Retry-After), [*NotEventStreamError] for an answer that is not
// an event stream (an HTML page, a whole JSON completion, a peer that is
// not HTTP), [*StreamError] for an error object in the stream or an SSE
// event of type "error", [*ChunkError] for a malformed chunk,
// [*UsageError] for a count that cannot be true, [*RedirectError] for a
// redirect not followed (a loop, too many, or one that would turn the POST
// into a GET), a body the transport did not decode (gzip), an oversized
// event, [ErrHeadersTooLarge], a truncated stream, the phase deadlines
// (ConnectTimeout, HeaderTimeout, FirstTokenTimeout, StallTimeout), or the
// context's cause. [KindOf] classifies any of them into one
// [github.com/llmload/llmload/metrics.ErrorKind] (KindStall, KindTruncated,
// KindOversize, KindContentEncoding…), the one spelling of what went
// wrong. Whatever was measured before the failure is kept.
//
// A [Generator], [Client] or [Request] that cannot work is refused before
// anything is sent, with a [*ConfigError] naming the field and why: a
// negative Streams, a rate that is not above 0, an http.Client with a
// Timeout, a Request changed after its first use, a Source that returns
// nil. Each has a Validate method for tools that check before they run.
type Error struct {
	Kind   metrics.ErrorKind
	Chunks int   // chunks with tokens received before the failure
	Err    error // the cause
}

// Error says the kind, how far the stream got, and the cause.
func (e *Error) Error() string {
	if e.Chunks > 0 {
		return fmt.Sprintf("%s after %d chunks: %v", e.Kind, e.Chunks, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Kind, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of a request's error: the Kind of an [*Error] in
// its chain, [metrics.KindNone] for nil, and [metrics.KindOther] otherwise.
func KindOf(err error) metrics.ErrorKind {
	if err == nil {
		return metrics.KindNone
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return metrics.KindCanceled
	}
	return metrics.KindOther
}

// StatusError is a response with a status outside 2xx. Message is the
// server's own message where its body had one (OpenAI's, vLLM's and TGI's
// error shapes), else the start of the body. Message, Type and Code hold
// the server's text as it sent it; Error writes it on one line, with
// control characters escaped.
type StatusError struct {
	StatusCode int
	// URL is the request that got the response, such as "POST
	// http://127.0.0.1:8000/v1/chat/completions", without user
	// information.
	URL     string
	Message string
	// Type and Code come from the error body when it has them.
	Type, Code string
	// RetryAfter is the server's Retry-After on a 429 or 503, 0 when absent.
	RetryAfter time.Duration
}

// Error says the status, the URL asked and the server's message, on one
// line.
func (e *StatusError) Error() string {
	msg := fmt.Sprintf("server returned %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.URL != "" {
		msg += " to " + e.URL
	}
	if e.Message != "" {
		msg += ": " + textsafe.Escape(e.Message)
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %v)", e.RetryAfter)
	}
	if (e.StatusCode == http.StatusNotFound || e.StatusCode == http.StatusMethodNotAllowed) && !strings.Contains(e.URL, "/v1/") {
		msg += "; is BaseURL the API root? It usually ends in /v1"
	}
	return msg
}

// kind classifies the status. A 400 or 413 whose message speaks of the
// context length is a length rejection (vLLM: "maximum context length",
// "max_model_len"; TGI: "must be <="; SGLang: "is longer than").
func (e *StatusError) kind() metrics.ErrorKind {
	switch {
	case e.StatusCode == http.StatusTooManyRequests:
		return metrics.KindRateLimited
	case e.StatusCode == http.StatusRequestEntityTooLarge:
		return metrics.KindTooLong
	case e.StatusCode == http.StatusBadRequest && isLengthMessage(e.Message):
		return metrics.KindTooLong
	case e.StatusCode >= 500:
		return metrics.KindServerStatus
	}
	return metrics.KindClientStatus
}

func isLengthMessage(msg string) bool {
	m := strings.ToLower(msg)
	for _, w := range []string{"context length", "max_model_len", "maximum context", "too long", "is longer than", "must be <=", "input tokens"} {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// StreamError is an error object the server sent inside a 200 stream, such as
// vLLM's {"error": {"message": ..., "type": ..., "code": ...}} or TGI's
// {"error": "...", "error_type": "..."}, or an SSE event of type "error".
// Its fields hold the server's text as it sent it; Error writes it on one
// line, with control characters escaped.
type StreamError struct {
	Message, Type, Code string
}

// Error says what the server sent.
func (e *StreamError) Error() string {
	var b strings.Builder
	b.WriteString("server sent an error in the stream")
	if e.Type != "" {
		b.WriteString(" (" + textsafe.Escape(e.Type) + ")")
	}
	if e.Code != "" {
		b.WriteString(" code " + textsafe.Escape(e.Code))
	}
	if e.Message != "" {
		b.WriteString(": " + textsafe.Escape(e.Message))
	}
	return b.String()
}

// ChunkError is a chunk that could not be read: not JSON, or not of the shape
// of a streamed completion; or the whole answer of an Embeddings or Rerank
// request, not of its API's shape. Data holds its start.
type ChunkError struct {
	Data string
	Err  error
	what string // what was read, when not a chunk: "embeddings answer"
}

// Error quotes the start of the chunk and says what is wrong with it.
func (e *ChunkError) Error() string {
	what := e.what
	if what == "" {
		what = "chunk"
	}
	return fmt.Sprintf("malformed %s %q: %v", what, e.Data, e.Err)
}

// Unwrap returns the cause.
func (e *ChunkError) Unwrap() error { return e.Err }

func newChunkError(data []byte, err error) *ChunkError {
	const max = 200
	if len(data) > max {
		return &ChunkError{Data: string(data[:max]) + "…", Err: err}
	}
	return &ChunkError{Data: string(data), Err: err}
}

// RedirectError is a redirect the client would not or could not follow: a
// loop, more than 10 in a row, or a 301, 302 or 303, which
// would re-send the POST as a GET without its body. A redirect the client
// follows (307 or 308, to the same origin or another) never carries the
// API key or the client's extra headers to another origin.
type RedirectError struct {
	// StatusCode is the status of the redirect not followed.
	StatusCode int
	// Location is where it pointed, with any password redacted.
	Location string
	// Redirects counts the redirects followed before it.
	Redirects int
	// Reason says why it was not followed.
	Reason string
}

// maxRedirects is the most redirects a [Client] follows for one request, as
// net/http's client.
const maxRedirects = 10

// Error says what the server asked for and why the client did not do it.
func (e *RedirectError) Error() string {
	return fmt.Sprintf("server answered %d to %s: %s", e.StatusCode, textsafe.Escape(e.Location), e.Reason)
}

// maxReportedTokens bounds every token count a server reports for one
// request (prompt, completion or cached tokens) and the tokens a response
// may carry: no model's context comes near it, and with it no sum of
// counts can overflow.
const maxReportedTokens = 100_000_000

// maxTokensFactor is how far a response's tokens may exceed the request's
// MaxTokens before the count is refused: by this factor, and by at least
// 1,000 tokens. A server that ignores max_tokens a little, or a request
// with several choices, stays within it; a count off by orders of
// magnitude does not.
const maxTokensFactor = 100

// UsageError is a token count that cannot be true: a count reported larger
// than any request can carry (10^8 tokens, or 100 times the request's
// MaxTokens, at least 1,000), or a running count that went down. The
// request is malformed; the tokens counted before it are kept, the count
// itself is not.
type UsageError struct {
	// Field names the count: "usage.completion_tokens",
	// "usage.prompt_tokens", "usage.cached_tokens", or "tokens counted one
	// per delta".
	Field string
	// Got is the count reported; Before the previous report of the same
	// field when it went down, or -1.
	Got, Before int64
	// Limit is the bound Got broke, or 0 when it went down.
	Limit int64
	// MaxTokens is the request's MaxTokens, 0 when it set none.
	MaxTokens int
}

// Error says which count and why it cannot be true.
func (e *UsageError) Error() string {
	switch {
	case e.Got < 0:
		return fmt.Sprintf("%s is %d: not a count", e.Field, e.Got)
	case e.Limit == 0:
		return fmt.Sprintf("%s went down from %d to %d: not a running count", e.Field, e.Before, e.Got)
	case e.MaxTokens > 0 && e.Limit < maxReportedTokens:
		return fmt.Sprintf("%s is %d, beyond the %d a request with max_tokens %d can carry", e.Field, e.Got, e.Limit, e.MaxTokens)
	}
	return fmt.Sprintf("%s is %d, beyond the %d any request can carry", e.Field, e.Got, e.Limit)
}

// NotEventStreamError is an answer that is not the event stream a streaming
// request asks for: a 2xx response of another Content-Type (an HTML login
// page, a plain JSON completion from a server that ignored "stream": true),
// one labelled text/event-stream whose first bytes are not, or a peer that
// does not speak HTTP at all. Its kind is
// [github.com/llmload/llmload/metrics.KindNotEventStream].
//
// A response without a Content-Type, or with text/plain, is read as an
// event stream when its first line is one (a data, event, id or retry
// field, or a comment), since some servers and proxies label streams so.
type NotEventStreamError struct {
	// URL is the request, such as "POST
	// http://127.0.0.1:8000/v1/chat/completions", without user
	// information.
	URL string
	// StatusCode and Status are the response's ("200 OK"). When the peer
	// did not answer in HTTP, StatusCode is 0 and Status says what was
	// wrong with its answer ("malformed HTTP response").
	StatusCode int
	Status     string
	// ContentType is the response's Content-Type header, "" if none.
	ContentType string
	// Body is the start of what came back (for a peer that did not answer
	// in HTTP, the part of its first line at fault), about 64 bytes, with
	// control characters and runs of white space replaced by one space,
	// and "…" where more came.
	Body string
	// NotHTTP reports a peer that did not answer in HTTP.
	NotHTTP bool
}

// Error says what came back instead of an event stream, on one line.
func (e *NotEventStreamError) Error() string {
	var b strings.Builder
	if e.NotHTTP {
		fmt.Fprintf(&b, "%s did not answer in HTTP (%s %q); is that the address of the server's HTTP API?", e.URL, e.Status, e.Body)
		return b.String()
	}
	ct := "no Content-Type"
	if e.ContentType != "" {
		ct = "Content-Type " + strconv.Quote(e.ContentType)
	}
	fmt.Fprintf(&b, "%s answered %s with %s", e.URL, e.Status, ct)
	if mediaType(e.ContentType) == "text/event-stream" {
		b.WriteString(", but its body is not an event stream")
	} else {
		b.WriteString(", not an event stream")
	}
	if e.Body == "" {
		b.WriteString(", and an empty body")
	} else {
		fmt.Fprintf(&b, "; the body begins %q", e.Body)
	}
	switch mediaType(e.ContentType) {
	case "text/html":
		b.WriteString(": a web page, such as a login page or a web UI; check BaseURL")
	case "application/json":
		b.WriteString(": a whole response at once, as from a server that ignored \"stream\": true or an endpoint that does not stream")
	case "application/x-ndjson":
		b.WriteString(": newline-delimited JSON, as from a native API (Ollama's /api); point BaseURL at the OpenAI-compatible API, such as http://host:11434/v1")
	}
	return b.String()
}

// mediaType returns a Content-Type's media type, lower-cased, without
// parameters.
func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.ToLower(strings.TrimSpace(ct))
}

// streamLabel says how a 2xx response's Content-Type labels its body.
type streamLabel uint8

const (
	labelStream streamLabel = iota // text/event-stream
	labelUnsure                    // none, or text/plain: the first line decides
	labelNotSSE                    // anything else
)

// labelOf reads a Content-Type without allocating.
func labelOf(ct string) streamLabel {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	switch {
	case strings.EqualFold(ct, "text/event-stream"):
		return labelStream
	case ct == "" || strings.EqualFold(ct, "text/plain"):
		return labelUnsure
	}
	return labelNotSSE
}

// sampleSize is how much of a body a NotEventStreamError quotes, and how
// much of the first line decides whether a body is an event stream.
const sampleSize = nothttp.Quote

// sampleWait bounds the wait for the start of a body that is not an event
// stream.
const sampleWait = time.Second

// notEventStream returns the error for resp, whose body is not an event
// stream, with the start of its body: sample if given, else what comes
// within sampleWait (cancel ends the wait).
func notEventStream(url string, resp *http.Response, sample []byte, cancel context.CancelCauseFunc) *NotEventStreamError {
	if sample == nil {
		t := time.AfterFunc(sampleWait, func() { cancel(errStopped) })
		buf := make([]byte, sampleSize+1) // one more, to know whether it is cut
		n, _ := io.ReadFull(resp.Body, buf)
		t.Stop()
		sample = buf[:n]
	}
	return &NotEventStreamError{
		URL: url, StatusCode: resp.StatusCode, Status: statusLine(resp.StatusCode),
		ContentType: resp.Header.Get("Content-Type"), Body: bodyStart(sample),
	}
}

func statusLine(code int) string {
	return strings.TrimSpace(strconv.Itoa(code) + " " + http.StatusText(code))
}

// bodyStart returns the start of a body as a message quotes it: at most
// sampleSize bytes of b, sanitized, with "…" when b holds more.
func bodyStart(b []byte) string { return textsafe.Start(b, sampleSize) }

// asNotHTTP returns the failure of a request whose peer did not answer in
// HTTP (see [nothttp.Parse]): an [*Error] of kind KindNotEventStream
// holding a [*NotEventStreamError]. For any other error it returns nil.
// request names the request, such as "POST http://127.0.0.1:8000/v1/chat/completions",
// without user information.
func asNotHTTP(request string, err error) *Error {
	what, sent, ok := nothttp.Parse(err)
	if !ok {
		return nil
	}
	return &Error{Kind: metrics.KindNotEventStream, Err: &NotEventStreamError{URL: request, NotHTTP: true, Status: what, Body: sent}}
}

// causes are two causes of one failure: the rule the request broke and the
// error that showed it. Its message is on one line; errors.Is and errors.As
// see both.
type causes struct {
	rule, err error
}

func (c *causes) Error() string { return c.rule.Error() + ": " + textsafe.Escape(c.err.Error()) }

func (c *causes) Unwrap() []error { return []error{c.rule, c.err} }
