package loadgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/llmload/llmload/internal/enumtext"
)

// A Load is the shape of a run's load: how its requests are launched. It is
// one of three values, each with only the settings that apply to it:
//
//   - [Closed]: a closed loop of Streams workers, each sending its next
//     request as its last one ends, with an optional Ramp over which they
//     start and an optional Pause (a user's think time) before each request;
//   - [Open]: an open loop whose requests arrive at a Rate, evenly spaced or
//     at random (Poisson or gamma), whatever the server does, at most
//     MaxInFlight at once;
//   - [Schedule]: an open loop whose requests arrive at the times a function
//     gives, such as a trace's.
//
// A [Generator] runs the Load it is given; a nil Load is a closed loop of
// one stream. String says what the load is, in the words reports use:
// "concurrency 8", "poisson 4 req/s", "gamma 0.5, 4 req/s", "scheduled
// arrivals". Validate reports settings that cannot work; a Generator calls
// it before it sends anything.
type Load interface {
	String() string
	Validate() error
	// shape returns the launch plan of the load; only this package's
	// types implement it.
	shape() shape
}

// shape is how a run launches its requests: what the three kinds of Load
// tell the runner.
type shape struct {
	open  bool
	slots int // closed-loop workers, or the open loop's cap on requests in flight
	ramp  time.Duration
	pause func(worker, seq int) time.Duration
	// due returns when each arrival of an open loop is due, from start,
	// or false when there are no more. seed is the run's seed, not 0.
	due func(start time.Time, seed uint64) func(seq int) (time.Time, bool)
	// random reports that the arrivals use the seed.
	random bool
}

// DefaultMaxInFlight caps the requests in flight of an open loop that sets
// no MaxInFlight.
const DefaultMaxInFlight = 1024

// maxRate bounds an open loop's rate: beyond it, arrivals are closer than
// the timers that space them.
const maxRate = 1e6

// Closed is a closed loop: Streams workers, each keeping one streaming
// request in flight, a finished request replaced at once.
type Closed struct {
	// Streams is the number of workers; 0 means 1.
	Streams int
	// Ramp spreads the workers' starts evenly over this time; 0 starts
	// them together.
	Ramp time.Duration
	// Pause, if set, is how long worker waits before sending its request
	// seq: a user's think time between the turns of a conversation. It is
	// called from the worker's goroutine.
	Pause func(worker, seq int) time.Duration
}

// String says "concurrency N", with its ramp and think time if set.
func (c Closed) String() string {
	s := "concurrency " + strconv.Itoa(max(c.Streams, 1))
	if c.Ramp > 0 {
		s += ", ramp " + c.Ramp.String()
	}
	if c.Pause != nil {
		s += ", with think time"
	}
	return s
}

// Validate reports a negative Streams or Ramp as a [*ConfigError].
func (c Closed) Validate() error {
	var errs configErrors
	if c.Streams < 0 {
		errs.add("Closed.Streams", "is %d: set 1 or more (0 means 1)", c.Streams)
	}
	if c.Ramp < 0 {
		errs.add("Closed.Ramp", "is %v: it cannot be negative", c.Ramp)
	}
	return errs.err()
}

func (c Closed) shape() shape {
	return shape{slots: max(c.Streams, 1), ramp: c.Ramp, pause: c.Pause}
}

// Arrival is how the requests of an [Open] load are spaced.
type Arrival uint8

// The arrival processes of an open loop.
const (
	// Poisson, the zero Arrival: requests arrive at random, independently,
	// Rate a second on average (exponential gaps).
	Poisson Arrival = iota
	// Constant: requests arrive evenly spaced, 1/Rate apart, the first at
	// once.
	Constant
	// Gamma: the gaps between arrivals are gamma-distributed with mean
	// 1/Rate and shape Burstiness: below 1 burstier than Poisson, above 1
	// more regular.
	Gamma
)

var arrivalNames = [...]string{"poisson", "constant", "gamma"}

// String returns "poisson", "constant" or "gamma".
func (a Arrival) String() string { return enumtext.Name(arrivalNames[:], a, "Arrival") }

// UnmarshalText reads an arrival's name; "rate" is Constant.
func (a *Arrival) UnmarshalText(b []byte) error {
	if string(b) == "rate" {
		*a = Constant
		return nil
	}
	for i, n := range arrivalNames {
		if string(b) == n {
			*a = Arrival(i)
			return nil
		}
	}
	return &ConfigError{Field: "Arrival", Reason: fmt.Sprintf("%q is not an arrival process: use constant, poisson or gamma", b)}
}

// Open is an open loop: requests arrive at Rate a second, spaced as
// Arrival says, whatever the server does. An arrival that finds
// MaxInFlight requests in flight waits for one to end; one that starts
// more than 2 ms after it was due is counted late. Arrivals are
// never moved: the next one is due when it was, however late the last one
// started.
type Open struct {
	// Rate is the requests a second; required.
	Rate float64
	// Arrival is the arrival process: Poisson (the zero value), Constant
	// or Gamma.
	Arrival Arrival
	// Burstiness is a Gamma process's shape; only with Gamma.
	Burstiness float64
	// MaxInFlight caps the requests in flight; 0 means DefaultMaxInFlight.
	MaxInFlight int
	// Seed makes random arrivals reproducible; 0 picks a fresh one, which
	// the run reports (see [Run].Seed) so that it can be given again.
	Seed uint64
}

// String says "constant 3.2 req/s", "poisson 3.2 req/s" or "gamma 0.5,
// 3.2 req/s", with its cap on requests in flight if set.
func (o Open) String() string {
	rate := strconv.FormatFloat(o.Rate, 'f', -1, 64)
	if o.Rate >= 0.1 {
		rate = strconv.FormatFloat(o.Rate, 'g', 4, 64)
	}
	s := fmt.Sprintf("%s %s req/s", o.Arrival, rate)
	if o.Arrival == Gamma {
		s = fmt.Sprintf("gamma %g, %s req/s", o.Burstiness, rate)
	}
	if o.MaxInFlight > 0 {
		s += fmt.Sprintf(", at most %d in flight", o.MaxInFlight)
	}
	return s
}

// Validate reports a rate that is not above 0, an unknown Arrival, a
// Burstiness without Gamma (or a Gamma without one), or a negative
// MaxInFlight, as [*ConfigError]s.
func (o Open) Validate() error {
	var errs configErrors
	if !(o.Rate > 0) || o.Rate > maxRate {
		errs.add("Open.Rate", "is %v: set requests per second above 0 and at most %g", o.Rate, float64(maxRate))
	}
	switch o.Arrival {
	case Poisson, Constant:
		if o.Burstiness != 0 {
			errs.add("Open.Burstiness", "is %v with %v arrivals: it is the shape of Gamma arrivals; set Arrival to Gamma, or drop it", o.Burstiness, o.Arrival)
		}
	case Gamma:
		if !(o.Burstiness > 0 && o.Burstiness <= 1e6) {
			errs.add("Open.Burstiness", "is %v: Gamma arrivals need a shape above 0 and at most 10^6 (1 is a Poisson process, below 1 burstier)", o.Burstiness)
		}
	default:
		errs.add("Open.Arrival", "is %v: use Poisson, Constant or Gamma", o.Arrival)
	}
	if o.MaxInFlight < 0 {
		errs.add("Open.MaxInFlight", "is %d: set 1 or more (0 means %d)", o.MaxInFlight, DefaultMaxInFlight)
	}
	return errs.err()
}

func (o Open) shape() shape {
	sh := shape{open: true, slots: capOf(o.MaxInFlight), random: o.Arrival != Constant}
	if o.Arrival == Constant {
		gap := float64(time.Second) / o.Rate
		sh.due = func(start time.Time, _ uint64) func(int) (time.Time, bool) {
			return func(seq int) (time.Time, bool) {
				return start.Add(time.Duration(float64(seq) * gap)), true
			}
		}
		return sh
	}
	shapeK := 1.0
	if o.Arrival == Gamma {
		shapeK = o.Burstiness
	}
	sh.due = func(start time.Time, seed uint64) func(int) (time.Time, bool) {
		gaps := newArrivals(o.Rate, shapeK, seed)
		next := start
		return func(int) (time.Time, bool) {
			next = next.Add(gaps.next())
			return next, true
		}
	}
	return sh
}

// Schedule is an open loop whose requests arrive at the times Due gives,
// such as a trace's, at most MaxInFlight at once. The run ends once Due
// reports no more arrivals and the requests in flight have ended.
type Schedule struct {
	// Due returns when arrival seq is due, from the start of the run, or
	// false when there are no more. It is called in order of seq, from
	// one goroutine, before arrival seq; required.
	Due func(seq int) (time.Duration, bool)
	// MaxInFlight caps the requests in flight; 0 means DefaultMaxInFlight.
	MaxInFlight int
}

// String says "scheduled arrivals", with its cap on requests in flight if
// set.
func (s Schedule) String() string {
	if s.MaxInFlight > 0 {
		return fmt.Sprintf("scheduled arrivals, at most %d in flight", s.MaxInFlight)
	}
	return "scheduled arrivals"
}

// Validate reports a missing Due or a negative MaxInFlight as
// [*ConfigError]s.
func (s Schedule) Validate() error {
	var errs configErrors
	if s.Due == nil {
		errs.add("Schedule.Due", "is nil: set the function that says when each arrival is due, such as a workload.Feed's")
	}
	if s.MaxInFlight < 0 {
		errs.add("Schedule.MaxInFlight", "is %d: set 1 or more (0 means %d)", s.MaxInFlight, DefaultMaxInFlight)
	}
	return errs.err()
}

func (s Schedule) shape() shape {
	return shape{open: true, slots: capOf(s.MaxInFlight), due: func(start time.Time, _ uint64) func(int) (time.Time, bool) {
		return func(seq int) (time.Time, bool) {
			d, ok := s.Due(seq)
			return start.Add(d), ok
		}
	}}
}

func capOf(n int) int {
	if n > 0 {
		return n
	}
	return DefaultMaxInFlight
}

// loadOf returns g's load: a nil Load is a closed loop of one stream.
func (g *Generator) loadOf() Load {
	if g.Load == nil {
		return Closed{}
	}
	return g.Load
}

// arrivals draws the gaps between open-loop arrivals: gamma-distributed with
// mean 1/rate and shape k (k = 1 is exponential: a Poisson process).
type arrivals struct {
	rng   *rand.Rand
	mean  float64 // seconds
	shape float64
}

func newArrivals(rate, shape float64, seed uint64) *arrivals {
	if shape <= 0 {
		shape = 1
	}
	return &arrivals{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), mean: 1 / rate, shape: shape}
}

// next returns the gap to the next arrival.
func (a *arrivals) next() time.Duration {
	var x float64
	if a.shape == 1 {
		x = a.rng.ExpFloat64()
	} else {
		x = gamma(a.rng, a.shape) / a.shape // mean 1
	}
	return time.Duration(x * a.mean * float64(time.Second))
}

// gamma draws from Gamma(k, 1) by Marsaglia and Tsang's method, boosted for
// k < 1.
func gamma(rng *rand.Rand, k float64) float64 {
	if k < 1 {
		return gamma(rng, k+1) * math.Pow(rng.Float64(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
