package metrics

import (
	"slices"
	"time"
)

// TokenSource says how a request's output tokens were counted, by the
// name reports and JSON give it. The zero TokenSource means no token
// arrived, so nothing was counted.
type TokenSource string

const (
	// sourceUnknown: no token arrived, so nothing was counted.
	sourceUnknown TokenSource = ""
	// SourceUsageDeltas: the server sent usage on every chunk
	// (vLLM's continuous_usage_stats) and each chunk counted the growth of
	// completion_tokens.
	SourceUsageDeltas TokenSource = "usage_deltas"
	// SourceChunks: one token per non-empty content or reasoning delta.
	SourceChunks TokenSource = "chunks"
	// SourceFinalUsage: chunks were counted one each, and the final usage
	// reported more; the difference is in [Timeline.ExtraTokens].
	SourceFinalUsage TokenSource = "final_usage"
)

// tokenSources are the sources a recorder counts, in the order of its
// counts.
var tokenSources = [...]TokenSource{sourceUnknown, SourceUsageDeltas, SourceChunks, SourceFinalUsage}

// ErrorKind classifies why a request failed, by the name reports and JSON
// give it ("stall", "rate_limited"…). Its zero value, [KindNone], means it
// did not.
type ErrorKind string

// The kinds of failure. Each names the phase or the evidence, so a report can
// say what went wrong without parsing messages.
const (
	KindNone              ErrorKind = ""
	KindConnect           ErrorKind = "connect"             // could not connect or write the request
	KindHeaderTimeout     ErrorKind = "header_timeout"      // no response headers within the deadline
	KindFirstTokenTimeout ErrorKind = "first_token_timeout" // headers came, the first token did not
	KindStall             ErrorKind = "stall"               // no token within the stall deadline
	KindRateLimited       ErrorKind = "rate_limited"        // HTTP 429
	KindTooLong           ErrorKind = "too_long"            // HTTP 400: prompt + max tokens exceed the context
	KindServerStatus      ErrorKind = "server_status"       // HTTP 5xx
	KindClientStatus      ErrorKind = "client_status"       // another HTTP 4xx
	KindStreamError       ErrorKind = "stream_error"        // an error object inside a 200 stream
	KindMalformed         ErrorKind = "malformed"           // a chunk that is not valid JSON of the expected shape
	KindOversize          ErrorKind = "oversize"            // an event larger than the size limit
	KindTruncated         ErrorKind = "truncated"           // the stream ended without [DONE] or a finish reason
	KindCanceled          ErrorKind = "canceled"            // the caller cancelled (for example at the end of a window)
	KindOther             ErrorKind = "other"               // anything else
	KindNotEventStream    ErrorKind = "not_event_stream"    // a 2xx response that is not an event stream (HTML, plain JSON, not HTTP)
	KindRedirect          ErrorKind = "redirect"            // a redirect the client would not or could not follow (a loop, too many)
	KindContentEncoding   ErrorKind = "content_encoding"    // a response body in an encoding the client does not decode (gzip SSE)
	KindEmptyAnswer       ErrorKind = "empty_answer"        // the stream ended as it should ([DONE], a finish reason) without a token or tool call
)

// errorKinds are the kinds, KindNone first, in the order a recorder
// counts them.
var errorKinds = [...]ErrorKind{
	KindNone, KindConnect, KindHeaderTimeout, KindFirstTokenTimeout, KindStall,
	KindRateLimited, KindTooLong, KindServerStatus, KindClientStatus,
	KindStreamError, KindMalformed, KindOversize, KindTruncated, KindCanceled, KindOther,
	KindNotEventStream, KindRedirect, KindContentEncoding, KindEmptyAnswer,
}

// Kinds lists every error kind but [KindNone], in order.
func Kinds() []ErrorKind { return slices.Clone(errorKinds[1:]) }

// kindIndex is k's place in errorKinds; a kind of another name counts as
// KindOther.
func kindIndex(k ErrorKind) int {
	if i := slices.Index(errorKinds[:], k); i >= 0 {
		return i
	}
	return slices.Index(errorKinds[:], KindOther)
}

// Timeline is one request's life as the client saw it, on one monotonic
// clock. It holds counters, not samples: its size does not grow with the
// number of tokens.
//
// The client fills the times and the outcome; [Recorder.Observe] fills the
// token fields as chunks arrive. A Timeline is not safe for concurrent use:
// one goroutine owns it until it hands it to [Recorder.Record].
type Timeline struct {
	// Due is when the request should have started: the arrival time in an
	// open-loop run, the start otherwise. Start − Due is lateness.
	Due time.Time
	// Start is when the client began: before connecting, before any wait for
	// a connection.
	Start time.Time
	// Sent is when the request was fully written. Time to first token is
	// measured from here, so client-side waiting never leaks into it.
	Sent time.Time
	// Headers is when the response headers arrived.
	Headers time.Time
	// First and Last are the arrival times of the first and the last chunk
	// that carried tokens.
	First, Last time.Time
	// FirstAnswer is the arrival of the first chunk that carried answer
	// tokens, after any reasoning; zero when none came.
	FirstAnswer time.Time
	// End is when the response ended: [DONE], an error, or cancellation.
	End time.Time

	// Chunks counts the chunks that carried tokens; Tokens the tokens they
	// carried.
	Chunks int
	Tokens int
	// ExtraTokens is what the final usage reported beyond Tokens, when chunks
	// were counted one each (Source is SourceFinalUsage). Reports spread them
	// over the request's chunks.
	ExtraTokens int
	Source      TokenSource

	// ReasoningTokens is how many of the output tokens were reasoning: the
	// usage's reasoning_tokens where the server reported them, else those
	// of reasoning deltas (and of <think>…</think> in the text).
	ReasoningTokens int
	// ReasoningOverclaim is how many reasoning tokens the server's usage
	// (completion_tokens_details.reasoning_tokens) claimed beyond the
	// request's output tokens; ReasoningTokens holds no more than the
	// output. Zero when the claim could be true.
	ReasoningOverclaim int
	// ToolCall reports that the response called a tool: a tool call's
	// name or arguments streamed (chat's tool_calls, Responses' function
	// call, Messages' tool_use input).
	ToolCall bool

	// Usage as the server reported it; zero when it sent none.
	PromptTokens     int
	CompletionTokens int
	CachedTokens     int

	// FinishReason is the server's finish_reason ("stop", "length", ...).
	FinishReason string
	// Done reports that the stream ended with [DONE].
	Done bool
	// Kind and Err say why the request failed; KindNone and nil if it did not.
	Kind ErrorKind
	Err  error

	// Server holds the server's own timings of the request, where it
	// reported them; ID is the server's id for it (its X-Request-Id
	// header), to find it in the server's logs: loadgen keeps at most its
	// first 256 bytes, followed by "…" when it was longer.
	Server ServerTimings
	ID     string
	// Model is the model the request named, which a Recorder with
	// ByModel keeps apart; set it before the first Observe.
	Model string

	// Filled by Recorder.Observe.
	model   *Recorder // the model's, under a Recorder with ByModel
	win     windowTally
	gapBuf  [gapBufLen]gap
	gapN    uint8
	shard   uint16
	sharded bool
}

// windowTally is a request's share of a measurement window.
type windowTally struct {
	tokens int
	chunks int
	last   time.Time
}

// gap is a chunk's gap since the one before, for n tokens (negative in
// the warm-up); d is -1 for a request's first chunk, kept only for a
// series, whose bucket at (Unix nanoseconds) is set when the recorder
// keeps one.
type gap struct {
	d  time.Duration
	n  int64
	at int64
}

const gapBufLen = 16

// OutputTokens returns the request's output tokens: those counted from
// chunks plus any extra the final usage reported.
func (tl *Timeline) OutputTokens() int { return tl.Tokens + tl.ExtraTokens }

// OK reports whether the request completed: no error, and the stream ended
// with [DONE] or a finish reason.
func (tl *Timeline) OK() bool {
	return tl.Kind == KindNone && tl.Err == nil && (tl.Done || tl.FinishReason != "")
}

// TTFT returns the time from the request being written to its first token,
// or 0 when no token arrived.
func (tl *Timeline) TTFT() time.Duration { return span(tl.Sent, tl.First) }

// TTFO returns the time from the request being written to its first answer
// token, after any reasoning, or 0 when no answer token arrived. Without
// reasoning it is [Timeline.TTFT].
func (tl *Timeline) TTFO() time.Duration { return span(tl.Sent, tl.FirstAnswer) }

// AnswerTokens returns the output tokens that were not reasoning.
func (tl *Timeline) AnswerTokens() int { return max(tl.OutputTokens()-tl.ReasoningTokens, 0) }

// TimeBetweenTokens returns (Last − First) ÷ (tokens − 1): the request's mean
// time between tokens over its whole life. It is 0 for fewer than two tokens.
func (tl *Timeline) TimeBetweenTokens() time.Duration { return tl.perToken(tl.Last) }

// Latency returns the end-to-end latency, from the request being written to
// the end of the response, or 0 when either is unknown.
func (tl *Timeline) Latency() time.Duration { return span(tl.Sent, tl.End) }

// tpot returns the time per output token after the first, as vLLM defines
// it: (latency − TTFT) ÷ (output tokens − 1). It is 0 for fewer than two
// tokens or an unfinished request.
func (tl *Timeline) tpot() time.Duration { return tl.perToken(tl.End) }

// clientWait returns how long the request waited on the client side before
// it was written (connecting included), or 0 when unknown.
func (tl *Timeline) clientWait() time.Duration { return span(tl.Start, tl.Sent) }

// span returns to − from, or 0 when either is unknown: the one rule of
// every interval a timeline reports.
func span(from, to time.Time) time.Duration {
	if from.IsZero() || to.IsZero() {
		return 0
	}
	return to.Sub(from)
}

// perToken returns (end − First) ÷ (output tokens − 1), or 0 for fewer
// than two tokens or an unknown end.
func (tl *Timeline) perToken(end time.Time) time.Duration {
	n := tl.OutputTokens()
	if n < 2 {
		return 0
	}
	return span(tl.First, end) / time.Duration(n-1)
}
