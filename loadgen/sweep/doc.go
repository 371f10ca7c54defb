// Package sweep runs the loads of a serving benchmark against one server
// and reports them: a single [github.com/llmload/llmload/loadgen.Load] (a
// closed loop of N streams, or requests arriving evenly, as a Poisson
// process, as a gamma process or on a schedule such as a trace's), a
// [Sweep] from idle to saturated, as
// guidellm's, and a [Search] for the highest request rate whose goodput
// meets an [Objective] — TTFT, TPOT and latency objectives for a share of
// the requests — with the runs that bracket it.
//
// A [Target] makes the [github.com/llmload/llmload/loadgen.Generator] of
// each run (the client, the requests, a run's length); [Run] gives it a
// load, runs it and reduces it to a [Result]: the figures vLLM's
// benchmark prints, the run's summary and its full histograms.
// [Sweep.Run] and [Search.Run] return their [Results], the runs gathered
// (for one load, the caller gathers its Result), and [Results.Write] writes
// them as a versioned JSON document (read back by [ReadResults]), a
// terminal table or an HTML page with latency–throughput curves.
package sweep
