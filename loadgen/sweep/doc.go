// Package sweep runs the loads of a serving benchmark against one server
// and reports them: a single [github.com/llmload/llmload/loadgen.Load] (a
// closed loop of N streams, or requests arriving evenly, as a Poisson
// process, as a gamma process or on a schedule such as a trace's), a run
// at each of a list of concurrency levels or rates, a [Sweep] from idle to
// saturated, as guidellm's, and a [Search] for the highest concurrency or
// request rate whose goodput meets an [Objective] — TTFT, TPOT and
// latency objectives for a share of the requests — with the runs that
// bracket it.
//
// [Benchmark] is the runner: what to send (a client and a [Workload], or
// a [Target]), the load, how long each run lasts and what it records.
// Its Run checks the settings once and returns the [Results].
//
// A [Target] makes the [github.com/llmload/llmload/loadgen.Generator] of
// each run (the client, the requests, a run's length); [Run] gives it a
// load, runs it and reduces it to a [Result]: the figures vLLM's
// benchmark prints, the run's summary and its full histograms.
// [Benchmark.Run], [Sweep.Run] and [Search.Run] return their [Results],
// the runs gathered, and [Results.Write] writes them as a versioned JSON
// document (read back by [ReadResults]), a terminal table or an HTML page
// with latency–throughput curves, by request rate or by streams (see
// [Axis]).
package sweep
