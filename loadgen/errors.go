package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmload/llmload/metrics"
)

// Errors that say which deadline or rule a request broke. A request's error
// is an [*Error] that wraps one of these, a [*StatusError], a
// [*StreamError], a [*ChunkError] or the context's cause; test with
// [errors.Is] and [errors.As].
var (
	ErrConnectTimeout    = errors.New("loadgen: connecting and writing the request took longer than ConnectTimeout")
	ErrHeaderTimeout     = errors.New("loadgen: no response headers within HeaderTimeout")
	ErrFirstTokenTimeout = errors.New("loadgen: no token within FirstTokenTimeout of the response headers")
	ErrStall             = errors.New("loadgen: no chunk within StallTimeout; the server stalled")
	ErrTruncated         = errors.New("loadgen: stream ended without [DONE] or a finish reason")
	ErrOversize          = errors.New("loadgen: an SSE event is larger than MaxEventSize")
	ErrTooLong           = errors.New("loadgen: the server rejected the request as too long; lower the prompt or MaxTokens")
	ErrRateLimited       = errors.New("loadgen: the server is rate limiting (HTTP 429)")
)

// Error is the failure of one request: its kind, how far the stream got, and
// the cause. Whatever was measured before the failure stays in the request's
// timeline.
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

// StatusError is a response with a status other than 200. Message is the
// server's own message where its body had one (OpenAI's, vLLM's and TGI's
// error shapes), else the start of the body.
type StatusError struct {
	StatusCode int
	Message    string
	// Type and Code come from the error body when it has them.
	Type, Code string
	// RetryAfter is the server's Retry-After on a 429 or 503, 0 when absent.
	RetryAfter time.Duration
}

// Error says the status and the server's message.
func (e *StatusError) Error() string {
	msg := fmt.Sprintf("server returned %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %v)", e.RetryAfter)
	}
	return msg
}

// Is lets errors.Is match [ErrTooLong] for a length rejection and
// [ErrRateLimited] for a 429.
func (e *StatusError) Is(target error) bool {
	switch target {
	case ErrTooLong:
		return e.kind() == metrics.KindTooLong
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests
	}
	return false
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
// {"error": "...", "error_type": "..."}.
type StreamError struct {
	Message, Type, Code string
}

// Error says what the server sent.
func (e *StreamError) Error() string {
	var b strings.Builder
	b.WriteString("server sent an error in the stream")
	if e.Type != "" {
		b.WriteString(" (" + e.Type + ")")
	}
	if e.Code != "" {
		b.WriteString(" code " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// ChunkError is a chunk that could not be read: not JSON, or not of the shape
// of a streamed completion. Data holds its start.
type ChunkError struct {
	Data string
	Err  error
}

// Error quotes the start of the chunk and says what is wrong with it.
func (e *ChunkError) Error() string {
	return fmt.Sprintf("malformed chunk %q: %v", e.Data, e.Err)
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
