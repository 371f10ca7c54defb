package loadgen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/nothttp"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/metrics"
)

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
