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
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/llmload/llmload/internal/cli"
	"github.com/llmload/llmload/internal/matrixcmd"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/report"
)

// DefaultSpeed is the simulator's speed factor when none is given: fast
// enough that the seed's matrix runs in a few minutes, slow enough that the
// simulator keeps its schedule on a small machine.
const DefaultSpeed = 20

func main() { cli.Main(run, "stopping the run, keeping whatever it finished") }

// options are the command's flags.
type options struct {
	spec                 matrix.Spec
	client               cli.ClientFlags
	specFlags            matrixcmd.SpecFlags
	sim                  cli.SimFlags
	shards               matrixcmd.ShardFlags
	gpu                  cli.GPUFlags
	out, results, resume string
	requestsOut, render  string
	format               report.Format
	metricsListen        string
	compare, quiet       bool
	overwrite            bool
	set                  map[string]bool // the flags given on the command line
}

func parse(args []string, stderr io.Writer) (*options, []string, error) {
	o := &options{}
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.client.Register(fs, "")
	o.specFlags.Register(fs)
	o.sim.Register(fs, "profile", DefaultSpeed)
	fs.StringVar(&o.out, "o", "", "write the report to this file instead of standard output")
	matrixcmd.FormatVar(fs, &o.format, "report format: table (default), markdown, csv, json, html, or series-csv (each cell's time series)")
	fs.StringVar(&o.results, "results", "", "save the results as JSON here after every cell (default matrix-results-TIME.json in the working directory, or TIME-2, -3, … when other runs started in the same second)")
	fs.StringVar(&o.resume, "resume", "", "continue the interrupted run saved in this file")
	fs.BoolVar(&o.overwrite, "overwrite", false, "replace an existing -results file of another run, and an existing -requests-out file")
	fs.StringVar(&o.requestsOut, "requests-out", "", "write every request of the cells' streams, as it ends, to this file: a line of JSON each, with its cell, times, tokens, outcome and the server's timings (added to with -resume)")
	fs.BoolVar(&o.compare, "compare", false, "compare two result files given as arguments, -compare A.json B.json, or repeated runs of each, -compare A1.json,A2.json B1.json,B2.json")
	fs.StringVar(&o.render, "render", "", "render this results file in -format (to -o), changing nothing in it, and exit")
	fs.BoolVar(&o.quiet, "quiet", false, "print only the report")
	fs.StringVar(&o.metricsListen, "metrics-listen", "", "serve the client's own metrics for Prometheus at http://ADDR/metrics while the matrix runs (requests in flight, tokens, TTFT and time between tokens, errors by kind, labelled by cell), e.g. :9464")
	o.gpu.Register(fs)
	o.shards.Register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	o.client.WarnShortSecrets(stderr)
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	var err error
	if o.spec, err = o.specFlags.Spec(fs); err != nil {
		return nil, nil, err
	}
	o.spec.URL, o.spec.Model, o.spec.API = o.client.URL, o.client.Model, o.client.API
	if err := o.client.Generating("matrix"); err != nil {
		return nil, nil, err
	}
	if err := o.client.Check(); err != nil {
		return nil, nil, err
	}
	if err := o.sim.Check(); err != nil {
		return nil, nil, err
	}
	// The spec as the run will check it, with a stand-in for the
	// simulator's URL: refused here, before anything starts.
	check := o.spec
	if check.URL == "" {
		check.URL = "http://127.0.0.1/v1"
	}
	if err := o.shards.CheckConcurrency(&check); err != nil {
		return nil, nil, err
	}
	if err := check.WithDefaults().Validate(); err != nil {
		return nil, nil, matrixcmd.AsFlags(err)
	}
	if o.render != "" && o.compare {
		return nil, nil, errors.New("-render and -compare do not go together")
	}
	if err := o.gpu.Check(o.client.URL); err != nil {
		return nil, nil, err
	}
	if o.gpu.Set() && o.shards.Follows() {
		return nil, nil, errors.New("-gpu-metrics is the leader's: it reads the server's GPUs for the whole run")
	}
	return o, fs.Args(), o.shards.Check(o.compare || o.render != "" || o.resume != "")
}

// fail prints err on stderr as one line, without control characters, and
// returns the exit status for it: 2 for flags that cannot work, else 1.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, "matrix:", textsafe.Line(strings.TrimPrefix(err.Error(), "matrix: ")))
	if _, ok := errors.AsType[matrixcmd.Usage](err); ok {
		return 2
	}
	return 1
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, rest, err := parse(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fail(stderr, err)
		}
		return 2
	}
	var log io.Writer // nil with -quiet
	if !o.quiet {
		log = stderr
	}
	switch {
	case o.compare:
		err = matrixcmd.Compare(rest, o.out, o.format, stdout)
	case o.render != "":
		err = matrixcmd.Render(o.render, o.out, o.format, stdout)
	case o.shards.Follows():
		err = o.shards.Follow(ctx, &o.client, o.metricsListen, log, stderr)
	default:
		return measure(ctx, o, log, stdout, stderr)
	}
	if err != nil {
		return fail(stderr, err)
	}
	return 0
}

// claimFiles refuses, before anything runs, files the run cannot write
// safely: -requests-out the same file as -results or -o, at a symbolic
// link, a named pipe or a device, or an existing one without -overwrite
// (a resumed run adds to its own); -o the results file in another
// format than JSON. Then it claims the results file, a new one named for
// now when none was given, and returns what unlocks it.
func claimFiles(o *options, resumed bool) (func(), error) {
	if err := cli.Distinct([]cli.FileFlag{{Name: "requests-out", Path: o.requestsOut}},
		cli.FileFlag{Name: "results", Path: o.results}, cli.FileFlag{Name: "o", Path: o.out}); err != nil {
		return nil, err
	}
	if err := cli.CheckOutput("requests-out", o.requestsOut, o.overwrite || resumed); err != nil {
		return nil, err
	}
	if err := cli.CheckOutput("o", o.out, true); err != nil {
		return nil, err
	}
	if o.results == "" {
		var unlock func()
		var err error
		o.results, unlock, err = matrixcmd.ClaimNewResults(time.Now())
		return unlock, err
	}
	if o.out != "" && o.format != report.JSON && cli.SameFile(o.out, o.results) {
		return nil, fmt.Errorf("-o %s is the results file; write the %s report elsewhere", o.out, o.format)
	}
	return matrixcmd.ClaimResults(o.results, o.resume, o.overwrite)
}

// measure runs the matrix, or the rest of the one -resume names.
func measure(ctx context.Context, o *options, log, stdout, stderr io.Writer) int {
	var resume *matrix.Results
	var err error
	if o.resume != "" {
		if resume, err = matrix.LoadFile(o.resume); err != nil {
			return fail(stderr, err)
		}
		if err := matrixcmd.CheckResume(o.spec, resume, o.set); err != nil {
			return fail(stderr, matrixcmd.Usage{Err: err})
		}
		if o.spec, err = matrixcmd.Resume(resume, o.spec.URL, &o.sim, o.set); err != nil {
			return fail(stderr, matrixcmd.Usage{Err: err})
		}
		if o.results == "" {
			o.results = o.resume
		}
	}
	unlock, err := claimFiles(o, resume != nil)
	if err != nil {
		return fail(stderr, matrixcmd.Usage{Err: err})
	}
	defer unlock()
	if log != nil || (!o.set["results"] && resume == nil) { // a file the user did not name
		fmt.Fprintf(stderr, "matrix: the results go to %s, saved after every cell\n", o.results)
	}

	runner := &matrix.Runner{Spec: o.spec, Resume: resume}
	if runner.Client, err = o.client.Client(slices.Max(append([]int{1}, o.spec.Concurrency...)) + 4); err != nil { // and /metrics, /tokenize, the scout
		return fail(stderr, matrixcmd.Usage{Err: err})
	}
	runner.Client.BaseURL = "" // the spec's
	if o.spec.URL == "" || (resume != nil && resume.Server.Simulated) {
		stop, err := matrixcmd.Simulate(&o.sim, runner, !o.specFlags.GridSet(), log)
		if err != nil {
			return fail(stderr, matrixcmd.Usage{Err: err})
		}
		defer stop()
	}
	defer runner.Client.CloseIdleConnections()
	simBase := ""
	if runner.Server.Simulated {
		simBase = runner.Spec.URL
	}
	if runner.GPUMetrics, err = o.gpu.URLs(simBase); err != nil {
		return fail(stderr, matrixcmd.Usage{Err: err})
	}
	runner.GPUHourlyCost = o.gpu.HourlyCost
	file := &matrixcmd.ResultsFile{Path: o.results, Simulated: runner.Server.Simulated}
	runner.Save = file.Save
	if log != nil {
		runner.OnPlan = func(r *matrix.Results) { matrixcmd.WriteHints(stderr, r) }
		runner.Log = stderr
		if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			runner.Progress = stderr
		}
	}

	closeRequests, err := matrixcmd.Observe(ctx, runner, o.requestsOut, o.overwrite, o.metricsListen, log)
	if err != nil {
		return fail(stderr, matrixcmd.Usage{Err: err})
	}
	defer closeRequests() // on an early return; closing twice is harmless
	endFleet := func() {}
	if o.shards.Leads() {
		if endFleet, err = o.shards.Lead(runner, log, stderr); err != nil {
			return fail(stderr, matrixcmd.Usage{Err: err})
		}
	}
	res, err := runner.Run(ctx)
	endFleet()
	if cerr := closeRequests(); cerr != nil {
		fail(stderr, fmt.Errorf("-requests-out: %w", cerr))
		if err == nil {
			err = errors.New("the requests were not all written")
		}
	}
	if res != nil && runner.Server.Simulated {
		res = matrixcmd.PublicURL(res)
	}
	if res != nil {
		if werr := cli.WriteOutput(o.out, stdout, func(w io.Writer) error { return report.Write(w, o.format, res) }); werr != nil {
			return fail(stderr, werr)
		}
	}
	// The file holds results when this run saved them, or when it is the
	// one this run resumed.
	onDisk := file.Saved || (resume != nil && cli.SameFile(o.results, o.resume))
	if file.Saved {
		fmt.Fprintf(stderr, "results saved to %s\n", o.results)
	}
	if err != nil {
		fail(stderr, err)
		switch {
		case res != nil && !res.Complete && onDisk:
			fmt.Fprintf(stderr, "matrix: finish it with: go run ./examples/matrix -resume %s\n", o.results)
		case !onDisk:
			fmt.Fprintln(stderr, "matrix: nothing was saved")
		}
		return 1
	}
	if err := res.Measured(); err != nil {
		return fail(stderr, fmt.Errorf("%w: see the notes above", err))
	}
	return 0
}
