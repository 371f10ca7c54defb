package matrixcmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/llmload/llmload/internal/cmd/cli"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/report"
	"github.com/llmload/llmload/matrix/shard"
)

// Options are the matrix command's flags.
type Options struct {
	Spec                 matrix.Spec
	Client               cli.ClientFlags
	SpecFlags            SpecFlags
	Sim                  cli.SimFlags
	Shards               ShardFlags
	GPU                  cli.GPUFlags
	Out, Results, Resume string
	RequestsOut, Render  string
	Format               report.Format
	MetricsListen        string
	Compare, Quiet       bool
	Overwrite            bool
	Set                  map[string]bool // the flags given on the command line
}

// Parse parses the command's flags, the simulator's speed defaulting to
// speed, and refuses, before anything runs, those that cannot work; the
// spec's are refused by the check [matrix.Runner.Run] runs, worded by
// the flags ([Fields]). It returns the arguments left.
func Parse(args []string, stderr io.Writer, speed float64) (*Options, []string, error) {
	o := &Options{}
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.Client.Register(fs, "")
	o.SpecFlags.Register(fs)
	o.Sim.Register(fs, "profile", speed)
	fs.StringVar(&o.Out, "o", "", "write the report to this file instead of standard output")
	FormatVar(fs, &o.Format, "report format: table (default), markdown, csv, json, html, or series-csv (each cell's time series)")
	fs.StringVar(&o.Results, "results", "", "save the results as JSON here after every cell (default matrix-results-TIME.json in the working directory, or TIME-2, -3, … when other runs started in the same second)")
	fs.StringVar(&o.Resume, "resume", "", "continue the interrupted run saved in this file")
	fs.BoolVar(&o.Overwrite, "overwrite", false, "replace an existing -results file of another run, and an existing -requests-out file")
	fs.StringVar(&o.RequestsOut, "requests-out", "", "write every request of the cells' streams, as it ends, to this file: a line of JSON each, with its cell, times, tokens, outcome and the server's timings (added to with -resume)")
	fs.BoolVar(&o.Compare, "compare", false, "compare two result files given as arguments, -compare A.json B.json, or repeated runs of each, -compare A1.json,A2.json B1.json,B2.json")
	fs.StringVar(&o.Render, "render", "", "render this results file in -format (to -o), changing nothing in it, and exit")
	fs.BoolVar(&o.Quiet, "quiet", false, "print only the report")
	fs.StringVar(&o.MetricsListen, "metrics-listen", "", "serve the client's own metrics for Prometheus at http://ADDR/metrics while the matrix runs (requests in flight, tokens, TTFT and time between tokens, errors by kind, labelled by cell), e.g. :9464")
	o.GPU.Register(fs)
	o.Shards.Register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	o.Client.WarnShortSecrets(stderr)
	o.Set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.Set[f.Name] = true })
	var err error
	if o.Spec, err = o.SpecFlags.Spec(fs); err != nil {
		return nil, nil, err
	}
	o.Spec.URL, o.Spec.Model, o.Spec.API = o.Client.URL, o.Client.Model, o.Client.API
	return o, fs.Args(), o.check()
}

// check refuses flags that cannot work, or not together.
func (o *Options) check() error {
	for _, check := range []func() error{func() error { return o.Client.Generating("matrix") }, o.Client.Check, o.Sim.Check} {
		if err := check(); err != nil {
			return err
		}
	}
	// The spec as the run will check it, with a stand-in for the
	// simulator's URL: refused here, before anything starts.
	r := &matrix.Runner{Spec: o.Spec}
	if r.Spec.URL == "" {
		r.Spec.URL = "http://127.0.0.1/v1"
	}
	if o.Shards.shards > 1 && o.Shards.shards <= maxShards {
		r.Fleet = &shard.Leader{Followers: o.Shards.shards - 1} // its shards, for the check
	}
	if err := r.Validate(); err != nil {
		return Fields().Error(err)
	}
	if o.Render != "" && o.Compare {
		return errors.New("-render and -compare do not go together")
	}
	if err := o.GPU.Check(o.Client.URL); err != nil {
		return err
	}
	if o.GPU.Set() && o.Shards.Follows() {
		return errors.New("-gpu-metrics is the leader's: it reads the server's GPUs for the whole run")
	}
	return o.Shards.Check(o.Compare || o.Render != "" || o.Resume != "")
}

// ClaimFiles refuses, before anything runs, files the run cannot write
// safely: -requests-out the same file as -results or -o, at a symbolic
// link, a named pipe or a device, or an existing one without -overwrite
// (a resumed run adds to its own); -o the results file in another
// format than JSON. Then it claims the results file, a new one named for
// now when none was given, and returns what unlocks it.
func (o *Options) ClaimFiles(resumed bool) (func(), error) {
	if err := cli.Distinct([]cli.FileFlag{{Name: "requests-out", Path: o.RequestsOut}},
		cli.FileFlag{Name: "results", Path: o.Results}, cli.FileFlag{Name: "o", Path: o.Out}); err != nil {
		return nil, err
	}
	if err := cli.CheckOutput("requests-out", o.RequestsOut, o.Overwrite || resumed); err != nil {
		return nil, err
	}
	if err := cli.CheckOutput("o", o.Out, true); err != nil {
		return nil, err
	}
	if o.Results == "" {
		var unlock func()
		var err error
		o.Results, unlock, err = ClaimNewResults(time.Now())
		return unlock, err
	}
	if o.Out != "" && o.Format != report.JSON && cli.SameFile(o.Out, o.Results) {
		return nil, fmt.Errorf("-o %s is the results file; write the %s report elsewhere", o.Out, o.Format)
	}
	return ClaimResults(o.Results, o.Resume, o.Overwrite)
}

// LoadResume loads the run -resume names, refuses flags that disagree
// with it, and makes its spec o's; it returns nil without -resume.
func (o *Options) LoadResume() (*matrix.Results, error) {
	if o.Resume == "" {
		return nil, nil
	}
	resume, err := matrix.LoadFile(o.Resume)
	if err != nil {
		return nil, err
	}
	if err := CheckResume(o.Spec, resume, o.Set); err != nil {
		return nil, Usage{Err: err}
	}
	if o.Spec, err = Resume(resume, o.Spec.URL, &o.Sim, o.Set); err != nil {
		return nil, Usage{Err: err}
	}
	if o.Results == "" {
		o.Results = o.Resume
	}
	return resume, nil
}

// Runner returns the runner of the matrix o describes, resuming resume
// (nil: none), with its results saved to file: its client, the simulator
// when no -url was given (or the run resumed was simulated), the GPUs'
// exporters, and its log on log (nil: -quiet). The function returned
// stops the simulator and closes the client's connections.
func (o *Options) Runner(resume *matrix.Results, file *ResultsFile, log io.Writer, terminal bool) (*matrix.Runner, func(), error) {
	runner := &matrix.Runner{Spec: o.Spec, Resume: resume}
	var err error
	if runner.Client, err = o.Client.Client(slices.Max(append([]int{1}, o.Spec.Concurrency...)) + 4); err != nil { // and /metrics, /tokenize, the scout
		return nil, nil, err
	}
	runner.Client.BaseURL = "" // the spec's
	stop := runner.Client.CloseIdleConnections
	if o.Spec.URL == "" || (resume != nil && resume.Server.Simulated) {
		stopSim, err := Simulate(&o.Sim, runner, !o.SpecFlags.GridSet(), log)
		if err != nil {
			return nil, nil, err
		}
		stop = func() { runner.Client.CloseIdleConnections(); stopSim() }
	}
	simBase := ""
	if runner.Server.Simulated {
		simBase = runner.Spec.URL
	}
	if runner.GPUMetrics, err = o.GPU.URLs(simBase); err != nil {
		stop()
		return nil, nil, err
	}
	runner.GPUHourlyCost = o.GPU.HourlyCost
	file.Simulated = runner.Server.Simulated
	runner.Save = file.Save
	if log != nil {
		runner.OnPlan = func(r *matrix.Results) { WriteHints(log, r) }
		runner.Log = log
		if terminal {
			runner.Progress = log
		}
	}
	return runner, stop, nil
}
