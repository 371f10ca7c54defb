package sweep

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"time"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// Defaults of a [Sweep] and a [Search].
const (
	// DefaultRates is how many rates a sweep runs between its synchronous
	// and its throughput runs.
	DefaultRates = 8
	// DefaultThroughput is the streams of a throughput run: more than
	// most servers run at once (vLLM's --max-num-seqs is 256 by default
	// on small GPUs, 1024 on large ones), so that the server, not the
	// client, is the limit.
	DefaultThroughput = 512
	// DefaultMaxRuns bounds the runs of a search.
	DefaultMaxRuns = 12
	// defaultSteps is a search's resolution when it sets no Step: its
	// range in this many steps.
	defaultSteps = 20
)

// Sweep runs a server from idle to saturated, as guidellm's sweep does:
// one synchronous run (one request at a time), one throughput run (as
// many at once as Throughput allows), then Rates open-loop runs at rates
// evenly spaced between the two runs' capacities (see
// [Result].Capacity).
type Sweep struct {
	// Target makes each run's Generator; required.
	Target Target
	// Rates is how many rates lie between; 0 means DefaultRates.
	Rates int
	// Throughput is the throughput run's streams; 0 means
	// DefaultThroughput.
	Throughput int
	// Open is the rate runs' load: its Arrival (Poisson, the zero value,
	// Constant or Gamma with Burstiness), MaxInFlight and Seed; the sweep
	// sets each run's Rate.
	Open loadgen.Open
	// Objective, if set, checks every run (see [Result.Met]).
	Objective Objective
	// OnResult, if set, is called after each run.
	OnResult func(Result)
}

// Run runs the sweep and returns its results: Profile "sweep", the
// Objective if one was set, and the runs in order, the synchronous one, the
// throughput one, then the rates from the lowest. The caller says what it
// measured (Results.Server, Workload, Seed) before writing them. On an
// error, the results hold the runs finished so far.
func (s *Sweep) Run(ctx context.Context) (*Results, error) {
	if s == nil {
		return startResults("sweep", Objective{}), fmt.Errorf("sweep: Run of a nil *Sweep: %w", fs.ErrInvalid)
	}
	res := startResults("sweep", s.Objective)
	var err error
	res.Runs, err = s.run(ctx)
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

func (s *Sweep) run(ctx context.Context) ([]Result, error) {
	if s.Target == nil {
		return nil, errors.New("sweep: Sweep.Target is nil")
	}
	if err := checkOpen(s.Open); err != nil {
		return nil, err
	}
	var runs []Result
	do := func(load loadgen.Load, label string) (Result, error) {
		r, err := Run(ctx, s.Target, load, label, s.Objective)
		runs = append(runs, r)
		if s.OnResult != nil {
			s.OnResult(r)
		}
		return r, err
	}
	sync, err := do(loadgen.Closed{Streams: 1}, "synchronous")
	if err != nil {
		return runs, err
	}
	through, err := do(loadgen.Closed{Streams: pick(s.Throughput, DefaultThroughput)}, "throughput")
	if err != nil {
		return runs, err
	}
	lo, hi := min(sync.Capacity, through.Capacity), max(sync.Capacity, through.Capacity)
	if !(lo > 0) {
		return runs, fmt.Errorf("sweep: the synchronous run completed no request (%s): there is no rate to sweep", describe(sync))
	}
	k := pick(s.Rates, DefaultRates)
	for i := 1; i <= k; i++ {
		rate := lo + (hi-lo)*float64(i)/float64(k+1)
		load := s.Open
		load.Rate = rate
		if _, err := do(load, load.String()); err != nil {
			return runs, err
		}
	}
	return runs, nil
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

// checkOpen checks the open loop of a sweep's or a search's rate runs,
// at any rate.
func checkOpen(o loadgen.Open) error {
	o.Rate = 1
	if err := o.Validate(); err != nil {
		return fmt.Errorf("sweep: the rate runs' load: %w", err)
	}
	return nil
}

// Search finds the highest request rate whose runs meet an [Objective],
// by bisection between Low and High until the two are at most Step apart.
// It assumes a rate that meets the objective is met by every lower rate.
// The answer is the highest rate a run met, with the runs that bracket
// it: the one at that rate, and the one a Step or less above it that did
// not meet it.
type Search struct {
	// Target makes each run's Generator; required. Give its runs a number
	// of Requests, or a Duration long enough to reach a steady state: a
	// short run at a rate the server cannot sustain may end before its
	// queue shows.
	Target Target
	// Objective is what a rate must meet; required.
	Objective Objective
	// Low and High bound the rates searched. Low 0 starts from nothing;
	// High 0 first measures the highest rate the server completes, the
	// Capacity of a throughput run of Throughput streams (0 means
	// DefaultThroughput), and searches below it.
	Low, High  float64
	Throughput int
	// Step is the search's resolution, in requests a second; 0 means
	// (High − Low) ÷ 20.
	Step float64
	// MaxRuns bounds the runs, the throughput run included; 0 means
	// DefaultMaxRuns.
	MaxRuns int
	// Open is the runs' load: its Arrival (Poisson, the zero value,
	// Constant or Gamma with Burstiness), MaxInFlight and Seed; the search
	// sets each run's Rate.
	Open loadgen.Open
	// OnResult, if set, is called after each run.
	OnResult func(Result)
}

// Found is the answer of a [Search].
type Found struct {
	Objective Objective `json:"objective"`
	// Rate is the highest rate a run met the objective at, in requests a
	// second; 0 when none did.
	Rate float64 `json:"rate"`
	// Low and High are the last bracket: Low met (or is 0), High did not
	// (or is the highest rate searched, which met). Step is the
	// resolution asked for.
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	Step float64 `json:"step"`
	// Below and Above index the runs of Low and High among the search's
	// runs, or are −1 when no run was made at that rate.
	Below int `json:"below"`
	Above int `json:"above"`
	// Reason says how the search ended.
	Reason string `json:"reason"`
}

// Run runs the search and returns its results: Profile "slo", the
// Objective, the answer in Results.Search and the runs in order. The
// caller says what it measured (Results.Server, Workload, Seed) before
// writing them. On an error, the results hold the runs finished so far
// and no answer.
func (s *Search) Run(ctx context.Context) (*Results, error) {
	if s == nil {
		return startResults("slo", Objective{}), fmt.Errorf("sweep: Run of a nil *Search: %w", fs.ErrInvalid)
	}
	res := startResults("slo", s.Objective)
	var err error
	res.Search, res.Runs, err = s.run(ctx)
	res.Finished = time.Now()
	return res, err
}

func (s *Search) run(ctx context.Context) (*Found, []Result, error) {
	switch {
	case s.Target == nil:
		return nil, nil, errors.New("sweep: Search.Target is nil")
	case !(s.Low >= 0) || !(s.High >= 0) || (s.High > 0 && s.High <= s.Low) || s.High > maxRate:
		return nil, nil, fmt.Errorf("sweep: the search's range [%g, %g] is empty: set 0 ≤ Low < High, or High 0 to measure it", s.Low, s.High)
	case !(s.Step >= 0) || math.IsInf(s.Step, 0):
		return nil, nil, fmt.Errorf("sweep: Search.Step %g is not a rate above 0", s.Step)
	}
	if err := s.Objective.Validate(); err != nil {
		return nil, nil, err
	}
	if err := checkOpen(s.Open); err != nil {
		return nil, nil, err
	}
	f := &Found{Objective: s.Objective, Below: -1, Above: -1}
	var runs []Result
	budget := pick(s.MaxRuns, DefaultMaxRuns)
	do := func(load loadgen.Load, label string) (Result, error) {
		r, err := Run(ctx, s.Target, load, label, s.Objective)
		runs = append(runs, r)
		budget--
		if s.OnResult != nil {
			s.OnResult(r)
		}
		return r, err
	}
	probe := func(rate float64) (bool, error) {
		load := s.Open
		load.Rate = rate
		r, err := do(load, load.String())
		return r.Met, err
	}

	lo, hi := s.Low, s.High
	if hi == 0 {
		through, err := do(loadgen.Closed{Streams: pick(s.Throughput, DefaultThroughput)}, "throughput")
		if err != nil {
			return nil, runs, err
		}
		if !(through.Capacity > lo) {
			err := fmt.Errorf("sweep: the throughput run completed %.3g requests a second (%s), no more than the search's lowest rate (Low, %g): there is nothing to search", through.Capacity, describe(through), lo)
			if s := through.Summary; s.Completed == 0 && s.Canceled > 0 && s.Failed == 0 {
				err = fmt.Errorf("%w; every request was still running when the window ended: give the runs a window longer than a request takes", err)
			}
			return nil, runs, err
		}
		hi = through.Capacity
	}
	f.Step = s.Step
	if f.Step == 0 {
		f.Step = (hi - lo) / defaultSteps
	}
	// The top of the range first: if it is met, nothing above it can be
	// asked for.
	met, err := probe(hi)
	if err != nil {
		return nil, runs, err
	}
	if met {
		f.Rate, f.Low, f.High, f.Below = hi, hi, hi, len(runs)-1
		f.Reason = fmt.Sprintf("met at the top of the range, %.4g req/s: the range, not the objective, bounds the rate", hi)
		if s.High == 0 {
			f.Reason = fmt.Sprintf("met at the highest rate the server completed, %.4g req/s: its capacity, not the objective, bounds the rate", hi)
		}
		return f, runs, nil
	}
	f.Above = len(runs) - 1
	if lo > 0 {
		if met, err = probe(lo); err != nil {
			return nil, runs, err
		}
		if !met {
			f.Low, f.High, f.Above = lo, lo, len(runs)-1
			f.Reason = fmt.Sprintf("not met even at the bottom of the range, %.4g req/s", lo)
			return f, runs, nil
		}
		f.Below = len(runs) - 1
	}
	for hi-lo > f.Step && budget > 0 {
		mid := (lo + hi) / 2
		if met, err = probe(mid); err != nil {
			return nil, runs, err
		}
		if met {
			lo, f.Below = mid, len(runs)-1
		} else {
			hi, f.Above = mid, len(runs)-1
		}
	}
	f.Rate, f.Low, f.High = lo, lo, hi
	switch {
	case hi-lo > f.Step:
		f.Reason = fmt.Sprintf("stopped after %d runs with the bracket [%.4g, %.4g] req/s still wider than the step %.3g", len(runs), lo, hi, f.Step)
	case f.Below < 0:
		f.Reason = fmt.Sprintf("not met at any rate tried: the lowest, %.4g req/s, did not meet it", hi)
	default:
		f.Reason = fmt.Sprintf("met at %.4g req/s, not at %.4g req/s (step %.3g)", lo, hi, f.Step)
	}
	return f, runs, nil
}

// maxRate bounds a search's range, as loadgen bounds an open loop's rate.
const maxRate = 1e6
