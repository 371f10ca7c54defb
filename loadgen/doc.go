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
// simulated server to point it at. A [Generator] keeps N requests in
// flight (closed loop) or sends them at a rate (open loop).
//
// # Connections
//
// A Client without an HTTPClient uses [NewTransport], net/http's transport
// with a pool as large as the load. For thousands of streams,
// [StreamTransport] takes less than half the memory: it runs no goroutine
// of its own, where net/http runs two for every connection. On Linux it
// also times chunks by the kernel's receive timestamps, so the client's own
// scheduling delays stay out of TTFT and time between tokens.
//
// # What counts
//
// A request succeeds only when its stream ends with [DONE] or a
// finish_reason: a stream that simply stops is [ErrTruncated], and an error
// object inside a 200 stream is a [*StreamError]. The first token is the
// first chunk that carries content, reasoning (reasoning_content or
// reasoning), completion text or a tool call; role-only and empty deltas do
// not count. When the server sends usage on every chunk (vLLM's
// continuous_usage_stats, which requests ask for by default), each chunk
// carries the growth of completion_tokens; otherwise one token per non-empty
// delta, and a final usage that reports more is recorded as extra tokens
// (see [github.com/llmload/llmload/metrics.TokenSource]).
//
// The client reads its own response (never through a reconnecting SSE
// client, so a POST is never silently re-sent) and frames it as the HTML
// standard's event-stream rules say, without copying an event's data; it is
// fuzzed against go-sse's sse.Read, which it replaced when a benchmark
// showed sse.Read alone cost 0.8 µs an event, two allocations and two
// copies, more than the client's whole budget. One deliberate difference: a
// last event whose last line is complete is dispatched even when the server
// closes without the blank line. The chunk parser reads OpenAI chat and
// completion chunks, TGI's native /generate_stream events and Anthropic's
// Messages events; it accepts exactly the JSON that encoding/json accepts.
//
// # Failures
//
// Every failure is an [*Error] with a [github.com/llmload/llmload/metrics.ErrorKind]
// and a cause: [*StatusError] for a non-200 response (a length rejection
// matches [ErrTooLong], a 429 [ErrRateLimited] with its Retry-After),
// [*StreamError], [*ChunkError] for a malformed chunk, [ErrOversize],
// [ErrTruncated], the phase deadlines [ErrConnectTimeout],
// [ErrHeaderTimeout], [ErrFirstTokenTimeout] and [ErrStall], or the
// context's cause. Whatever was measured before the failure is kept.
package loadgen
