package sweep

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/errlist"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// Defaults of a [Sweep] and a [Search].
const (
	// DefaultRates is how many rates a sweep runs between its synchronous
	// and its throughput runs.
	DefaultRates = 8
	// DefaultThroughputStreams is the streams of a throughput run: more than
	// most servers run at once (vLLM's --max-num-seqs is 256 by default
	// on small GPUs, 1024 on large ones), so that the server, not the
	// client, is the limit.
	DefaultThroughputStreams = 512
	// DefaultMaxRuns bounds the runs of a search.
	DefaultMaxRuns = 12
	// defaultSteps is a search's resolution when it sets no Step: its
	// range in this many steps.
	defaultSteps = 20
)

// Sweep runs a server from idle to saturated, as guidellm's sweep does:
// one synchronous run (one request at a time), one throughput run (as
// many at once as ThroughputStreams allows), then Rates open-loop runs at rates
// evenly spaced between the two runs' capacities (see
// [Result].Capacity).
type Sweep struct {
	// Target makes each run's Generator; required.
	Target Target
	// Rates is how many rates lie between; 0 means DefaultRates.
	Rates int
	// ThroughputStreams is the throughput run's streams; 0 means
	// DefaultThroughputStreams.
	ThroughputStreams int
	// Open is the rate runs' load: its Arrival (Poisson, the zero value,
	// Constant or Gamma with Burstiness), MaxInFlight and Seed; the sweep
	// sets each run's Rate.
	Open loadgen.Open
	// Objective, if set, checks every run (see [Result.Met]).
	Objective Objective
	// OnResult, if set, is called with each run's result as the run ends,
	// before the result joins the others: what it adds (such as the
	// Energy the run's window drew) is kept, as with [Benchmark].OnResult.
	OnResult func(*Result)
}

// Run runs the sweep and returns its results: Profile "sweep", Axis
// rate, the Objective if one was set, and the runs in order, the
// synchronous one, the throughput one, then the rates from the lowest. The
// caller says what it measured (Results.Server, Workload, Seed) before
// writing them. On an error, the results hold the runs finished so far.
func (s *Sweep) Run(ctx context.Context) (*Results, error) {
	if s == nil {
		return startResults("sweep", Objective{}), fmt.Errorf("sweep: Run of a nil *Sweep: %w", fs.ErrInvalid)
	}
	res := startResults("sweep", s.Objective)
	res.Axis = AxisRate
	rn := &runner{ctx: ctx, target: s.Target, obj: s.Objective, onResult: s.OnResult}
	err := s.check()
	if err == nil {
		err = s.runOn(rn)
	}
	res.Runs = rn.runs
	res.Finished = time.Now()
	return res, err
}

// startResults returns the results of a sweep or a search as it starts.
func startResults(profile string, o Objective) *Results {
	res := &Results{Schema: Schema, Profile: profile, Started: time.Now()}
	if o.SLO != (metrics.SLO{}) {
		res.Objective = &o
	}
	return res
}

// runner runs loads one after another against one target, each checked
// against one objective, and keeps their results in order.
type runner struct {
	ctx      context.Context
	target   Target
	obj      Objective
	runs     []Result
	onResult func(*Result) // may add to each result before it is kept
}

// do runs load, keeps its result and returns it.
func (rn *runner) do(load loadgen.Load, label string) (Result, error) {
	r, err := Run(rn.ctx, rn.target, load, label, rn.obj)
	if rn.onResult != nil {
		rn.onResult(&r)
	}
	rn.runs = append(rn.runs, r)
	return r, err
}

// check reports a sweep that cannot run, before any run.
func (s *Sweep) check() error {
	if s.Target == nil {
		return &loadgen.ConfigError{Field: "Sweep.Target", Reason: "is nil: set the function that makes each run's Generator"}
	}
	return checkOpen("Sweep.", s.Open)
}

// runOn runs the sweep's runs with rn.
func (s *Sweep) runOn(rn *runner) error {
	sync, err := rn.do(loadgen.Closed{Streams: 1}, "synchronous")
	if err != nil {
		return err
	}
	through, err := rn.do(loadgen.Closed{Streams: pick(s.ThroughputStreams, DefaultThroughputStreams)}, "throughput")
	if err != nil {
		return err
	}
	lo, hi := min(sync.Capacity, through.Capacity), max(sync.Capacity, through.Capacity)
	if !(lo > 0) {
		return fmt.Errorf("sweep: the synchronous run completed no request (%s): there is no rate to sweep", describe(sync))
	}
	k := pick(s.Rates, DefaultRates)
	for i := 1; i <= k; i++ {
		load := s.Open
		load.Rate = lo + (hi-lo)*float64(i)/float64(k+1)
		if _, err := rn.do(load, load.String()); err != nil {
			return err
		}
	}
	return nil
}

// describe says what a run did, for an error.
func describe(r Result) string {
	s := r.Summary
	return fmt.Sprintf("%d requests: %d completed, %d failed, %d cut", r.Requests, s.Completed, s.Failed, s.Canceled)
}

func pick(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// checkOpen checks the open loop of rate runs, at any rate, as a
// [*loadgen.ConfigError] for the field prefix+"Open".
func checkOpen(prefix string, o loadgen.Open) error {
	o.Rate = 1
	if err := o.Validate(); err != nil {
		return &loadgen.ConfigError{Field: prefix + "Open", Reason: "cannot work as the rate runs' load: " + strings.TrimPrefix(err.Error(), "loadgen: ")}
	}
	return nil
}

// Search finds the highest level of an axis, request rate or concurrency,
// whose runs meet an [Objective], by bisection between Low and High until
// the two are at most Step apart (on the concurrency axis, whole streams).
// It assumes a level that meets the objective is met by every lower one.
// The answer is the highest level a run met, with the runs that bracket
// it: the one at that level, and the one a Step or less above it that did
// not meet it.
type Search struct {
	// Target makes each run's Generator; required. Give its runs a number
	// of Requests, or a Duration long enough to reach a steady state: a
	// short run at a rate the server cannot sustain may end before its
	// queue shows.
	Target Target
	// Objective is what a level must meet; required.
	Objective Objective
	// Axis is what the search varies: AxisRate (the zero value too), the
	// requests a second of an open loop, or AxisConcurrency, the streams
	// of a closed loop.
	Axis Axis
	// Low and High bound the levels searched. Low 0 starts from nothing;
	// High 0 means, for rates, the highest rate the server completes, the
	// Capacity of a throughput run of ThroughputStreams (0 means
	// DefaultThroughputStreams) made first, and for concurrency
	// ThroughputStreams.
	Low, High         float64
	ThroughputStreams int
	// Step is the search's resolution, in requests a second or streams;
	// 0 means (High − Low) ÷ 20, at least one stream.
	Step float64
	// MaxRuns bounds the runs, the throughput run included; 0 means
	// DefaultMaxRuns.
	MaxRuns int
	// Open is the rate runs' load: its Arrival (Poisson, the zero value,
	// Constant or Gamma with Burstiness), MaxInFlight and Seed; the search
	// sets each run's Rate.
	Open loadgen.Open
	// OnResult, if set, is called with each run's result as the run ends,
	// before the result joins the others: what it adds (such as the
	// Energy the run's window drew) is kept, as with [Benchmark].OnResult.
	OnResult func(*Result)
}

// Found is the answer of a [Search].
type Found struct {
	Objective Objective `json:"objective"`
	// Axis is what was searched: rate or concurrency (a document written
	// before it was kept searched rates, and reads as AxisRate).
	Axis Axis `json:"axis,omitempty"`
	// Rate is the highest rate a run met the objective at, in requests a
	// second, of a search of rates; 0 when none did.
	Rate float64 `json:"rate"`
	// Concurrency is the most streams a run met the objective at, of a
	// search of concurrency; 0 when none did.
	Concurrency int `json:"concurrency,omitempty"`
	// Low and High are the last bracket: Low met (or is 0), High did not
	// (or is the highest level searched, which met). Step is the
	// resolution asked for.
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	Step float64 `json:"step"`
	// Below and Above index the runs of Low and High among the results'
	// runs, or are −1 when no run was made at that level.
	Below int `json:"below"`
	Above int `json:"above"`
	// Reason says how the search ended.
	Reason string `json:"reason"`
}

// level is the answer on the search's axis: Concurrency for a search of
// concurrency, else Rate.
func (f *Found) level() float64 {
	if f.Axis == AxisConcurrency {
		return float64(f.Concurrency)
	}
	return f.Rate
}

// Run runs the search and returns its results: Profile "slo", its Axis,
// the Objective, the answer in Results.Search and the runs in order. The
// caller says what it measured (Results.Server, Workload, Seed) before
// writing them. Settings that cannot work are refused before any run with
// a [*loadgen.ConfigError] naming the field. On an error, the results
// hold the runs finished so far and no answer.
func (s *Search) Run(ctx context.Context) (*Results, error) {
	if s == nil {
		return startResults("slo", Objective{}), fmt.Errorf("sweep: Run of a nil *Search: %w", fs.ErrInvalid)
	}
	res := startResults("slo", s.Objective)
	res.Axis = s.axis()
	rn := &runner{ctx: ctx, target: s.Target, obj: s.Objective, onResult: s.OnResult}
	err := s.check("Search.")
	if err == nil {
		res.Search, err = s.runOn(rn)
	}
	res.Runs = rn.runs
	res.Finished = time.Now()
	return res, err
}

// axis is the search's axis, the zero one a search of rates.
func (s *Search) axis() Axis {
	if s.Axis == 0 {
		return AxisRate
	}
	return s.Axis
}

// check reports the settings of a search that cannot work, as
// [*loadgen.ConfigError]s whose fields start with prefix.
func (s *Search) check(prefix string) error {
	var errs errlist.List
	bad := func(field, format string, args ...any) {
		errs.Add(&loadgen.ConfigError{Field: prefix + field, Reason: fmt.Sprintf(format, args...)})
	}
	if s.Target == nil {
		bad("Target", "is nil: set the function that makes each run's Generator")
	}
	if err := s.Objective.Validate(); err != nil {
		bad("Objective", "cannot work: %s", strings.TrimPrefix(err.Error(), "sweep: "))
	}
	top, most := s.High, maxRate
	if s.Axis == AxisConcurrency {
		most = maxStreams
		if top == 0 {
			top = float64(pick(s.ThroughputStreams, DefaultThroughputStreams))
		}
	}
	switch {
	case s.Axis > AxisRate:
		bad("Axis", "is %v: search AxisRate or AxisConcurrency", s.Axis)
	case !(s.Low >= 0) || s.Low > most || (s.Axis == AxisConcurrency && !whole(s.Low)):
		bad("Low", "is %g: give %s from 0 to %g", s.Low, s.axis().amount(), most)
	case !(s.High >= 0) || s.High > most || (s.Axis == AxisConcurrency && !whole(s.High)):
		bad("High", "is %g: give %s up to %g, or 0 for the default", s.High, s.axis().amount(), most)
	case s.High == 0 && top > 0 && top <= s.Low:
		bad("High", "is 0, which means ThroughputStreams (%g streams), not above Low (%g): the search's range is empty", top, s.Low)
	case top > 0 && top <= s.Low:
		bad("High", "is %g, not above Low (%g): the search's range is empty", top, s.Low)
	case !(s.Step >= 0) || math.IsInf(s.Step, 0) || (s.Axis == AxisConcurrency && !whole(s.Step)):
		bad("Step", "is %g: give %s above 0, or 0 for a twentieth of the range", s.Step, s.axis().amount())
	}
	if s.MaxRuns < 0 {
		bad("MaxRuns", "is %d: give 1 or more, or 0 for %d", s.MaxRuns, DefaultMaxRuns)
	}
	if s.ThroughputStreams < 0 || s.ThroughputStreams > maxStreams {
		bad("ThroughputStreams", "is %d: give 1 to %d streams, or 0 for %d", s.ThroughputStreams, maxStreams, DefaultThroughputStreams)
	}
	if s.axis() == AxisRate {
		errs.Add(checkOpen(prefix, s.Open))
	}
	return errs.Err()
}

// runOn runs the search with rn, its settings checked.
func (s *Search) runOn(rn *runner) (*Found, error) {
	d := s.withDefaults()
	s, axis := &d, d.Axis
	b := &bisection{rn: rn, axis: axis, lo: s.Low, hi: s.High, step: s.Step, budget: s.MaxRuns, start: len(rn.runs)}
	b.probe = func(x float64) (bool, error) {
		var load loadgen.Load = loadgen.Closed{Streams: int(x)}
		if axis == AxisRate {
			o := s.Open
			o.Rate = x
			load = o
		}
		r, err := rn.do(load, load.String())
		return r.Met, err
	}
	b.earlier = s.earlier(rn.runs)
	if b.hi == 0 {
		through, err := rn.do(loadgen.Closed{Streams: s.ThroughputStreams}, "throughput")
		b.budget--
		if err != nil {
			return nil, err
		}
		if !(through.Capacity > b.lo) {
			err := fmt.Errorf("sweep: the throughput run completed %.3g requests a second (%s), no more than the search's lowest rate (Low, %g): there is nothing to search", through.Capacity, describe(through), b.lo)
			if s := through.Summary; s.Completed == 0 && s.Canceled > 0 && s.Failed == 0 {
				err = fmt.Errorf("%w; every request was still running when the window ended: give the runs a window longer than a request takes", err)
			}
			return nil, err
		}
		b.hi, b.measured = through.Capacity, true
	}
	if b.step == 0 {
		b.step = defaultStep(axis, b.lo, b.hi)
	}
	return b.run()
}

// earlier indexes the runs of runs that a probe of the search would
// repeat, by level: closed loops of so many streams, without a ramp or
// pauses, for a search of concurrency; open loops as s.Open at some rate
// (of any seed, if s.Open has none) for a search of rates.
func (s *Search) earlier(runs []Result) map[float64]int {
	m := map[float64]int{}
	for i, r := range runs {
		switch l := r.Load.(type) {
		case loadgen.Closed:
			if s.Axis == AxisConcurrency && l.Ramp == 0 && l.Pause == nil {
				m[float64(max(l.Streams, 1))] = i
			}
		case loadgen.Open:
			o := s.Open
			o.Rate = l.Rate
			if o.Seed == 0 {
				o.Seed = l.Seed
			}
			if s.Axis == AxisRate && o == l {
				m[l.Rate] = i
			}
		}
	}
	return m
}

// withDefaults returns the search with its defaults: its Axis, ThroughputStreams
// and MaxRuns; for concurrency, High; and Step, where High is known.
func (s Search) withDefaults() Search {
	s.Axis = s.axis()
	s.ThroughputStreams = pick(s.ThroughputStreams, DefaultThroughputStreams)
	s.MaxRuns = pick(s.MaxRuns, DefaultMaxRuns)
	if s.High == 0 && s.Axis == AxisConcurrency {
		s.High = float64(s.ThroughputStreams)
	}
	if s.Step == 0 && s.High > 0 {
		s.Step = defaultStep(s.Axis, s.Low, s.High)
	}
	return s
}

// defaultStep is the step of a search of the range [lo, hi] that sets
// none: a twentieth of it, at least a stream on the concurrency axis.
func defaultStep(a Axis, lo, hi float64) float64 {
	step := (hi - lo) / defaultSteps
	if a == AxisConcurrency {
		step = max(1, math.Ceil(step))
	}
	return step
}

// bisection searches the levels of an axis between lo and hi for the
// highest whose run meets the objective, by bisection until the bracket
// is at most step wide; on the concurrency axis every level is a whole
// number of streams.
type bisection struct {
	rn           *runner
	axis         Axis
	lo, hi, step float64
	budget       int                           // runs left
	start        int                           // rn's runs before the search's
	measured     bool                          // hi is the capacity a throughput run measured
	probe        func(x float64) (bool, error) // runs level x and reports whether it met
	earlier      map[float64]int               // the runs before the search, by level, that it takes as its own
}

// run runs the search and returns its answer.
func (b *bisection) run() (*Found, error) {
	f := &Found{Objective: b.rn.obj, Axis: b.axis, Step: b.step, Below: -1, Above: -1}
	// at runs level x, or finds its run among the runs before the search,
	// and reports whether it met; last is the index of that run.
	idx := -1
	at := func(x float64) (bool, error) {
		if i, ok := b.earlier[x]; ok {
			idx = i
			return b.rn.runs[i].Met, nil
		}
		b.budget--
		met, err := b.probe(x)
		idx = len(b.rn.runs) - 1
		return met, err
	}
	last := func() int { return idx }
	lo, hi := b.lo, b.hi
	// The top of the range first: if it is met, nothing above it can be
	// asked for.
	met, err := at(hi)
	if err != nil {
		return nil, err
	}
	if met {
		f.Low, f.High, f.Below = hi, hi, last()
		f.set(hi)
		f.Reason = fmt.Sprintf("met at the top of the range, %s: the range, not the objective, bounds the %s", b.axis.level(hi), b.axis)
		if b.measured {
			f.Reason = fmt.Sprintf("met at the highest rate the server completed, %s: its capacity, not the objective, bounds the rate", b.axis.level(hi))
		}
		return f, nil
	}
	f.Above = last()
	if lo > 0 {
		if met, err = at(lo); err != nil {
			return nil, err
		}
		if !met {
			f.Low, f.High, f.Above = lo, lo, last()
			f.Reason = fmt.Sprintf("not met even at the bottom of the range, %s", b.axis.level(lo))
			return f, nil
		}
		f.Below = last()
	}
	for hi-lo > b.step && b.budget > 0 {
		mid := (lo + hi) / 2
		if b.axis == AxisConcurrency {
			mid = math.Floor(mid)
		}
		if met, err = at(mid); err != nil {
			return nil, err
		}
		if met {
			lo, f.Below = mid, last()
		} else {
			hi, f.Above = mid, last()
		}
	}
	f.Low, f.High = lo, hi
	f.set(lo)
	f.Reason = b.reason(f)
	return f, nil
}

// reason says how a search that bisected ended.
func (b *bisection) reason(f *Found) string {
	lo, hi, a := f.Low, f.High, b.axis
	switch {
	case hi-lo > b.step:
		return fmt.Sprintf("stopped after %d runs with the bracket [%.4g, %.4g] %s still wider than the step %.3g", len(b.rn.runs)-b.start, lo, hi, a.unit(), b.step)
	case f.Below < 0:
		return fmt.Sprintf("not met at any %s tried: the lowest, %s, did not meet it", a, a.level(hi))
	}
	return fmt.Sprintf("met at %s, not at %s (step %.3g)", a.level(lo), a.level(hi), b.step)
}

// answer says the search's answer on one line: "Highest rate meeting the
// objective: 3.25 req/s — met at ...", "Highest concurrency meeting the
// objective: 12 streams — ...", "No rate met the objective — ...".
func (f *Found) answer() string {
	a := f.Axis
	if a == 0 {
		a = AxisRate
	}
	if x := f.level(); x > 0 {
		return fmt.Sprintf("Highest %s meeting the objective: %s — %s.", a, a.level(x), textsafe.Line(f.Reason))
	}
	return fmt.Sprintf("No %s met the objective — %s.", a, textsafe.Line(f.Reason))
}

// set sets the answer to level x.
func (f *Found) set(x float64) {
	if f.Axis == AxisConcurrency {
		f.Concurrency = int(x)
		return
	}
	f.Rate = x
}

// maxRate bounds a search's range, as loadgen bounds an open loop's rate.
const maxRate = 1e6
