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
// What is sent: -dataset FILE (ShareGPT, JSON or JSONL, or JSONL prompts
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
// failed or completed none, and 2 for flags or files that cannot work.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"time"

	"github.com/llmload/llmload/internal/cli"
	"github.com/llmload/llmload/internal/live"
	"github.com/llmload/llmload/internal/redact"
	"github.com/llmload/llmload/internal/requestlog"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/loadgen/workload"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/metrics"
)

// DefaultSpeed is the simulator's speed factor when none is given.
const DefaultSpeed = 10

func main() { cli.Main(run, "reporting the runs so far") }

// options are the command's flags.
type options struct {
	url, model, keyEnv, transport string
	api                           loadgen.API

	dataset                     string
	input, output               workload.Length
	prefix                      workload.SharedPrefix
	turns                       workload.Length
	think                       time.Duration
	trace                       string
	traceScale                  float64
	traceBlock                  int
	seed                        uint64
	ignoreEOS                   bool
	profile                     string
	concurrency, maxInFlight    int
	rate, burstiness            float64
	arrival                     loadgen.Arrival
	load                        loadgen.Load // the load of a single run
	open                        loadgen.Open // the rate runs of a sweep or a search
	duration, warmup            time.Duration
	requests                    int
	rates, throughput           int
	objective                   sweep.Objective
	sloLow, sloHigh, sloStep    float64
	sloMaxRuns                  int
	format, out, simProfile     string
	requestsOut, metricsListen  string
	serverTimings               bool
	speed                       float64
	simReasoning                int
	headers                     cli.Headers
	body                        cli.BodyFlags
	extra                       map[string]any
	quiet                       bool
	set                         map[string]bool
	inputFlag, outputFlag, turn string
}

func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.url, "url", "", "base URL of the server's API, e.g. http://127.0.0.1:8000/v1 (empty: the built-in simulator)")
	fs.StringVar(&o.model, "model", "", "served model name")
	api := fs.String("api", "chat", "chat, completions, responses (OpenAI's Responses API) or messages (Anthropic's Messages API)")
	fs.StringVar(&o.keyEnv, "api-key-env", "", "name of the environment variable holding the API key")
	fs.Var(&o.headers, "header", "'Name: value' added to every request (repeatable); a credential's (Authorization, *key*, *token*) goes to -url's origin only and is never printed or saved")
	o.body.Register(fs)
	fs.StringVar(&o.transport, "transport", "stream", "the client's HTTP transport: stream (loadgen.StreamTransport) or http (net/http's: honours HTTP_PROXY)")

	fs.StringVar(&o.dataset, "dataset", "", "a ShareGPT file (JSON or JSONL) or a JSONL file of {\"prompt\": ..., \"output_tokens\": N}")
	fs.StringVar(&o.inputFlag, "input-len", "uniform:256,1024", "synthetic prompts' length in tokens, template included: N, uniform:MIN,MAX, normal:MEAN,SD or lognormal:MEAN,SD")
	fs.StringVar(&o.outputFlag, "output-len", "128", "output length in tokens, as -input-len (with -dataset, replaces the records' own; 0 leaves it to the server)")
	fs.IntVar(&o.prefix.Groups, "prefix-groups", 0, "synthetic prompts share this many system prompts")
	fs.IntVar(&o.prefix.Tokens, "prefix-len", 0, "tokens of each shared system prompt")
	fs.StringVar(&o.turn, "turns", "", "multi-turn sessions of this many turns (a length, as -input-len); each turn adds -input-len tokens of text and its reply")
	fs.DurationVar(&o.think, "think", 0, "pause between a session's turns")
	fs.StringVar(&o.trace, "trace", "", "replay a Mooncake JSONL or Azure CSV trace at its recorded times")
	fs.Float64Var(&o.traceScale, "trace-scale", 1, "multiplies the trace's times: 0.5 replays it twice as fast")
	fs.IntVar(&o.traceBlock, "trace-block", workload.DefaultBlockTokens, "prompt tokens a Mooncake hash ID stands for")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the synthetic text, the lengths and the arrivals (0: a fresh one, reported in the results; give it again to repeat them)")
	fs.BoolVar(&o.ignoreEOS, "ignore-eos", true, "ask the server to generate every output in full (vLLM, SGLang)")

	fs.StringVar(&o.profile, "profile", "concurrency", "concurrency, rate, poisson, gamma, sweep or slo")
	fs.IntVar(&o.concurrency, "concurrency", 8, "streams of -profile concurrency")
	fs.Float64Var(&o.rate, "rate", 0, "requests a second of -profile rate, poisson or gamma")
	fs.Float64Var(&o.burstiness, "burstiness", 0, "shape of gamma arrivals: below 1 burstier than Poisson")
	fs.IntVar(&o.maxInFlight, "max-in-flight", 0, fmt.Sprintf("cap on an open loop's requests in flight (0: %d)", loadgen.DefaultMaxInFlight))
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measurement window of each run")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "warm-up before each run's window; its requests are reported apart")
	fs.IntVar(&o.requests, "requests", 0, "send this many requests a run and wait for them all, instead of a -duration window")
	fs.IntVar(&o.rates, "rates", sweep.DefaultRates, "rates a sweep runs between its synchronous and throughput runs")
	fs.IntVar(&o.throughput, "throughput", sweep.DefaultThroughput, "streams of a sweep's or a search's throughput run")
	arrival := fs.String("arrival", "constant", "arrivals of a sweep's and a search's rate runs: constant, poisson or gamma (with -burstiness)")

	fs.DurationVar(&o.objective.SLO.TTFT, "slo-ttft", 0, "objective on time to first token, for goodput and -profile slo")
	fs.DurationVar(&o.objective.SLO.TPOT, "slo-tpot", 0, "objective on time per output token")
	fs.DurationVar(&o.objective.SLO.Latency, "slo-latency", 0, "objective on end-to-end latency")
	fs.Float64Var(&o.objective.Quantile, "slo-quantile", sweep.DefaultQuantile, "share of requests that must meet the objectives")
	fs.Float64Var(&o.sloLow, "slo-low", 0, "lowest rate -profile slo searches")
	fs.Float64Var(&o.sloHigh, "slo-high", 0, "highest rate -profile slo searches (0: a throughput run measures it)")
	fs.Float64Var(&o.sloStep, "slo-step", 0, "resolution of -profile slo, in requests a second (0: a twentieth of its range)")
	fs.IntVar(&o.sloMaxRuns, "slo-max-runs", sweep.DefaultMaxRuns, "most runs of -profile slo")

	fs.StringVar(&o.format, "format", "table", "report format: table, json or html")
	fs.StringVar(&o.out, "o", "", "write the report to this file instead of standard output")
	fs.BoolVar(&o.serverTimings, "server-timings", false, "ask the server for its own timings of each request (include_metrics: vLLM with --enable-per-request-metrics) and split TTFT into its queue, its prefill and the rest; always on with the simulator")
	fs.StringVar(&o.metricsListen, "metrics-listen", "", "serve the client's own metrics for Prometheus at http://ADDR/metrics while the runs go on (requests in flight, tokens, TTFT and time between tokens, errors by kind, labelled by run), e.g. :9464")
	fs.StringVar(&o.requestsOut, "requests-out", "", "write every request, as it ends, to this file: a line of JSON each, with its run, times, tokens, outcome and the server's timings")
	fs.StringVar(&o.simProfile, "sim-profile", "seed", "the simulator's profile, seed or fast (only without -url)")
	fs.Float64Var(&o.speed, "speed", DefaultSpeed, "the simulator's speed factor (only without -url)")
	fs.IntVar(&o.simReasoning, "sim-reasoning", 0, "the simulator's reasoning tokens before each answer, as a reasoning model's (only without -url)")
	fs.BoolVar(&o.quiet, "quiet", false, "print only the report")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q: every setting is a flag", fs.Args())
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	var err error
	if err = o.api.UnmarshalText([]byte(*api)); err != nil {
		return nil, fmt.Errorf("-api: %w", err)
	}
	if o.input, err = workload.ParseLength(o.inputFlag); err != nil {
		return nil, fmt.Errorf("-input-len: %w", err)
	}
	if o.output, err = workload.ParseLength(o.outputFlag); err != nil {
		return nil, fmt.Errorf("-output-len: %w", err)
	}
	if o.turn != "" {
		if o.turns, err = workload.ParseLength(o.turn); err != nil {
			return nil, fmt.Errorf("-turns: %w", err)
		}
	}
	if err = o.arrival.UnmarshalText([]byte(*arrival)); err != nil {
		return nil, fmt.Errorf("-arrival %q: want constant, poisson or gamma", *arrival)
	}
	return o, o.check()
}

// maxRates bounds -rates: a sweep's runs, each a window long.
const maxRates = 1000

// check refuses flags that cannot work together, before anything runs.
func (o *options) check() error {
	sources := 0
	for _, f := range []string{"dataset", "trace", "turns"} {
		if o.set[f] {
			sources++
		}
	}
	if sources > 1 {
		return errors.New("-dataset, -trace and -turns each choose what is sent: give one")
	}
	if err := o.loads(); err != nil {
		return err
	}
	if o.trace != "" {
		if o.set["profile"] {
			return errors.New("-trace replays the trace's own arrivals: drop -profile")
		}
		if !(o.traceScale > 0 && o.traceScale <= 1e6) {
			return fmt.Errorf("-trace-scale %g: give a factor above 0", o.traceScale)
		}
		if o.traceBlock < 1 {
			return fmt.Errorf("-trace-block %d: give 1 token or more", o.traceBlock)
		}
		for _, f := range []string{"duration", "requests", "warmup"} {
			if o.set[f] {
				return fmt.Errorf("-trace replays the whole trace at its own times, with no window or warm-up of its own: drop -%s (cut the trace to replay less of it)", f)
			}
		}
		o.profile = "trace"
		o.load = loadgen.Schedule{MaxInFlight: o.maxInFlight}
	}
	if _, closed := o.load.(loadgen.Closed); o.turns != nil && !closed {
		return errors.New("-turns sessions run in a closed loop: use -profile concurrency")
	}
	if o.think < 0 {
		return fmt.Errorf("-think %v cannot be negative", o.think)
	}
	if o.requests < 0 {
		return fmt.Errorf("-requests %d cannot be negative", o.requests)
	}
	if o.rates < 0 || o.rates > maxRates {
		return fmt.Errorf("-rates %d: give 0 to %d rates between the sweep's ends", o.rates, maxRates)
	}
	if o.duration <= 0 && o.requests == 0 && o.trace == "" {
		return errors.New("-duration must be above 0, or give -requests")
	}
	if o.warmup < 0 {
		return fmt.Errorf("-warmup %v cannot be negative", o.warmup)
	}
	if o.profile == "slo" {
		if err := o.objective.Validate(); err != nil {
			return fmt.Errorf("-profile slo: %w (set -slo-ttft, -slo-tpot or -slo-latency)", err)
		}
	} else if !(o.objective.Quantile >= 0 && o.objective.Quantile <= 1) {
		return fmt.Errorf("-slo-quantile %g: give a share from 0 to 1", o.objective.Quantile)
	}
	if o.prefix.Groups < 0 || o.prefix.Tokens < 0 || (o.prefix.Groups > 0) != (o.prefix.Tokens > 0) {
		return errors.New("-prefix-groups and -prefix-len go together, each above 0")
	}
	switch o.format {
	case "table", "json", "html":
	default:
		return fmt.Errorf("unknown -format %q (want table, json or html)", o.format)
	}
	if o.transport != "stream" && o.transport != "http" {
		return fmt.Errorf("unknown -transport %q (want stream or http)", o.transport)
	}
	var err error
	if o.extra, err = o.body.Extra(o.api); err != nil {
		return err
	}
	if o.simReasoning < 0 {
		return fmt.Errorf("-sim-reasoning holds %d, below 0", o.simReasoning)
	}
	if !(o.speed > 0 && o.speed <= 1000) {
		return fmt.Errorf("-speed %g: the simulator's speed factor must be above 0 and at most 1000", o.speed)
	}
	return nil
}

// loads makes the loads the flags ask for, in one place: the single run's
// (-profile concurrency, rate, poisson or gamma), and the open loop of a
// sweep's or a search's rate runs (-arrival, -burstiness), each with
// -max-in-flight and the run's seed.
func (o *options) loads() error {
	if o.seed == 0 {
		o.seed = rand.Uint64() | 1 // a fresh one, reported, so that it can be given again
	}
	open := func(a loadgen.Arrival) loadgen.Open {
		l := loadgen.Open{Rate: o.rate, Arrival: a, MaxInFlight: o.maxInFlight}
		if a != loadgen.Constant {
			l.Seed = o.seed
		}
		if a == loadgen.Gamma {
			l.Burstiness = o.burstiness
		}
		return l
	}
	switch o.profile {
	case "concurrency":
		o.load = loadgen.Closed{Streams: o.concurrency}
		if o.concurrency < 1 || o.concurrency > matrix.MaxConcurrency {
			return fmt.Errorf("-concurrency %d: give 1 to %d streams, the most one process runs with honest timing", o.concurrency, matrix.MaxConcurrency)
		}
		if o.maxInFlight != 0 {
			return errors.New("-max-in-flight caps an open loop: a closed loop keeps -concurrency requests in flight")
		}
	case "rate", "constant":
		o.load = open(loadgen.Constant)
	case "poisson":
		o.load = open(loadgen.Poisson)
	case "gamma":
		o.load = open(loadgen.Gamma)
	case "sweep", "slo":
		o.open = open(o.arrival)
		o.open.Rate = 1 // each run sets its own
		if err := o.open.Validate(); err != nil {
			return fmt.Errorf("-arrival %v: %w", o.arrival, err)
		}
		o.open.Rate = 0
		return nil
	default:
		return fmt.Errorf("-profile %q: want concurrency, rate, poisson, gamma, sweep or slo", o.profile)
	}
	if err := o.load.Validate(); err != nil {
		return fmt.Errorf("-profile %s: %w", o.profile, err)
	}
	return nil
}

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
	var ds *workload.Dataset
	var tr *workload.Trace
	if o.dataset != "" {
		if ds, err = workload.OpenDataset(o.dataset); err != nil {
			fail(stderr, err)
			return 2
		}
	}
	if o.trace != "" {
		if tr, err = workload.OpenTrace(o.trace); err != nil {
			fail(stderr, err)
			return 2
		}
	}

	res := &sweep.Results{Schema: sweep.Schema, Profile: o.profile, Started: time.Now(), Seed: o.seed}
	if !o.objective.IsZero() {
		obj := o.objective
		res.Objective = &obj
	}
	client := &loadgen.Client{BaseURL: o.url, Header: o.headers.Header(), HTTPClient: o.httpClient()}
	var sizing workload.Sizing
	if o.url == "" {
		p, err := loadgentest.ProfileByName(o.simProfile)
		if err != nil {
			fail(stderr, err)
			return 2
		}
		p.Speed, p.TruthBytes = o.speed, -1
		p.ReasoningTokens = o.simReasoning
		srv := loadgentest.NewServer(p)
		defer srv.Close()
		client.BaseURL = srv.URL + "/v1"
		o.model = srv.Handler.Profile().Model
		sizing = workload.SimulatorSizing(o.api != loadgen.Completions)
		res.Server = sweep.Server{URL: "simulator", Model: o.model, API: o.api, Simulated: true, Speed: o.speed, Profile: o.simProfile}
		res.Notes = append(res.Notes, fmt.Sprintf("llmload's simulated server, profile %q, at %g× speed: figures are in wall-clock time, of a server %g times faster than the profile's", o.simProfile, o.speed, o.speed))
	} else {
		if o.keyEnv != "" {
			if client.APIKey = os.Getenv(o.keyEnv); client.APIKey == "" {
				fail(stderr, fmt.Errorf("environment variable %s is empty", o.keyEnv))
				return 2
			}
		}
		if err := client.Validate(); err != nil {
			fail(stderr, err)
			return 2
		}
		res.Server = sweep.Server{URL: redact.URL(o.url), Model: o.model, API: o.api}
		if ds == nil {
			// Synthetic text and traces are sized in the server's tokens.
			if sizing, err = workload.Calibrate(ctx, client, o.api, o.model); err != nil {
				fail(stderr, redact.New(o.url, append(o.headers.Secrets(), client.APIKey)...).Error(err))
				return 1
			}
			res.Notes = append(res.Notes, fmt.Sprintf("prompt sizes calibrated from the server's usage: %.3g tokens a word, %d a message, %d a request", sizing.TokensPerWord, sizing.MessageTokens, sizing.ReplyTokens))
		}
	}
	defer client.CloseIdleConnections()

	mix := &workload.Mix{Trace: tr, Replay: workload.Replay{TimeScale: o.traceScale, BlockTokens: o.traceBlock},
		Dataset: ds, Turns: o.turns, Think: o.think, Input: o.input, Output: o.output, Prefix: o.prefix,
		Sizing: sizing, Seed: o.seed, Builder: workload.Builder{API: o.api, Model: o.model, IgnoreEOS: o.ignoreEOS}}
	if ds != nil && !o.set["output-len"] {
		mix.Output = nil // the records' own
	}
	if o.serverTimings || o.url == "" {
		mix.Builder.Extra = map[string]any{"include_metrics": true}
	}
	for k, v := range o.extra {
		if mix.Builder.Extra == nil {
			mix.Builder.Extra = make(map[string]any, len(o.extra))
		}
		mix.Builder.Extra[k] = v
	}
	res.Workload = mix.String()
	defer mix.Close()
	if err := mix.Validate(); err != nil {
		fail(stderr, err)
		return 2
	}
	var requests *requestlog.Writer
	if o.requestsOut != "" {
		if requests, err = requestlog.Create(o.requestsOut); err != nil {
			fail(stderr, fmt.Errorf("-requests-out: %w", err))
			return 2
		}
	}
	var lm *live.Metrics
	if o.metricsListen != "" {
		if lm, err = live.Start(ctx, o.metricsListen, "", progress(stderr, o.quiet)); err != nil {
			fail(stderr, fmt.Errorf("-metrics-listen: %w", err))
			return 2
		}
	}
	target := func(load loadgen.Load) (*loadgen.Generator, error) {
		g := &loadgen.Generator{Client: client, Duration: o.duration, Warmup: o.warmup, Requests: o.requests}
		observe(g, requests, lm, load.String())
		if o.requests > 0 {
			g.Duration = 0
		}
		if err := mix.Setup(g, load); err != nil {
			return nil, err
		}
		return g, nil
	}
	onResult := func(r sweep.Result) {
		if !o.quiet {
			fmt.Fprintf(stderr, "%-28s %6.2f req/s  %8.1f out tok/s  TTFT p50 %s ms  TPOT p50 %s ms  %d completed, %d failed\n",
				r.Label, r.RequestRate, r.OutputTokensPerSec, fmtMS(r.Summary.TTFT.P50), fmtMS(r.Summary.TPOT.P50), r.Summary.Completed, r.Summary.Failed)
			if r.OverCapacity != "" {
				fmt.Fprintf(stderr, "%-28s over capacity: %s\n", "", r.OverCapacity)
			}
		}
	}
	if !o.quiet {
		fmt.Fprintf(stderr, "Benchmarking %s against %s\n", res.Workload, serverName(res.Server))
	}

	var runErr error
	switch o.profile {
	case "sweep":
		sw := &sweep.Sweep{Target: target, Rates: o.rates, Throughput: o.throughput, Open: o.open,
			Objective: o.objective, OnResult: onResult}
		res.Runs, runErr = sw.Run(ctx)
	case "slo":
		s := &sweep.Search{Target: target, Objective: o.objective, Low: o.sloLow, High: o.sloHigh, Step: o.sloStep,
			MaxRuns: o.sloMaxRuns, Throughput: o.throughput, Open: o.open, OnResult: onResult}
		res.Search, res.Runs, runErr = s.Run(ctx)
	default:
		label := o.load.String()
		if tr != nil {
			label = "trace replay"
		}
		var r sweep.Result
		r, runErr = sweep.Run(ctx, target, o.load, label, o.objective)
		res.Runs = []sweep.Result{r}
		onResult(r)
	}
	if err := mix.Err(); err != nil && runErr == nil {
		runErr = err
	}
	res.Finished = time.Now()
	if requests != nil {
		if err := requests.Close(); err != nil {
			fail(stderr, fmt.Errorf("-requests-out: %w", err))
			return 1
		}
	}
	if werr := write(res, o, stdout); werr != nil {
		fail(stderr, werr)
		return 1
	}
	if runErr != nil {
		fail(stderr, runErr)
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

// observe writes each request of g's run to requests as it ends, and
// counts it in the live metrics, labelled run; either may be nil.
func observe(g *loadgen.Generator, requests *requestlog.Writer, lm *live.Metrics, run string) {
	if requests == nil && lm == nil {
		return
	}
	if g.Recorder == nil {
		g.Recorder = &metrics.Recorder{}
	}
	rec := g.Recorder
	if lm != nil {
		lm.Track(run, g)
	}
	g.OnRequest = func(req *loadgen.Request, tl *metrics.Timeline) {
		if requests != nil {
			requests.Write(run, rec.Window(), req, tl)
		}
		if lm != nil {
			lm.Observe(run, tl)
		}
	}
}

// progress is where the command's progress goes: stderr, or nowhere with
// -quiet.
func progress(stderr io.Writer, quiet bool) io.Writer {
	if quiet {
		return io.Discard
	}
	return stderr
}

func fmtMS(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

func serverName(s sweep.Server) string {
	if s.Simulated {
		return fmt.Sprintf("llmload's simulated server (profile %q, %g× speed)", s.Profile, s.Speed)
	}
	return s.URL
}

// httpClient returns a client on the transport -transport names.
func (o *options) httpClient() *http.Client {
	conns := max(o.concurrency, o.throughput, o.maxInFlight, loadgen.DefaultMaxInFlight) + 4
	if o.transport == "http" {
		return &http.Client{Transport: loadgen.NewTransport(conns)}
	}
	return &http.Client{Transport: loadgen.NewStreamTransport(conns)}
}

// write writes the report in -format, to -o or stdout.
func write(r *sweep.Results, o *options, stdout io.Writer) error {
	w := stdout
	if o.out != "" {
		f, err := os.Create(o.out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	switch o.format {
	case "json":
		return r.WriteJSON(w)
	case "html":
		return r.WriteHTML(w)
	}
	return r.WriteTable(w)
}
