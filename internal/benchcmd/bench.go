// Package benchcmd is the serving benchmark's command (examples/bench) but
// its main: the flags that say what a benchmark sends and how, and the
// runs they make. What every command shares is package cli's.
package benchcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/llmload/llmload/internal/cli"
	"github.com/llmload/llmload/internal/dcgm"
	"github.com/llmload/llmload/internal/live"
	"github.com/llmload/llmload/internal/requestlog"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/loadgen/workload"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/metrics"
)

// Flags are the flags that say what a benchmark sends (a dataset,
// synthetic lengths, sessions or a trace) and how (the profile and its
// load, the window, a sweep's and an SLO search's settings); [Flags.Mix]
// and [Flags.Run] make and run them.
type Flags struct {
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
	duration, warmup, series    time.Duration
	requests                    int
	rates, throughput           int
	objective                   sweep.Objective
	sloLow, sloHigh, sloStep    float64
	sloMaxRuns                  int
	batch                       int
	set                         map[string]bool
	inputFlag, outputFlag, turn string
	arrivalFlag                 string
}

// Register defines the flags on fs.
func (b *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&b.dataset, "dataset", "", "a ShareGPT file (JSON or JSONL; ShareGPT4V's \"image\" too), OpenAI chat records {\"messages\": [...]} with image_url parts, or a JSONL file of {\"prompt\": ..., \"output_tokens\": N}; image files are under the file's directory")
	fs.StringVar(&b.inputFlag, "input-len", "uniform:256,1024", "synthetic prompts' length in tokens, template included: N, uniform:MIN,MAX, normal:MEAN,SD or lognormal:MEAN,SD")
	fs.StringVar(&b.outputFlag, "output-len", "128", "output length in tokens, as -input-len (with -dataset, replaces the records' own; 0 leaves it to the server)")
	fs.IntVar(&b.prefix.Groups, "prefix-groups", 0, "synthetic prompts share this many system prompts")
	fs.IntVar(&b.prefix.Tokens, "prefix-len", 0, "tokens of each shared system prompt")
	fs.StringVar(&b.turn, "turns", "", "multi-turn sessions of this many turns (a length, as -input-len); each turn adds -input-len tokens of text and its reply")
	fs.DurationVar(&b.think, "think", 0, "pause between a session's turns")
	fs.StringVar(&b.trace, "trace", "", "replay a Mooncake JSONL or Azure CSV trace at its recorded times")
	fs.Float64Var(&b.traceScale, "trace-scale", 1, "multiplies the trace's times: 0.5 replays it twice as fast")
	fs.IntVar(&b.traceBlock, "trace-block", workload.DefaultBlockTokens, "prompt tokens a Mooncake hash ID stands for")
	fs.Uint64Var(&b.seed, "seed", 0, "seed of the synthetic text, the lengths and the arrivals (0: a fresh one, reported in the results; give it again to repeat them)")
	fs.BoolVar(&b.ignoreEOS, "ignore-eos", true, "ask the server to generate every output in full (vLLM, SGLang)")
	fs.IntVar(&b.batch, "batch", 1, "with -api embeddings, the inputs a request embeds; with -api rerank, the documents a query ranks (each input and the query of -input-len tokens)")

	fs.StringVar(&b.profile, "profile", "concurrency", "concurrency, rate, poisson, gamma, sweep or slo")
	fs.IntVar(&b.concurrency, "concurrency", 8, "streams of -profile concurrency")
	fs.Float64Var(&b.rate, "rate", 0, "requests a second of -profile rate, poisson or gamma")
	fs.Float64Var(&b.burstiness, "burstiness", 0, "shape of gamma arrivals: below 1 burstier than Poisson")
	fs.IntVar(&b.maxInFlight, "max-in-flight", 0, fmt.Sprintf("cap on an open loop's requests in flight (0: %d)", loadgen.DefaultMaxInFlight))
	fs.DurationVar(&b.duration, "duration", 10*time.Second, "measurement window of each run")
	fs.DurationVar(&b.warmup, "warmup", 2*time.Second, "warm-up before each run's window; its requests are reported apart")
	fs.DurationVar(&b.series, "series", time.Second, "interval of each run's time series, in the results (0 keeps none)")
	fs.IntVar(&b.requests, "requests", 0, "send this many requests a run and wait for them all, instead of a -duration window")
	fs.IntVar(&b.rates, "rates", sweep.DefaultRates, "rates a sweep runs between its synchronous and throughput runs")
	fs.IntVar(&b.throughput, "throughput", sweep.DefaultThroughput, "streams of a sweep's or a search's throughput run")
	fs.StringVar(&b.arrivalFlag, "arrival", "constant", "arrivals of a sweep's and a search's rate runs: constant, poisson or gamma (with -burstiness)")

	fs.DurationVar(&b.objective.SLO.TTFT, "slo-ttft", 0, "objective on time to first token, for goodput and -profile slo")
	fs.DurationVar(&b.objective.SLO.TTFO, "slo-ttfo", 0, "objective on time to first output token, the first answer token after any reasoning, for goodput and -profile slo")
	fs.DurationVar(&b.objective.SLO.TPOT, "slo-tpot", 0, "objective on time per output token")
	fs.DurationVar(&b.objective.SLO.Latency, "slo-latency", 0, "objective on end-to-end latency")
	fs.Float64Var(&b.objective.Quantile, "slo-quantile", sweep.DefaultQuantile, "share of requests that must meet the objectives")
	fs.Float64Var(&b.sloLow, "slo-low", 0, "lowest rate -profile slo searches")
	fs.Float64Var(&b.sloHigh, "slo-high", 0, "highest rate -profile slo searches (0: a throughput run measures it)")
	fs.Float64Var(&b.sloStep, "slo-step", 0, "resolution of -profile slo, in requests a second (0: a twentieth of its range)")
	fs.IntVar(&b.sloMaxRuns, "slo-max-runs", sweep.DefaultMaxRuns, "most runs of -profile slo")
}

// Parse reads the flags on fs, parsed, and refuses those that cannot work
// together, before anything runs.
func (b *Flags) Parse(fs *flag.FlagSet) error {
	b.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { b.set[f.Name] = true })
	var err error
	if b.input, err = workload.ParseLength(b.inputFlag); err != nil {
		return fmt.Errorf("-input-len: %w", err)
	}
	if b.output, err = workload.ParseLength(b.outputFlag); err != nil {
		return fmt.Errorf("-output-len: %w", err)
	}
	if b.turn != "" {
		if b.turns, err = workload.ParseLength(b.turn); err != nil {
			return fmt.Errorf("-turns: %w", err)
		}
	}
	if err = b.arrival.UnmarshalText([]byte(b.arrivalFlag)); err != nil {
		return fmt.Errorf("-arrival %q: want constant, poisson or gamma", b.arrivalFlag)
	}
	return b.check()
}

// maxRates bounds -rates: a sweep's runs, each a window long.
const maxRates = 1000

// check refuses flags that cannot work together, before anything runs.
func (b *Flags) check() error {
	sources := 0
	for _, f := range []string{"dataset", "trace", "turns"} {
		if b.set[f] {
			sources++
		}
	}
	if sources > 1 {
		return errors.New("-dataset, -trace and -turns each choose what is sent: give one")
	}
	if err := b.loads(); err != nil {
		return err
	}
	if b.trace != "" {
		if b.set["profile"] {
			return errors.New("-trace replays the trace's own arrivals: drop -profile")
		}
		if !(b.traceScale > 0 && b.traceScale <= 1e6) {
			return fmt.Errorf("-trace-scale %g: give a factor above 0", b.traceScale)
		}
		if b.traceBlock < 1 {
			return fmt.Errorf("-trace-block %d: give 1 token or more", b.traceBlock)
		}
		for _, f := range []string{"duration", "requests", "warmup"} {
			if b.set[f] {
				return fmt.Errorf("-trace replays the whole trace at its own times, with no window or warm-up of its own: drop -%s (cut the trace to replay less of it)", f)
			}
		}
		b.profile = "trace"
		b.load = loadgen.Schedule{MaxInFlight: b.maxInFlight}
	}
	if _, closed := b.load.(loadgen.Closed); b.turns != nil && !closed {
		return errors.New("-turns sessions run in a closed loop: use -profile concurrency")
	}
	if b.think < 0 {
		return fmt.Errorf("-think %v cannot be negative", b.think)
	}
	if b.requests < 0 {
		return fmt.Errorf("-requests %d cannot be negative", b.requests)
	}
	if b.rates < 0 || b.rates > maxRates {
		return fmt.Errorf("-rates %d: give 0 to %d rates between the sweep's ends", b.rates, maxRates)
	}
	if b.duration <= 0 && b.requests == 0 && b.trace == "" {
		return errors.New("-duration must be above 0, or give -requests")
	}
	if b.warmup < 0 {
		return fmt.Errorf("-warmup %v cannot be negative", b.warmup)
	}
	if b.profile == "slo" {
		if err := b.objective.Validate(); err != nil {
			return fmt.Errorf("-profile slo: %w (set -slo-ttft, -slo-ttfo, -slo-tpot or -slo-latency)", err)
		}
	} else if !(b.objective.Quantile >= 0 && b.objective.Quantile <= 1) {
		return fmt.Errorf("-slo-quantile %g: give a share from 0 to 1", b.objective.Quantile)
	}
	if b.prefix.Groups < 0 || b.prefix.Tokens < 0 || (b.prefix.Groups > 0) != (b.prefix.Tokens > 0) {
		return errors.New("-prefix-groups and -prefix-len go together, each above 0")
	}
	if b.batch < 1 || b.batch > maxBatch {
		return fmt.Errorf("-batch %d: give 1 to %d inputs a request", b.batch, maxBatch)
	}
	return nil
}

// maxBatch bounds -batch.
const maxBatch = 4096

// CheckAPI refuses the flags that do not apply to api: -batch beside a
// generation, and on Embeddings and Rerank, which answer at once with
// no tokens, sessions and objectives on tokens.
func (b *Flags) CheckAPI(api loadgen.API) error {
	if api != loadgen.Embeddings && api != loadgen.Rerank {
		if b.set["batch"] {
			return fmt.Errorf("-batch applies to -api embeddings and rerank, not %v", api)
		}
		return nil
	}
	switch {
	case b.turns != nil:
		return fmt.Errorf("-turns makes conversations, and -api %v sends none: drop it", api)
	case b.objective.SLO.TTFT > 0 || b.objective.SLO.TPOT > 0 || b.objective.SLO.TTFO > 0:
		return fmt.Errorf("-api %v answers in one body, with no tokens to time: set -slo-latency instead of -slo-ttft, -slo-ttfo and -slo-tpot", api)
	}
	return nil
}

// Batch reports -batch.
func (b *Flags) Batch() int { return b.batch }

// loads makes the loads the flags ask for, in one place: the single run's
// (-profile concurrency, rate, poisson or gamma), and the open loop of a
// sweep's or a search's rate runs (-arrival, -burstiness), each with
// -max-in-flight and the run's seed.
func (b *Flags) loads() error {
	if b.seed == 0 {
		b.seed = rand.Uint64() | 1 // a fresh one, reported, so that it can be given again
	}
	open := func(a loadgen.Arrival) loadgen.Open {
		l := loadgen.Open{Rate: b.rate, Arrival: a, MaxInFlight: b.maxInFlight}
		if a != loadgen.Constant {
			l.Seed = b.seed
		}
		if a == loadgen.Gamma {
			l.Burstiness = b.burstiness
		}
		return l
	}
	switch b.profile {
	case "concurrency":
		b.load = loadgen.Closed{Streams: b.concurrency}
		if b.concurrency < 1 || b.concurrency > matrix.MaxConcurrency {
			return fmt.Errorf("-concurrency %d: give 1 to %d streams, the most one process runs with honest timing", b.concurrency, matrix.MaxConcurrency)
		}
		if b.maxInFlight != 0 {
			return errors.New("-max-in-flight caps an open loop: a closed loop keeps -concurrency requests in flight")
		}
	case "rate", "constant":
		b.load = open(loadgen.Constant)
	case "poisson":
		b.load = open(loadgen.Poisson)
	case "gamma":
		b.load = open(loadgen.Gamma)
	case "sweep", "slo":
		b.open = open(b.arrival)
		b.open.Rate = 1 // each run sets its own
		if err := b.open.Validate(); err != nil {
			return fmt.Errorf("-arrival %v: %w", b.arrival, err)
		}
		b.open.Rate = 0
		return nil
	default:
		return fmt.Errorf("-profile %q: want concurrency, rate, poisson, gamma, sweep or slo", b.profile)
	}
	if err := b.load.Validate(); err != nil {
		return fmt.Errorf("-profile %s: %w", b.profile, err)
	}
	return nil
}

// Results returns the results a benchmark starts from: its profile, seed
// and objective.
func (b *Flags) Results() *sweep.Results {
	res := &sweep.Results{Profile: b.profile, Started: time.Now(), Seed: b.seed}
	if b.objective.SLO != (metrics.SLO{}) {
		obj := b.objective
		res.Objective = &obj
	}
	return res
}

// Open reads -dataset's or -trace's file through, before a server is
// started or a request sent: a malformed record stops everything. A
// benchmark sized by its dataset's own prompts needs no calibration.
func (b *Flags) Open() (m *workload.Mix, sized bool, err error) {
	m = &workload.Mix{Replay: workload.Replay{TimeScale: b.traceScale, BlockTokens: b.traceBlock},
		Turns: b.turns, Think: b.think, Input: b.input, Output: b.output, Prefix: b.prefix, Seed: b.seed}
	if b.dataset != "" {
		if m.Dataset, err = workload.OpenDataset(b.dataset); err != nil {
			return nil, false, err
		}
		if !b.set["output-len"] {
			m.Output = nil // the records' own
		}
	}
	if b.trace != "" {
		if m.Trace, err = workload.OpenTrace(b.trace); err != nil {
			return nil, false, err
		}
	}
	return m, m.Dataset != nil, nil
}

// Files returns the files the flags read (-dataset, -trace), for
// [cli.Distinct].
func (b *Flags) Files() []cli.FileFlag {
	return []cli.FileFlag{{Name: "dataset", Path: b.dataset}, {Name: "trace", Path: b.trace}}
}

// IgnoreEOS reports -ignore-eos.
func (b *Flags) IgnoreEOS() bool { return b.ignoreEOS }

// Run runs the benchmark the flags ask for against the runs target makes,
// writing each request to requests, counting it in lm and giving each
// run the energy gpus read in its window at hourlyCost dollars a GPU an
// hour (requests, lm and gpus may be nil), into res; onResult is called
// with each run's result.
func (b *Flags) Run(ctx context.Context, client *loadgen.Client, mix *workload.Mix, requests *requestlog.Writer, lm *live.Metrics,
	gpus *dcgm.Meter, hourlyCost float64, res *sweep.Results, onResult func(sweep.Result)) error {
	target := func(load loadgen.Load) (*loadgen.Generator, error) {
		g := &loadgen.Generator{Client: client, Duration: b.duration, Warmup: b.warmup, Requests: b.requests}
		if b.series > 0 {
			g.Recorder = &metrics.Recorder{Every: b.series}
		}
		if len(mix.Builder.Models) > 0 {
			if g.Recorder == nil {
				g.Recorder = &metrics.Recorder{}
			}
			g.Recorder.ByModel = true
		}
		if gpus != nil {
			g.OnWindow = gpus.Mark
		}
		observe(g, requests, lm, load.String())
		if b.requests > 0 {
			g.Duration = 0
		}
		if err := mix.Setup(g, load); err != nil {
			return nil, err
		}
		return g, nil
	}
	// Each run's energy, taken as it ends, in the order of the runs.
	var energies []*metrics.Energy
	if gpus != nil {
		report := onResult
		onResult = func(r sweep.Result) {
			if w := r.Summary.Window; !w.Start.IsZero() {
				e, err := gpus.Energy(ctx, w, r.Summary.OutputTokens, hourlyCost)
				if err != nil {
					res.Notes = append(res.Notes, r.Label+": the GPUs' energy: "+err.Error())
				}
				if e != nil {
					for _, n := range e.Notes {
						res.Notes = append(res.Notes, r.Label+": the GPUs' energy: "+n)
					}
				}
				r.Energy = e
			}
			energies = append(energies, r.Energy)
			report(r)
		}
	}
	defer func() {
		for i := range min(len(energies), len(res.Runs)) {
			res.Runs[i].Energy = energies[i]
		}
	}()
	var err error
	switch b.profile {
	case "sweep":
		sw := &sweep.Sweep{Target: target, Rates: b.rates, Throughput: b.throughput, Open: b.open,
			Objective: b.objective, OnResult: onResult}
		var got *sweep.Results
		got, err = sw.Run(ctx)
		res.Runs = got.Runs
	case "slo":
		s := &sweep.Search{Target: target, Objective: b.objective, Low: b.sloLow, High: b.sloHigh, Step: b.sloStep,
			MaxRuns: b.sloMaxRuns, Throughput: b.throughput, Open: b.open, OnResult: onResult}
		var got *sweep.Results
		got, err = s.Run(ctx)
		res.Search, res.Runs = got.Search, got.Runs
	default:
		label := b.load.String()
		if mix.Trace != nil {
			label = "trace replay"
		}
		var r sweep.Result
		r, err = sweep.Run(ctx, target, b.load, label, b.objective)
		res.Runs = []sweep.Result{r}
		onResult(r)
	}
	if merr := mix.Err(); merr != nil && err == nil {
		err = merr
	}
	return err
}

// Conns is how many connections the benchmark's client keeps to the
// server: enough for its most streams and a few more.
func (b *Flags) Conns() int {
	return max(b.concurrency, b.throughput, b.maxInFlight, loadgen.DefaultMaxInFlight) + 4
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
