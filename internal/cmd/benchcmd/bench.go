// Package benchcmd holds the serving benchmark's (examples/bench) flags:
// what they set of a [sweep.Benchmark] and the table naming its fields
// by them, and what the command does around a benchmark (the server, the
// requests' file, progress). Benchmark.Run decides the runs and checks
// them; what every command shares is package cli's.
package benchcmd

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/cmd/cli"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/loadgen/workload"
)

// Flags are the flags that say what a benchmark sends (a dataset,
// synthetic lengths, sessions or a trace) and how (the profile and its
// load, the window, a sweep's and an SLO search's settings);
// [Flags.Benchmark] sets them on a [sweep.Benchmark].
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
	concurrency                 list[int]
	rate                        list[float64]
	burstiness                  float64
	maxInFlight                 int
	arrival                     loadgen.Arrival
	duration, warmup, series    time.Duration
	requests                    int
	rates, throughputStreams    int
	objective                   sweep.Objective
	sloAxis                     sweep.Axis
	sloLow, sloHigh, sloStep    float64
	sloMaxRuns                  int
	batch                       int
	set                         map[string]bool
	inputFlag, outputFlag, turn string
	arrivalFlag, sloAxisFlag    string
}

// Register defines the flags on fs.
func (b *Flags) Register(fs *flag.FlagSet) {
	b.registerWorkload(fs)
	b.concurrency = list[int]{8}
	fs.StringVar(&b.profile, "profile", "concurrency", "concurrency, rate, poisson, gamma, sweep or slo")
	fs.Var(&b.concurrency, "concurrency", "streams of -profile concurrency, or a list of them, each a run (1,4,16); with -profile slo -slo-axis concurrency, runs before the search")
	fs.Var(&b.rate, "rate", "requests a second of -profile rate, poisson or gamma, or a list of them, each a run (2,4,8); with -profile slo, runs before the search")
	fs.Float64Var(&b.burstiness, "burstiness", 0, "shape of gamma arrivals: below 1 burstier than Poisson")
	fs.IntVar(&b.maxInFlight, "max-in-flight", 0, fmt.Sprintf("cap on an open loop's requests in flight (0: %d)", loadgen.DefaultMaxInFlight))
	fs.DurationVar(&b.duration, "duration", 10*time.Second, "measurement window of each run")
	fs.DurationVar(&b.warmup, "warmup", 2*time.Second, "warm-up before each run's window; its requests are reported apart")
	fs.DurationVar(&b.series, "series", time.Second, "interval of each run's time series, in the results (0 keeps none)")
	fs.IntVar(&b.requests, "requests", 0, "send this many requests a run and wait for them all, instead of a -duration window")
	fs.IntVar(&b.rates, "rates", sweep.DefaultRates, "rates a sweep runs between its synchronous and throughput runs (0: the default)")
	fs.IntVar(&b.throughputStreams, "throughput", sweep.DefaultThroughputStreams, "streams of a sweep's or a search's throughput run, and the top of a search of streams without -slo-high")
	fs.StringVar(&b.arrivalFlag, "arrival", "constant", "arrivals of a sweep's and a search's rate runs: constant, poisson or gamma (with -burstiness)")

	fs.DurationVar(&b.objective.SLO.TTFT, "slo-ttft", 0, "objective on time to first token, for goodput and -profile slo")
	fs.DurationVar(&b.objective.SLO.TTFO, "slo-ttfo", 0, "objective on time to first output token, the first answer token after any reasoning, for goodput and -profile slo")
	fs.DurationVar(&b.objective.SLO.TPOT, "slo-tpot", 0, "objective on time per output token")
	fs.DurationVar(&b.objective.SLO.Latency, "slo-latency", 0, "objective on end-to-end latency")
	fs.Float64Var(&b.objective.Quantile, "slo-quantile", sweep.DefaultQuantile, "share of requests that must meet the objectives")
	fs.StringVar(&b.sloAxisFlag, "slo-axis", "rate", "what -profile slo searches: rate (requests a second) or concurrency (streams)")
	fs.Float64Var(&b.sloLow, "slo-low", 0, "lowest level -profile slo searches, in requests a second or streams")
	fs.Float64Var(&b.sloHigh, "slo-high", 0, "highest level -profile slo searches (0: for rates, a throughput run measures it; for streams, -throughput)")
	fs.Float64Var(&b.sloStep, "slo-step", 0, "resolution of -profile slo, in requests a second or streams (0: a twentieth of its range)")
	fs.IntVar(&b.sloMaxRuns, "slo-max-runs", sweep.DefaultMaxRuns, "most runs of -profile slo")
}

// registerWorkload defines the flags that say what is sent.
func (b *Flags) registerWorkload(fs *flag.FlagSet) {
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
}

// Parse reads the flags on fs, parsed, and refuses those that cannot work
// together, before anything runs. The benchmark's own settings are
// checked by [sweep.Benchmark.Run]; [Flags.Fields] names them as flags.
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
	if err = b.sloAxis.UnmarshalText([]byte(b.sloAxisFlag)); err != nil || b.sloAxis == 0 {
		return fmt.Errorf("-slo-axis %q: want rate or concurrency", b.sloAxisFlag)
	}
	if b.seed == 0 {
		b.seed = rand.Uint64() | 1 // a fresh one, reported, so that it can be given again
	}
	return b.check()
}

// check refuses flags that cannot work together, before anything runs:
// what the flags mean together, not what a Benchmark checks.
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
	if b.trace != "" {
		if err := b.checkTrace(); err != nil {
			return err
		}
	}
	switch {
	case b.trace == "" && !slices.Contains([]string{"concurrency", "rate", "constant", "poisson", "gamma", "sweep", "slo"}, b.profile):
		return fmt.Errorf("-profile %q: want concurrency, rate, poisson, gamma, sweep or slo", b.profile)
	case b.profile == "concurrency" && b.maxInFlight != 0:
		return errors.New("-max-in-flight caps an open loop: a closed loop keeps -concurrency requests in flight")
	case b.duration == 0 && b.requests == 0 && b.trace == "": // the Benchmark would take it for its default
		return errors.New("-duration must be above 0, or give -requests")
	}
	if b.turns != nil && b.profile != "concurrency" {
		return errors.New("-turns sessions run in a closed loop: use -profile concurrency")
	}
	if b.think < 0 {
		return fmt.Errorf("-think %v cannot be negative", b.think)
	}
	if b.prefix.Groups < 0 || b.prefix.Tokens < 0 || (b.prefix.Groups > 0) != (b.prefix.Tokens > 0) {
		return errors.New("-prefix-groups and -prefix-len go together, each above 0")
	}
	if b.batch < 1 || b.batch > maxBatch {
		return fmt.Errorf("-batch %d: give 1 to %d inputs a request", b.batch, maxBatch)
	}
	return nil
}

// checkTrace refuses the flags a trace's replay has no use for.
func (b *Flags) checkTrace() error {
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

// Benchmark sets on bm what the flags say of the runs: the window, what
// each run records, the objective and the load: a closed loop at each of
// -concurrency's levels, an open loop at each of -rate's, a sweep, a
// search (after the levels given on its axis) or a trace's schedule.
// bm.Run checks them all, and [Flags.Fields] names its errors as flags.
func (b *Flags) Benchmark(bm *sweep.Benchmark) {
	bm.Duration, bm.Warmup, bm.Requests, bm.Series = b.duration, b.warmup, b.requests, b.series
	bm.Objective, bm.ThroughputStreams = b.objective, b.throughputStreams
	arrival := map[string]loadgen.Arrival{"rate": loadgen.Constant, "constant": loadgen.Constant, "poisson": loadgen.Poisson, "gamma": loadgen.Gamma}[b.profile]
	if b.profile == "sweep" || b.profile == "slo" {
		arrival = b.arrival
	}
	bm.Open = loadgen.Open{Arrival: arrival, MaxInFlight: b.maxInFlight}
	if arrival != loadgen.Constant {
		bm.Open.Seed = b.seed
	}
	if arrival == loadgen.Gamma {
		bm.Open.Burstiness = b.burstiness
	}
	switch b.profile {
	case "trace":
		bm.Load = loadgen.Schedule{MaxInFlight: b.maxInFlight}
	case "concurrency":
		bm.Concurrency = b.concurrency
	case "rate", "constant", "poisson", "gamma":
		bm.Rates = b.rate.orZero()
	case "sweep":
		bm.Sweep = b.rates
		if b.rates == 0 {
			bm.Sweep = sweep.DefaultRates
		}
	case "slo":
		bm.Search, bm.Low, bm.High, bm.Step, bm.MaxRuns = b.sloAxis, b.sloLow, b.sloHigh, b.sloStep, b.sloMaxRuns
		if b.set["concurrency"] {
			bm.Concurrency = b.concurrency
		}
		if b.set["rate"] {
			bm.Rates = b.rate
		}
	}
}

// Fields is the table of the flags that set each field of a
// [sweep.Benchmark] and of its Client, for [cli.Fields.Error].
func (b *Flags) Fields() cli.Fields {
	open := "-profile " + b.profile // the arrivals of a rate profile
	if b.profile == "sweep" || b.profile == "slo" {
		open = "-arrival " + b.arrival.String()
	}
	objective := "-slo-quantile"
	if b.profile == "slo" {
		objective = "-profile slo (its objective: -slo-ttft, -slo-ttfo, -slo-tpot, -slo-latency, -slo-quantile)"
	}
	return cli.Fields{
		"Benchmark.Concurrency": "-concurrency", "Benchmark.Rates": "-rate", "Benchmark.Open": open, "Benchmark.Open.Rate": "-rate",
		"Benchmark.Load": "-max-in-flight", "Benchmark.Sweep": "-rates", "Benchmark.ThroughputStreams": "-throughput",
		"Benchmark.Duration": "-duration", "Benchmark.Warmup": "-warmup", "Benchmark.Requests": "-requests", "Benchmark.Series": "-series",
		"Benchmark.Objective": objective, "Benchmark.Search": "-slo-axis", "Benchmark.Low": "-slo-low", "Benchmark.High": "-slo-high",
		"Benchmark.Step": "-slo-step", "Benchmark.MaxRuns": "-slo-max-runs", "Benchmark.Client": "-url",
	}
}

// Profile is the results' Profile: -profile as given ("rate", where a
// Benchmark says "constant"), or "trace".
func (b *Flags) Profile() string { return b.profile }

// Seed is -seed, or the fresh one drawn for a -seed of 0.
func (b *Flags) Seed() uint64 { return b.seed }

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

// Conns is how many connections the benchmark's client keeps to the
// server: enough for its most streams and a few more.
func (b *Flags) Conns() int {
	most := max(b.throughputStreams, b.maxInFlight, loadgen.DefaultMaxInFlight, int(min(b.sloHigh, 1<<14)))
	for _, n := range b.concurrency {
		most = max(most, n)
	}
	return min(most, 1<<14) + 4
}

// list is a flag of values separated by commas: streams (1,4,16) or
// rates (2,4,8).
type list[T int | float64] []T

func (l *list[T]) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ",")
}

func (l *list[T]) Set(v string) error {
	*l = nil
	for f := range strings.SplitSeq(v, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || float64(T(x)) != x {
			if _, whole := any(T(0)).(int); whole {
				return fmt.Errorf("%q is not a whole number", f)
			}
			return fmt.Errorf("%q is not a number", f)
		}
		*l = append(*l, T(x))
	}
	return nil
}

// orZero is the list, or a rate of 0 (which the benchmark refuses) when
// none was given.
func (l list[T]) orZero() []T {
	if len(l) == 0 {
		return []T{0}
	}
	return l
}
