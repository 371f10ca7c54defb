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
//     a generator that runs a load: N requests in flight, arrivals at a rate,
//     or a schedule.
//   - [github.com/llmload/llmload/loadgen/workload] says what is sent:
//     synthetic prompts, datasets, traces and multi-turn sessions, sized in
//     the server's tokens.
//   - [github.com/llmload/llmload/loadgen/sweep] runs a load at several
//     rates and searches for the highest rate that meets a latency objective,
//     as serving benchmarks do.
//   - [github.com/llmload/llmload/loadgen/loadgentest] is a simulated inference
//     server, shaped like net/http/httptest, whose engine steps like a
//     continuous-batching server.
//   - [github.com/llmload/llmload/capacity] predicts which cells fit in the
//     server's KV cache before any request is sent, and holds the one
//     description of a server measured (its engine, version and limits).
//   - [github.com/llmload/llmload/matrix] runs the speed-test matrix (contexts ×
//     concurrency); [github.com/llmload/llmload/matrix/report] renders its
//     results and compares runs; [github.com/llmload/llmload/matrix/shard]
//     spreads a run over several machines.
//
// Imports point down only: matrix and sweep use loadgen and capacity,
// workload uses loadgen, and loadgen uses metrics. metrics and capacity
// import nothing of the module but leaf helpers in internal/ (such as
// internal/enumtext): packages that import nothing of the module
// themselves.
package llmload
