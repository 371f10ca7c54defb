// Command bench measures a server under a real request mix: a dataset,
// synthetic lengths or a replayed trace, at one load, in a sweep from idle
// to saturated, or in a search for the highest rate that meets an SLO. It
// prints the figures vLLM's benchmark prints (request and token
// throughput, goodput, TTFT, TPOT, ITL and end-to-end latency by mean,
// median and percentiles), and saves them as versioned JSON with their
// histograms, or as an HTML page with latency–throughput curves.
//
// With no flags it runs 8 streams of synthetic requests for 10 seconds
// against llmload's simulated server (no GPU, no server to start):
//
//	go run ./examples/bench
//	go run ./examples/bench -profile sweep -format html -o sweep.html
//	go run ./examples/bench -profile slo -slo-ttft 500ms -slo-tpot 40ms
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
// -trace-scale, each request with the trace's input length and its output
// length as max_tokens. A file is read through before anything is sent: a
// malformed record stops the command with its line, and nothing is run.
//
// How it is sent: -profile concurrency (-concurrency streams), rate
// (-rate requests a second, evenly spaced), poisson, gamma (-burstiness),
// sweep (one synchronous run, one throughput run of -throughput streams,
// then -rates rates between) or slo (the highest rate at which
// -slo-quantile of the requests meet -slo-ttft, -slo-tpot and
// -slo-latency, to within -slo-step). Each run lasts -duration after
// -warmup, or -requests requests.
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
	"time"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/benchcmd"
	"github.com/llmload/llmload/internal/cli"
	"github.com/llmload/llmload/internal/redact"
	"github.com/llmload/llmload/internal/requestlog"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/loadgen/workload"
)

// DefaultSpeed is the simulator's speed factor when none is given.
const DefaultSpeed = 10

func main() { cli.Main(run, "reporting the runs so far") }

// options are the command's flags.
type options struct {
	client                     cli.ClientFlags
	body                       cli.BodyFlags
	images                     cli.ImageFlags
	bench                      benchcmd.Flags
	sim                        cli.SimFlags
	gpu                        cli.GPUFlags
	format, out                string
	requestsOut, metricsListen string
	serverTimings, quiet       bool
	overwrite                  bool
	serverTimingsSet           bool // -server-timings was given, true or false
	extra                      map[string]any
}

func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.client.Register(fs, "")
	o.body.Register(fs)
	o.images.Register(fs)
	o.bench.Register(fs)
	fs.StringVar(&o.format, "format", "table", "report format: table, json, html, or series-csv (each run's time series)")
	fs.StringVar(&o.out, "o", "", "write the report to this file instead of standard output")
	fs.BoolVar(&o.serverTimings, "server-timings", false, "ask the server for its own timings of each request (include_metrics: vLLM with --enable-per-request-metrics) and split TTFT into its queue, its prefill and the rest; on unless set to false with the simulator and a server identified as vLLM")
	fs.StringVar(&o.metricsListen, "metrics-listen", "", "serve the client's own metrics for Prometheus at http://ADDR/metrics while the runs go on (requests in flight, tokens, TTFT and time between tokens, errors by kind, labelled by run), e.g. :9464")
	fs.StringVar(&o.requestsOut, "requests-out", "", "write every request, as it ends, to this file: a line of JSON each, with its run, times, tokens, outcome and the server's timings")
	fs.BoolVar(&o.overwrite, "overwrite", false, "replace an existing -requests-out file")
	o.sim.Register(fs, "sim-profile", DefaultSpeed)
	o.gpu.Register(fs)
	fs.BoolVar(&o.quiet, "quiet", false, "print only the report")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.client.WarnShortSecrets(stderr)
	fs.Visit(func(f *flag.Flag) { o.serverTimingsSet = o.serverTimingsSet || f.Name == "server-timings" })
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q: every setting is a flag", fs.Args())
	}
	if err := o.bench.Parse(fs); err != nil {
		return nil, err
	}
	switch o.format {
	case "table", "json", "html", "series-csv":
	default:
		return nil, fmt.Errorf("unknown -format %q (want table, json, html or series-csv)", o.format)
	}
	if err := o.client.Check(); err != nil {
		return nil, err
	}
	if err := o.checkFiles(); err != nil {
		return nil, err
	}
	if err := o.bench.CheckAPI(o.client.API); err != nil {
		return nil, err
	}
	var err error
	if o.extra, err = o.body.Extra(o.client.API); err != nil {
		return nil, err
	}
	if err := o.images.Check(o.client.API); err != nil {
		return nil, err
	}
	if err := o.gpu.Check(o.client.URL); err != nil {
		return nil, err
	}
	return o, o.sim.Check()
}

// checkFiles refuses, before anything is read or run, outputs that
// would destroy a file: -o or -requests-out the same file as an input
// or as each other, at a symbolic link, a named pipe or a device, and an
// existing -requests-out without -overwrite. -o replaces an existing
// report, whole.
func (o *options) checkFiles() error {
	outputs := []cli.FileFlag{{Name: "o", Path: o.out}, {Name: "requests-out", Path: o.requestsOut}}
	if err := cli.Distinct(outputs, append(o.bench.Files(), o.body.Files()...)...); err != nil {
		return err
	}
	if err := cli.CheckOutput("o", o.out, true); err != nil {
		return err
	}
	return cli.CheckOutput("requests-out", o.requestsOut, o.overwrite)
}

// askServerTimings reports whether the requests ask server s for its own
// timings: as -server-timings says when it was given, otherwise for the
// simulator and a server identified as vLLM, which send them.
func (o *options) askServerTimings(s capacity.Server) bool {
	if o.serverTimingsSet {
		return o.serverTimings
	}
	return s.Simulated || s.Engine == capacity.EngineVLLM
}

// gpuEvery is how often -gpu-metrics are read.
const gpuEvery = time.Second

// fail prints err on stderr as one line, without control characters.
func fail(stderr io.Writer, err error) {
	fmt.Fprintln(stderr, "bench:", textsafe.Line(err.Error()))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fail(stderr, err)
		}
		return 2
	}
	// Files first: a malformed record stops everything before a server
	// is started or a request sent.
	mix, sized, err := o.bench.Open()
	if err != nil {
		fail(stderr, err)
		return 2
	}
	res := o.bench.Results()
	client, err := o.client.Client(o.bench.Conns())
	if err != nil {
		fail(stderr, err)
		return 2
	}
	model, api := o.client.Model, o.client.API
	res.API = api
	models, err := cli.ParseModels(model)
	if err == nil && models != nil && mix.Turns != nil {
		err = errors.New("-model with weights: a session's turns would go to different models; give one -model with -turns")
	}
	if err != nil {
		fail(stderr, err)
		return 2
	}
	if models != nil {
		model = models.Names[0] // sizes the prompts
		o.sim.Adapters = models.Names
	}
	if o.client.URL == "" {
		srv, err := o.sim.Start()
		if err != nil {
			fail(stderr, err)
			return 2
		}
		defer srv.Close()
		client.BaseURL = srv.URL + "/v1"
		if models == nil {
			model = srv.Handler.Profile().Model
		}
		mix.Sizing = workload.SimulatorSizing(api != loadgen.Completions && !pooled(api))
		res.Server = capacity.Server{URL: "simulator", Model: model, Simulated: true, Speed: o.sim.Speed, Profile: o.sim.Profile}
		res.Notes = append(res.Notes, fmt.Sprintf("llmload's simulated server, profile %q, at %g× speed: figures are in wall-clock time, of a server %g times faster than the profile's", o.sim.Profile, o.sim.Speed, o.sim.Speed))
	} else {
		if err := client.Validate(); err != nil {
			fail(stderr, err)
			return 2
		}
		res.Server = capacity.Server{URL: redact.URL(o.client.URL), Model: model}
		if err := benchcmd.Identify(ctx, client, o.client.URL, &res.Server); err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", o.client.Redactor().Error(err))
		}
		if !sized {
			// Synthetic text and traces are sized in the server's tokens.
			if mix.Sizing, err = workload.Calibrate(ctx, client, api, model); err != nil {
				fail(stderr, o.client.Redactor().Error(err))
				return 1
			}
			s := mix.Sizing
			res.Notes = append(res.Notes, fmt.Sprintf("prompt sizes calibrated from the server's usage: %.3g tokens a word, %d a message, %d a request", s.TokensPerWord, s.MessageTokens, s.ReplyTokens))
		}
	}
	defer client.CloseIdleConnections()

	mix.Builder = workload.Builder{API: api, Model: model, IgnoreEOS: o.bench.IgnoreEOS()}
	if pooled(api) {
		mix.Builder = workload.Builder{API: api, Model: model, Batch: o.bench.Batch()}
	} else {
		mix.Builder.ServerTimings = o.askServerTimings(res.Server)
	}
	for k, v := range o.extra {
		if mix.Builder.Extra == nil {
			mix.Builder.Extra = make(map[string]any, len(o.extra))
		}
		mix.Builder.Extra[k] = v
	}
	if models != nil {
		mix.Builder.Models = models.Cycle(mix.Seed)
		res.Server.Model = models.String()
		res.Notes = append(res.Notes, fmt.Sprintf("requests name the models %s in turn by smooth weighted round robin, a cycle of %d from a place drawn from the seed: each model's share is exact to within one request a cycle", models, len(mix.Builder.Models)))
	}
	if mix.Builder.Images, err = o.images.URLs(mix.Seed); err != nil {
		fail(stderr, err)
		return 2
	}
	res.Workload = mix.String()
	if d := o.images.Describe(); d != "" {
		res.Workload += ", " + d
	}
	defer mix.Close()
	if err := mix.Validate(); err != nil {
		fail(stderr, err)
		return 2
	}
	log := io.Writer(stderr)
	if o.quiet {
		log = io.Discard
	}
	requests, lm, err := benchcmd.Outputs(ctx, o.requestsOut, o.overwrite, o.metricsListen, log)
	if err != nil {
		fail(stderr, err)
		return 2
	}
	onResult := func(sweep.Result) {}
	if !o.quiet {
		onResult = benchcmd.Progress(stderr, api)
	}
	if !o.quiet {
		fmt.Fprintf(stderr, "Benchmarking %s against %s\n", res.Workload, textsafe.Line(res.Server.String()))
	}
	simBase := ""
	if o.client.URL == "" {
		simBase = client.BaseURL
	}
	gpus, err := o.gpu.Meter(ctx, simBase, gpuEvery)
	if err != nil {
		fail(stderr, err)
		return 2
	}
	if gpus != nil {
		defer gpus.Close()
	}
	sizes, _ := o.images.Sizes()
	if err := benchcmd.CountImages(ctx, client, mix, sizes, res); err != nil {
		fail(stderr, o.client.Redactor().Error(err))
		return 1
	}
	runErr := o.bench.Run(ctx, client, mix, requests, lm, gpus, o.gpu.HourlyCost, res, onResult)
	res.Finished = time.Now()
	return finish(o, res, requests, runErr, stdout, stderr)
}

// finish closes requests (nil without -requests-out) and writes the
// report, which a file that could not be written loses nothing of: each
// failure is said on stderr, after the report, and the status is 1.
func finish(o *options, res *sweep.Results, requests *requestlog.Writer, runErr error, stdout, stderr io.Writer) int {
	var requestsErr error
	if requests != nil {
		if err := requests.Close(); err != nil {
			requestsErr = fmt.Errorf("-requests-out: %w: not every request was written there; the report is whole", err)
		}
	}
	werr := cli.WriteOutput(o.out, stdout, func(w io.Writer) error { return res.Write(w, o.format) })
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

// pooled reports that api answers in one body: Embeddings and Rerank.
func pooled(api loadgen.API) bool { return api == loadgen.Embeddings || api == loadgen.Rerank }
