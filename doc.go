// Package llmload measures LLM inference servers under load: how fast they
// prefill, how many tokens per second they sustain at each context length and
// concurrency, and where they run out of KV cache.
//
// The module is a set of small packages, each with one job:
//
//   - [github.com/llmload/llmload/metrics] turns request timelines into
//     numbers: HDR histograms of time to first token and time between tokens,
//     throughput over a measurement window. Pure math, no I/O.
//   - [github.com/llmload/llmload/loadgen] is the wire: a streaming client for
//     OpenAI-compatible servers that timestamps every token as it arrives, and
//     a generator that keeps N requests in flight.
//   - [github.com/llmload/llmload/loadgen/loadgentest] is a simulated inference
//     server, shaped like net/http/httptest, whose engine steps like a
//     continuous-batching server.
//   - [github.com/llmload/llmload/capacity] predicts which cells fit in the
//     server's KV cache before any request is sent.
//   - [github.com/llmload/llmload/matrix] runs the speed-test matrix (contexts ×
//     concurrency) and renders its reports.
//
// Imports point down only: matrix uses loadgen and capacity, which use metrics.
// metrics and capacity import nothing of the module but leaf helpers in
// internal/ (such as internal/enumtext): packages that import
// nothing of the module themselves.
package llmload
