// Package llmload measures LLM inference servers under load: how fast they
// prefill, how many tokens per second they sustain at each context length and
// concurrency, and where they run out of KV cache.
//
//   - [github.com/llmload/llmload/metrics]: request timelines into figures
//     (HDR histograms, windows, throughput); pure math, no I/O.
//   - [github.com/llmload/llmload/loadgen]: the streaming client, timing every
//     token as it arrives, and the generator that runs one load;
//     [github.com/llmload/llmload/loadgen/workload] says what is sent and
//     [github.com/llmload/llmload/loadgen/loadgentest] simulates a server.
//   - [github.com/llmload/llmload/loadgen/sweep]: the serving benchmark's
//     runner, Benchmark: levels of concurrency or rate, sweeps, SLO searches.
//   - [github.com/llmload/llmload/capacity]: what a KV cache holds, predicted.
//   - [github.com/llmload/llmload/matrix]: the speed-test matrix's runner;
//     [github.com/llmload/llmload/matrix/report] renders and compares it,
//     [github.com/llmload/llmload/matrix/shard] spreads it over machines.
//
// Imports point down: the commands (examples/, over internal/cmd/) use
// matrix and sweep, which use loadgen and capacity, which use metrics; the
// leaf helpers in internal/ import nothing above their users
// (TestImportsPointDown).
//
// Words, one meaning each, which the code's names follow:
//
//	TTFT         request sent → its first token of any kind, reasoning too
//	TTFO         request sent → its first answer token, after any reasoning
//	ITL          every gap between two tokens; a chunk of k tokens is k gaps
//	TPOT         (latency − TTFT) ÷ (tokens − 1), a request's, as vLLM's
//	TBT          (last − first token) ÷ (tokens − 1), a request's, the seed's
//	warm-up      the time before a window: not measured
//	window       the measured span of a run or a cell
//	streams      requests in flight at once in a closed loop
//	concurrency  a closed loop's streams, as a setting or a level
//	rate         arrivals a second in an open loop
//	capacity     what the KV cache holds, in tokens or requests
package llmload
