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
// returns the columns as a [Summary] with the histograms they come from. A
// [Histogram] keeps count, minimum, maximum and mean exactly; its quantiles
// are within 0.1%.
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
// [Summary] holds the definitions of the columns (the speed-test matrix's:
// TTFT, TBT, ITL, TPOT, throughput, warm-up) and how they compare with the
// same words in vLLM's benchmark, AIPerf and guidellm.
package metrics
