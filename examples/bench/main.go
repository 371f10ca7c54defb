// Command bench measures a server under a real request mix: a dataset,
// synthetic lengths or a replayed trace, at one load, at each of a list
// of concurrency levels or rates, in a sweep from idle to saturated, or
// in a search for the highest rate or concurrency that meets an SLO. It
// prints the figures vLLM's benchmark prints (request and token
// throughput, goodput, TTFT, TPOT, ITL and end-to-end latency by mean,
// median and percentiles), and saves them as versioned JSON with their
// histograms, or as an HTML page with latency–throughput curves.
//
// With no flags it runs 8 streams of synthetic requests for 10 seconds
// against llmload's simulated server (no GPU, no server to start):
//
//	go run ./examples/bench
//	go run ./examples/bench -concurrency 1,4,16
//	go run ./examples/bench -profile sweep -format html -o sweep.html
//	go run ./examples/bench -profile slo -slo-ttft 500ms -slo-tpot 40ms
//	go run ./examples/bench -profile slo -slo-axis concurrency -slo-high 64 -slo-ttft 500ms
//	go run ./examples/bench -trace mooncake.jsonl -trace-scale 0.5
//
// Against a real server:
//
//	go run ./examples/bench -url http://127.0.0.1:8000/v1 -model my-model -dataset ShareGPT_V3_unfiltered_cleaned_split.json -profile poisson -rate 4 -requests 500
//
// What is sent: -dataset FILE (ShareGPT, JSON or JSONL, with ShareGPT4V's
// images; OpenAI chat records with image_url parts; or JSONL prompts
// {"prompt": ..., "output_tokens": N}), else synthetic prompts of
// -input-len and -output-len tokens (a fixed count or a distribution:
// uniform:MIN,MAX, normal:MEAN,SD, lognormal:MEAN,SD), with -prefix-groups
// system prompts of -prefix-len tokens shared among them, or -turns
// multi-turn sessions with -think between turns; or -trace FILE (Mooncake
// JSONL or Azure CSV), replayed at its recorded times scaled by
// -trace-scale. A file is read through before anything is sent: a
// malformed record stops the command with its line, and nothing is run.
//
// How it is sent: -profile concurrency (-concurrency streams, or a list
// such as 1,4,16: a run at each), rate (-rate requests a second, evenly
// spaced, or a list such as 2,4,8), poisson, gamma (-burstiness), sweep
// (one synchronous run, one throughput run of -throughput streams, then
// -rates rates between) or slo: the highest level of -slo-axis, rate
// (the default) or concurrency, at which -slo-quantile of the requests
// meet -slo-ttft, -slo-ttfo, -slo-tpot and -slo-latency, between -slo-low
// and -slo-high, to within -slo-step (in requests a second or streams),
// after a run at each level -rate or -concurrency lists. Each run lasts
// -duration after -warmup, or -requests requests. sweep.Benchmark checks
// the settings and runs them; its errors name the flags.
//
// The exit status is 0 when every run completed requests, 1 when a run
// failed or completed none, or -requests-out could not be written (the
// report is written all the same), and 2 for flags or files that cannot
// work: an output that is an input, a named pipe, a symbolic link or an
// existing -requests-out without -overwrite are refused before anything
// runs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/llmload/llmload/internal/cmd/benchcmd"
	"github.com/llmload/llmload/internal/cmd/cli"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/loadgen/sweep"
)

func main() { cli.Main(run, "reporting the runs so far") }

// fail prints err on stderr as one line, without control characters.
func fail(stderr io.Writer, err error) {
	fmt.Fprintln(stderr, "bench:", textsafe.Line(err.Error()))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := benchcmd.Parse(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fail(stderr, err)
		}
		return 2
	}
	s, err := o.Open() // the files first: a malformed record stops everything
	if err != nil {
		fail(stderr, err)
		return 2
	}
	defer s.Close()
	b := &sweep.Benchmark{Client: s.Client, Workload: s.Mix}
	o.Bench.Benchmark(b)
	if err := b.Validate(); err != nil {
		fail(stderr, o.Bench.Fields().Error(err))
		return 2
	}
	if err := o.Prepare(ctx, s, stderr); err != nil {
		fail(stderr, err)
		return benchcmd.Status(err)
	}
	b.ByModel = len(s.Mix.Builder.Models) > 0
	h, err := o.Hooks(ctx, s, stderr)
	if err != nil {
		fail(stderr, err)
		return 2
	}
	b.OnRun, b.OnResult = h.OnRun, h.OnResult
	if !o.Quiet {
		fmt.Fprintf(stderr, "Benchmarking %s against %s\n", s.Head.Workload, textsafe.Line(s.Head.Server.String()))
	}
	res, runErr := b.Run(ctx)
	if res == nil { // refused before any run, which Validate did not
		fail(stderr, o.Bench.Fields().Error(runErr))
		h.Close()
		return 2
	}
	head := s.Head
	res.Profile, res.Server, res.API, res.Workload, res.Seed, res.ImageTokens = o.Bench.Profile(), head.Server, head.API, head.Workload, head.Seed, head.ImageTokens
	res.Notes = append(head.Notes, h.Notes...)
	return finish(o, res, h.Close(), runErr, stdout, stderr)
}

// finish writes the report, which a file that could not be written loses
// nothing of: each failure is said on stderr, after the report, and the
// status is 1.
func finish(o *benchcmd.Options, res *sweep.Results, requestsErr, runErr error, stdout, stderr io.Writer) int {
	werr := cli.WriteOutput(o.Out, stdout, func(w io.Writer) error { return res.Write(w, o.Format) })
	failed := false
	for _, err := range []error{werr, requestsErr, runErr} {
		if err != nil {
			fail(stderr, err)
			failed = true
		}
	}
	if failed {
		return 1
	}
	for _, r := range res.Runs {
		if r.Summary.Completed == 0 {
			fail(stderr, fmt.Errorf("the run %q completed no request", r.Label))
			return 1
		}
	}
	return 0
}
