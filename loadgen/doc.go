// Package loadgen sends streaming completion requests to an
// OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp, Ollama, OpenAI
// itself) and timestamps every token as it arrives.
//
// [Client.Stream] yields one response's chunks; [Client.Do] reads a whole
// response into a [Response]; [Client.Measure] fills a
// [github.com/llmload/llmload/metrics.Timeline] and hands every chunk's
// tokens to an [Observer] such as a
// [github.com/llmload/llmload/metrics.Recorder], without allocating per
// chunk. See [github.com/llmload/llmload/loadgen/loadgentest] for a
// simulated server to point it at. A [Generator] runs a [Load]: N
// requests kept in flight ([Closed]), requests sent at a rate ([Open]) or
// on a schedule such as a trace's ([Schedule]);
// [github.com/llmload/llmload/loadgen/workload]
// decides what it sends (datasets, synthetic lengths, traces, sessions)
// and [github.com/llmload/llmload/loadgen/sweep] runs it in sweeps and SLO
// searches.
//
// Embeddings and rerank requests ([Embeddings], [Rerank]) are not
// streamed: the answer is one JSON body, read whole within
// [Client.MaxBodySize] and checked for its API's shape. Such a request
// records its input tokens (the usage's prompt_tokens, as PromptTokens),
// its latency to the body's last byte, and no output; it completes when
// the answer is whole and well formed.
//
// # Connections
//
// A Client without an HTTPClient uses [NewTransport], net/http's transport
// with a pool as large as the load. For thousands of streams,
// [StreamTransport] takes much less memory: it runs no goroutine of its
// own, where net/http runs two for every connection. On Linux it
// also times chunks by the kernel's receive timestamps, so the client's own
// scheduling delays stay out of TTFT and time between tokens; with its
// Poll set, a few shared pollers read every stream, one system call a
// chunk (a poller waits up to 1 ms after a wake to read a server's step
// together: 1.04-1.18 system calls a token in all at 64 and 256 streams),
// at about two thirds of the CPU per token.
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
// # Failures
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
package loadgen
