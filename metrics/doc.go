// Package metrics turns request timelines into the numbers a load test
// reports: throughput over a measurement window, time to first token, time
// between tokens, latency and goodput. It is pure math: no I/O, and time is
// always passed in, so every figure can be checked by a table test with
// hand-made timelines.
//
// A [Timeline] is one request as the client saw it. A [Recorder] aggregates
// timelines online, in bounded memory: [Recorder.Observe] costs O(1) per
// chunk and allocates nothing, latencies go into HDR [Histogram]s of fixed
// geometry, and nothing grows with the number of tokens. [Recorder.Recording]
// returns the columns as a [Summary] with the histograms they come from. A [Histogram] keeps count, minimum,
// maximum and mean exactly; its quantiles are within 0.1%.
//
// Recordings merge exactly. Merging histograms adds buckets, so the merge of
// several histograms is the histogram of all their values, and a
// histogram's JSON holds its buckets (HdrHistogram's V2 encoding) with its
// exact figures, so the merge stays exact across machines and files.
// [MergeRecordings] merges whole recordings — the summaries and histograms
// of recorders that shared one window, such as load generators on several
// machines — into the recording one recorder of all their requests would
// have made.
//
// # Definitions
//
// These are the speed-test matrix's definitions.
//
//   - Output tokens: tokens that arrived inside the [Window]. Each chunk counts
//     the growth of the server's usage.completion_tokens where the server sends
//     usage on every chunk, else one token per non-empty content or reasoning
//     delta; role-only and empty deltas count 0. When the final usage reports
//     more than the chunks counted, the difference is spread over the
//     request's chunks ([TokenSource] says which rule counted a request).
//   - Measured for: from the window's start to the last counted token; the
//     whole window when none was counted.
//   - Total tok/s: output tokens ÷ measured for.
//   - TTFT: from the request being written (never from when it was queued on
//     the client) to its first content or reasoning token. Client-side waiting
//     is reported apart, as ClientWait.
//   - Time between tokens (TBT): per request, (last − first token time) ÷
//     (tokens − 1) over its whole life; reports show the median over requests.
//   - ITL: every gap between tokens; a chunk carrying k tokens Δ after the
//     previous one is k gaps of Δ÷k, so bunched tokens do not look fast.
//   - Per request tok/s: the median over requests of 1 ÷ TBT (not total tok/s
//     ÷ concurrency).
//   - TPOT: (latency − TTFT) ÷ (tokens − 1) over completed requests (vLLM's).
//   - Average active: the time-average over the window of requests with a
//     first token and no end.
//   - Completed: requests that ended with [DONE] or a finish reason inside
//     the window.
//   - Warm-up: requests that ended before the window opened. A summary of
//     the window counts them in Warmup and nowhere else, so cold starts move
//     none of its figures; [Recorder.Recording] summarises them on their own
//     ([ScopeWarmup]) or with the window's ([ScopeAll], the speed-test
//     matrix's view, where TTFT is over every request a cell launched).
//     Every request is counted in exactly one outcome: Requests = Warmup +
//     Completed + CompletedOutside + Failed + Canceled.
//
// # Names in other tools
//
// The same word means different things in different benchmarks:
//
//	llmload               vLLM bench           AIPerf                       guidellm
//	TTFT                  ttft                 time_to_first_token          time_to_first_token
//	ITL (per token)       itl (per chunk)      —                            —
//	TBT (per request)     —                    inter_token_latency          inter_token_latency
//	TPOT (excl. first)    tpot                 inter_token_latency          inter_token_latency
//	—                     —                    —                            time_per_output_token (incl. first)
//	Latency               e2el                 request_latency              request_latency
//	TotalTokensPerSec     output_throughput    output_token_throughput      output_tokens_per_second
//
// vLLM's itl is one value per chunk, so a server that sends several tokens
// per chunk looks faster between chunks than it is between tokens; llmload's
// ITL splits the chunk. AIPerf's and guidellm's inter_token_latency divide
// from the first token to the end of the response, like TPOT; llmload's TBT
// divides from the first token to the last, which does not include the time
// the server takes to close the stream. Throughputs differ in their
// denominators: vLLM and the others divide by the whole benchmark's duration,
// llmload by the measured part of a fixed window.
package metrics
