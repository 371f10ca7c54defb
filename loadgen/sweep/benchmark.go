package sweep

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/errlist"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// DefaultDuration is the window of each run of a [Benchmark] that sets
// neither Duration nor Requests.
const DefaultDuration = 10 * time.Second

// A Workload gives each run of a [Benchmark] requests of its own;
// [*github.com/llmload/llmload/loadgen/workload.Mix] is one. If it is a
// [fmt.Stringer], its String says what was sent (Results.Workload).
type Workload interface {
	// Setup gives g the Source of a new run and its Load: load, or the
	// workload's own (a trace's schedule, which also sets how long the
	// run lasts).
	Setup(g *loadgen.Generator, load loadgen.Load) error
	// Err returns the first error the runs' requests met, such as a file
	// that could not be read, once the runs are over.
	Err() error
}

// Benchmark is the serving benchmark's runner: what to send, the load,
// how long each run lasts and what it records. It runs one load, a run at
// each of a list of concurrency levels or rates, a sweep from idle to
// saturated, or a search of concurrency or rate for the highest level
// that meets an [Objective] (after the list's runs, if any), and returns
// one [Results] document.
//
// Set the fields, then call Run.
type Benchmark struct {
	// Client and Workload say what to send: the benchmark makes each
	// run's Generator from them and the settings below. A Target, instead,
	// makes each run's Generator itself (the settings below then stay
	// unset). One of the two is required.
	Client   *loadgen.Client
	Workload Workload
	Target   Target

	// Duration is each run's window after Warmup; a run of Requests sends
	// that many and waits for them all instead. Duration and Requests both
	// 0 mean a window of DefaultDuration. A trace's schedule lasts as long
	// as the trace.
	Duration, Warmup time.Duration
	Requests         int
	// Series, if above 0, keeps each run's time series at this interval
	// (Result.Series); ByModel splits each run by the model its requests
	// named (Result.Models).
	Series  time.Duration
	ByModel bool
	// OnRun, if set, is called with each run's Generator before it runs,
	// and the load the run was given: it may set the Generator's OnRequest
	// and OnWindow, or read its Progress while it runs.
	OnRun func(load loadgen.Load, g *loadgen.Generator)

	// Load, if set, is the load of a single run: a [loadgen.Closed],
	// [loadgen.Open] or [loadgen.Schedule] (a Workload replaying a trace
	// gives a schedule its arrivals). Set it alone.
	Load loadgen.Load
	// Concurrency runs a closed loop of each number of streams, in order;
	// Rates runs an open loop at each rate, in order. Set one at most.
	Concurrency []int
	Rates       []float64
	// Open is the open loop of every rate run (of Rates, Sweep or a search
	// of rates): its Arrival (Poisson, the zero value, Constant or Gamma
	// with Burstiness), MaxInFlight and Seed; each run sets its Rate.
	Open loadgen.Open
	// Sweep, if above 0, runs from idle to saturated as a [Sweep] does,
	// with this many rates between its synchronous and throughput runs.
	// Set it alone.
	Sweep int
	// ThroughputStreams is the streams of a throughput run (a sweep's, and a
	// search of rates' with High 0) and the top of a search of concurrency
	// with High 0; 0 means DefaultThroughputStreams.
	ThroughputStreams int

	// Search, if set, searches that axis, after the runs of Concurrency or
	// Rates (on the same axis), for the highest level whose runs meet
	// Objective, as a [Search] does: between Low and High, to within Step,
	// in at most MaxRuns runs (0 means DefaultMaxRuns). On the
	// concurrency axis, the three are whole streams. A level the runs
	// before it ran is not run again: the search takes that run as its
	// own.
	Search          Axis
	Low, High, Step float64
	MaxRuns         int
	// Objective, if set, checks every run (Result.Met); a search needs one.
	Objective Objective
	// OnResult, if set, is called with each run's result as the run ends,
	// before the result joins the others: what it adds (such as the
	// Energy the run's window drew) is kept.
	OnResult func(*Result)
}

// plan is a benchmark's settings, checked and with their defaults, in
// plain values.
type plan struct {
	target    Target
	workload  Workload // nil with a Target
	objective Objective
	profile   string
	axis      Axis
	loads     []loadgen.Load // the runs before a sweep or a search, in order
	sweep     *Sweep
	search    *Search
}

// Run checks the settings and applies their defaults, once, then runs the
// benchmark and returns its results: its Profile (a single load's kind,
// "trace", "concurrency" for levels, the rate runs' arrivals for rates,
// "sweep" or "slo"), Axis, Objective, the runs in order and a search's
// answer; Workload when the Workload says what it sends. The caller says
// what it measured (Results.Server, API, Seed, Notes) before writing
// them. Settings that cannot work are refused before anything is sent,
// with nil results and a [*loadgen.ConfigError] for each field, named
// "Benchmark.Field" (errors.As finds the first). Once it has started, Run
// returns the results even when a run fails or ctx ends, with the runs
// finished so far.
func (b *Benchmark) Run(ctx context.Context) (*Results, error) {
	if b == nil {
		return nil, &loadgen.ConfigError{Field: "Benchmark", Reason: "is nil"}
	}
	if ctx == nil {
		return nil, &loadgen.ConfigError{Field: "Benchmark.Run's context", Reason: "is nil: pass context.Background() or a context that ends the runs"}
	}
	p, err := b.plan()
	if err != nil {
		return nil, err
	}
	res := startResults(p.profile, p.objective)
	res.Axis = p.axis
	if s, ok := p.workload.(fmt.Stringer); ok {
		res.Workload = s.String()
	}
	rn := &runner{ctx: ctx, target: p.target, obj: p.objective, onResult: b.OnResult}
	err = p.run(rn, res)
	res.Runs = rn.runs
	res.Finished = time.Now()
	if p.workload != nil {
		if werr := p.workload.Err(); werr != nil && err == nil {
			err = werr
		}
	}
	return res, err
}

// Validate checks the settings as Run does, with the same errors, and
// runs nothing: a command checks them before it starts what the runs
// need, such as files to write.
func (b *Benchmark) Validate() error {
	if b == nil {
		return &loadgen.ConfigError{Field: "Benchmark", Reason: "is nil"}
	}
	_, err := b.plan()
	return err
}

// run runs the plan's runs with rn, and sets a search's answer in res.
func (p *plan) run(rn *runner, res *Results) error {
	for _, l := range p.loads {
		label := l.String()
		if _, ok := l.(loadgen.Schedule); ok {
			label = "trace replay"
		}
		if _, err := rn.do(l, label); err != nil {
			return err
		}
	}
	var err error
	switch {
	case p.sweep != nil:
		err = p.sweep.runOn(rn)
	case p.search != nil:
		res.Search, err = p.search.runOn(rn)
	}
	return err
}

// plan checks the benchmark's settings and makes its plan.
func (b *Benchmark) plan() (*plan, error) {
	var errs errlist.List
	bad := func(field, format string, args ...any) {
		errs.Add(&loadgen.ConfigError{Field: "Benchmark." + field, Reason: fmt.Sprintf(format, args...)})
	}
	p := &plan{objective: b.Objective}
	b.checkTarget(p, bad)
	b.checkLoads(p, bad)
	if err := b.checkObjective(); err != nil {
		bad("Objective", "%s", err)
	} else if b.Search == 0 && b.Objective.SLO != (metrics.SLO{}) {
		if err := b.Objective.Validate(); err != nil {
			bad("Objective", "cannot work: %s", strings.TrimPrefix(err.Error(), "sweep: "))
		}
	}
	if b.Search != 0 {
		p.profile = "slo"
		p.search = &Search{Target: p.target, Objective: b.Objective, Axis: b.Search, Low: b.Low, High: b.High,
			Step: b.Step, MaxRuns: b.MaxRuns, ThroughputStreams: b.ThroughputStreams, Open: b.Open}
		b.checkSearch(p, &errs)
	} else {
		for _, f := range []struct {
			name string
			set  bool
		}{{"Low", b.Low != 0}, {"High", b.High != 0}, {"Step", b.Step != 0}, {"MaxRuns", b.MaxRuns != 0}} {
			if f.set {
				bad(f.name, "is set without a Search: it bounds a search; set Search to AxisConcurrency or AxisRate")
			}
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if p.search != nil {
		d := p.search.withDefaults()
		p.search = &d
	}
	if p.sweep != nil {
		p.sweep.ThroughputStreams = pick(p.sweep.ThroughputStreams, DefaultThroughputStreams)
	}
	return p, nil
}

// checkObjective reports an objective that cannot be checked. A search
// checks its own; without one, an objective may be unset, its Quantile
// alone given.
func (b *Benchmark) checkObjective() error {
	o := b.Objective
	if b.Search != 0 || o.SLO != (metrics.SLO{}) {
		return nil
	}
	if !(o.Quantile >= 0 && o.Quantile <= 1) {
		return fmt.Errorf("has the quantile %v: give a share from 0 to 1", o.Quantile)
	}
	return nil
}

// checkSearch checks the search's own settings, as a [Search] does, named
// as the benchmark's fields.
func (b *Benchmark) checkSearch(p *plan, errs *errlist.List) {
	s := *p.search
	if s.Target == nil { // refused already
		s.Target = func(loadgen.Load) (*loadgen.Generator, error) { return nil, nil }
	}
	var found errlist.List
	found.Add(s.check("Benchmark."))
	for _, e := range found {
		errs.Add(renameSearch(e))
	}
	if b.Search == AxisConcurrency && p.axis == AxisRate || b.Search == AxisRate && p.axis == AxisConcurrency {
		errs.Add(&loadgen.ConfigError{Field: "Benchmark.Search", Reason: fmt.Sprintf("is %v, and the runs before it vary the %v: a document varies one; search %v, or run the levels apart", b.Search, p.axis, p.axis)})
	}
	p.axis = b.Search
}

// renameSearch names a search's Axis field by the benchmark's, Search.
func renameSearch(err error) error {
	if ce, ok := err.(*loadgen.ConfigError); ok && ce.Field == "Benchmark.Axis" {
		return &loadgen.ConfigError{Field: "Benchmark.Search", Reason: ce.Reason}
	}
	return err
}

// checkTarget checks what the benchmark sends and makes its target.
func (b *Benchmark) checkTarget(p *plan, bad func(field, format string, args ...any)) {
	switch {
	case b.Target != nil && (b.Client != nil || b.Workload != nil):
		bad("Target", "is set beside Client or Workload: give a Target, or a Client and a Workload")
	case b.Target != nil:
		p.target = b.Target
		for _, f := range []struct {
			name string
			set  bool
		}{{"Duration", b.Duration != 0}, {"Warmup", b.Warmup != 0}, {"Requests", b.Requests != 0}, {"Series", b.Series != 0},
			{"ByModel", b.ByModel}, {"OnRun", b.OnRun != nil}} {
			if f.set {
				bad(f.name, "is set beside a Target, which makes each run's Generator itself: set it there")
			}
		}
		return
	case b.Client == nil:
		bad("Client", "is nil: set the server's client and a Workload, or a Target")
	case b.Workload == nil:
		bad("Workload", "is nil: set what each run sends, such as a *workload.Mix, or a Target")
	default:
		if err := b.Client.Validate(); err != nil {
			bad("Client", "cannot work: %s", strings.TrimPrefix(err.Error(), "loadgen: "))
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Duration", b.Duration}, {"Warmup", b.Warmup}, {"Series", b.Series}} {
		if d.v < 0 {
			bad(d.name, "is %v: it cannot be negative", d.v)
		}
	}
	if b.Requests < 0 {
		bad("Requests", "is %d: give 1 or more, or 0 for a window of Duration", b.Requests)
	}
	p.workload = b.Workload
	p.target = b.target()
}

// target makes each run's Generator from the benchmark's Client, Workload
// and settings.
func (b *Benchmark) target() Target {
	c, w, onRun := b.Client, b.Workload, b.OnRun
	duration, warmup, requests, series, byModel := b.Duration, b.Warmup, b.Requests, b.Series, b.ByModel
	if duration == 0 && requests == 0 {
		duration = DefaultDuration
	}
	if requests > 0 {
		duration = 0
	}
	return func(load loadgen.Load) (*loadgen.Generator, error) {
		g := &loadgen.Generator{Client: c, Duration: duration, Warmup: warmup, Requests: requests}
		if series > 0 || byModel {
			g.Recorder = &metrics.Recorder{Every: series, ByModel: byModel}
		}
		if err := w.Setup(g, load); err != nil {
			return nil, err
		}
		if onRun != nil {
			onRun(load, g)
		}
		return g, nil
	}
}

// checkLoads checks the loads the benchmark runs before a sweep or a
// search, and sets the plan's loads, sweep, profile and axis.
func (b *Benchmark) checkLoads(p *plan, bad func(field, format string, args ...any)) {
	set := 0
	for _, on := range []bool{b.Load != nil, len(b.Concurrency) > 0, len(b.Rates) > 0, b.Sweep != 0} {
		if on {
			set++
		}
	}
	switch {
	case set > 1:
		bad("Load", "and Concurrency, Rates and Sweep each choose the runs: set one (Concurrency or Rates may come with a Search)")
		return
	case set == 0 && b.Search == 0:
		bad("Load", "is nil, and so are Concurrency, Rates, Sweep and Search: set the load of the runs")
		return
	case b.Search != 0 && (b.Load != nil || b.Sweep != 0):
		bad("Search", "is set beside Load or Sweep: a search runs alone or after the runs of Concurrency or Rates")
		return
	}
	if b.Open.Rate != 0 {
		bad("Open.Rate", "is %g: each rate run sets its own; give the rates in Rates", b.Open.Rate)
	}
	if (b.ThroughputStreams < 0 || b.ThroughputStreams > maxStreams) && b.Search == 0 { // a search checks it
		bad("ThroughputStreams", "is %d: give 1 to %d streams, or 0 for %d", b.ThroughputStreams, maxStreams, DefaultThroughputStreams)
	}
	switch {
	case b.Load != nil:
		b.checkLoad(p, bad)
	case len(b.Concurrency) > 0:
		p.profile, p.axis = "concurrency", AxisConcurrency
		for i, n := range b.Concurrency {
			if n < 1 || n > maxStreams {
				bad(fmt.Sprintf("Concurrency[%d]", i), "is %d: give 1 to %d streams", n, maxStreams)
			}
			p.loads = append(p.loads, loadgen.Closed{Streams: n})
		}
	case len(b.Rates) > 0:
		b.checkRates(p, bad)
	case b.Sweep != 0:
		p.profile, p.axis = "sweep", AxisRate
		if b.Sweep < 0 || b.Sweep > maxSweepRates {
			bad("Sweep", "is %d: give 1 to %d rates between the sweep's ends", b.Sweep, maxSweepRates)
		}
		if ce, ok := checkOpen("Benchmark.", b.Open).(*loadgen.ConfigError); ok {
			bad("Open", "%s", ce.Reason)
		}
		p.sweep = &Sweep{Target: p.target, Rates: b.Sweep, ThroughputStreams: b.ThroughputStreams, Open: b.Open, Objective: b.Objective}
	}
}

// maxSweepRates bounds a sweep's rates, each a run.
const maxSweepRates = 1000

// checkLoad checks the load of a single run.
func (b *Benchmark) checkLoad(p *plan, bad func(field, format string, args ...any)) {
	p.loads, p.axis = []loadgen.Load{b.Load}, axisOf(b.Load)
	switch l := b.Load.(type) {
	case loadgen.Closed:
		p.profile = "concurrency"
		if l.Streams > maxStreams {
			bad("Load", "runs %d streams, above %d, the most one process runs with honest timing", l.Streams, maxStreams)
		}
	case loadgen.Open:
		p.profile = l.Arrival.String()
	case loadgen.Schedule:
		// The Workload's trace gives its arrivals; a Target's, its own.
		p.profile = "trace"
		if l.MaxInFlight < 0 {
			bad("Load", "caps the requests in flight at %d: set 1 or more, or 0 for %d", l.MaxInFlight, loadgen.DefaultMaxInFlight)
		}
		return
	default:
		bad("Load", "is a %T: give a loadgen.Closed, Open or Schedule", b.Load)
		return
	}
	if err := b.Load.Validate(); err != nil {
		bad("Load", "cannot work: %s", strings.TrimPrefix(err.Error(), "loadgen: "))
	}
}

// checkRates checks the rates of Rates and makes their runs.
func (b *Benchmark) checkRates(p *plan, bad func(field, format string, args ...any)) {
	p.profile, p.axis = b.Open.Arrival.String(), AxisRate
	if ce, ok := checkOpen("Benchmark.", b.Open).(*loadgen.ConfigError); ok && b.Search == 0 { // a search checks it
		bad("Open", "%s", ce.Reason)
	}
	for i, r := range b.Rates {
		if !(r > 0) || r > maxRate || math.IsInf(r, 0) {
			bad(fmt.Sprintf("Rates[%d]", i), "is %g: give requests a second above 0 and at most %g", r, float64(maxRate))
		}
		o := b.Open
		o.Rate = r
		p.loads = append(p.loads, o)
	}
}
