// Command matrix runs the speed-test matrix and prints it: a prefill table
// and a grid of sustained decode throughput by context length and
// concurrency, with time to first token and time between tokens, and the
// cells that cannot fit in the server's KV cache marked Over capacity
// without being sent.
//
// With no flags it runs the seed page's matrix against llmload's simulated
// server (calibrated to the seed run) at a speed that finishes in a few
// minutes, and reports in the simulated server's own time:
//
//	go run ./examples/matrix
//
// Against a real server:
//
//	go run ./examples/matrix -url http://127.0.0.1:8000/v1 -model my-model
//
// The results are saved as JSON after every cell (-results); Ctrl-C stops
// the run and keeps every finished cell, a second Ctrl-C exits at once, and
// -resume FILE finishes an interrupted run. -render FILE renders a results
// file again, in any -format, without changing it. -compare A.json B.json
// sets two runs side by side: a figure is marked better or worse only when
// it moved by more than 5% and beyond the interval the spread of each
// run's requests gives (see matrix.Interval). Repeated runs of each side,
// -compare A1.json,A2.json B1.json,B2.json, add the runs' differences to
// that noise (see report.Compare).
//
// A password in -url (http://user:pass@host/v1) and the API key are sent
// to the server and appear in no output, log or file: the results keep
// the URL with "xxxxx" for its password, and -resume asks for the URL
// again. Text from the server is printed without its control characters.
//
// The exit status is 0 when the run measured something, 1 when it failed
// or no cell could be measured, and 2 for flags that cannot work.
//
// The client runs on [loadgen.StreamTransport] (one goroutine a stream, and
// on Linux every chunk timed by the kernel's receive timestamp); -transport
// http uses net/http's transport instead, which honours HTTP_PROXY, and
// -transport poll reads every stream on a few shared pollers, one system
// call a chunk (StreamTransport.Poll).
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/llmload/llmload/internal/cmd/cli"
	"github.com/llmload/llmload/internal/cmd/matrixcmd"
)

// DefaultSpeed is the simulator's speed factor when none is given: fast
// enough that the seed's matrix runs in a few minutes, slow enough that the
// simulator keeps its schedule on a small machine.
const DefaultSpeed = 20

func main() { cli.Main(run, "stopping the run, keeping whatever it finished") }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, rest, err := matrixcmd.Parse(args, stderr, DefaultSpeed)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			matrixcmd.Fail(stderr, err)
		}
		return 2
	}
	var log io.Writer // nil with -quiet
	if !o.Quiet {
		log = stderr
	}
	switch {
	case o.Compare:
		err = matrixcmd.Compare(rest, o.Out, o.Format, stdout)
	case o.Render != "":
		err = matrixcmd.Render(o.Render, o.Out, o.Format, stdout)
	case o.Shards.Follows():
		err = o.Shards.Follow(ctx, &o.Client, o.MetricsListen, log, stderr)
	default:
		return measure(ctx, o, log, stdout, stderr)
	}
	if err != nil {
		return matrixcmd.Fail(stderr, err)
	}
	return 0
}

// measure runs the matrix, or the rest of the one -resume names.
func measure(ctx context.Context, o *matrixcmd.Options, log, stdout, stderr io.Writer) int {
	resume, err := o.LoadResume()
	if err != nil {
		return matrixcmd.Fail(stderr, err)
	}
	unlock, err := o.ClaimFiles(resume != nil)
	if err != nil {
		return matrixcmd.Fail(stderr, matrixcmd.Usage{Err: err})
	}
	defer unlock()
	if log != nil || (!o.Set["results"] && resume == nil) { // a file the user did not name
		fmt.Fprintf(stderr, "matrix: the results go to %s, saved after every cell\n", o.Results)
	}
	f, ok := stderr.(*os.File)
	file := &matrixcmd.ResultsFile{Path: o.Results}
	runner, stop, err := o.Runner(resume, file, log, ok && term.IsTerminal(int(f.Fd())))
	if err != nil {
		return matrixcmd.Fail(stderr, matrixcmd.Usage{Err: err})
	}
	defer stop()
	closeRequests, err := matrixcmd.Observe(ctx, runner, o.RequestsOut, o.Overwrite, o.MetricsListen, log)
	if err != nil {
		return matrixcmd.Fail(stderr, matrixcmd.Usage{Err: err})
	}
	defer closeRequests() // on an early return; closing twice is harmless
	endFleet := func() {}
	if o.Shards.Leads() {
		if endFleet, err = o.Shards.Lead(runner, log, stderr); err != nil {
			return matrixcmd.Fail(stderr, matrixcmd.Usage{Err: err})
		}
	}
	res, err := runner.Run(ctx)
	endFleet()
	if cerr := closeRequests(); cerr != nil {
		matrixcmd.Fail(stderr, fmt.Errorf("-requests-out: %w", cerr))
		err = cmp.Or(err, errors.New("the requests were not all written"))
	}
	if res != nil && runner.Server.Simulated {
		res = matrixcmd.PublicURL(res)
	}
	// The file holds results when this run saved them, or when it is the
	// one this run resumed.
	return matrixcmd.Finish(o, res, err, file.Saved, file.Saved || (resume != nil && cli.SameFile(o.Results, o.Resume)), stdout, stderr)
}
