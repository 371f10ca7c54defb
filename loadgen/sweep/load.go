package sweep

import (
	"fmt"
	"strconv"
	"time"

	"github.com/llmload/llmload/loadgen"
)

// Kind is how the requests of a run arrive.
type Kind uint8

// The kinds of load.
const (
	// KindUnknown is the zero Kind: not set.
	KindUnknown Kind = iota
	// Concurrency is a closed loop: Concurrency streams, each sending its
	// next request as its last one ends.
	Concurrency
	// Constant is an open loop whose requests arrive evenly spaced, at
	// Rate a second.
	Constant
	// Poisson is an open loop whose requests arrive at random, at Rate a
	// second on average: a Poisson process.
	Poisson
	// Gamma is an open loop whose gaps between arrivals are
	// gamma-distributed with shape Burstiness: below 1 burstier than
	// Poisson, above 1 more regular.
	Gamma
	// Schedule is an open loop whose requests arrive at the times the
	// Generator's Arrivals gives, such as a trace's: the Target sets them.
	Schedule
)

var kindNames = [...]string{"", "concurrency", "constant", "poisson", "gamma", "schedule"}

// String returns the kind's name: "concurrency", "constant", "poisson",
// "gamma" or "schedule"; KindUnknown is "".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// MarshalText implements [encoding.TextMarshaler].
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind's name; "rate" is Constant.
func (k *Kind) UnmarshalText(b []byte) error {
	if string(b) == "rate" {
		*k = Constant
		return nil
	}
	for i, n := range kindNames {
		if string(b) == n {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("sweep: unknown kind of load %q (want concurrency, constant, poisson, gamma or schedule)", b)
}

// Load is how the requests of one run arrive.
type Load struct {
	Kind Kind `json:"kind"`
	// Concurrency is a closed loop's streams.
	Concurrency int `json:"concurrency,omitempty"`
	// Rate is an open loop's requests a second.
	Rate float64 `json:"rate,omitempty"`
	// Burstiness is a Gamma load's shape.
	Burstiness float64 `json:"burstiness,omitempty"`
}

// String describes the load: "concurrency 8", "constant 3.2 req/s",
// "poisson 3.2 req/s", "gamma 0.5, 3.2 req/s".
func (l Load) String() string {
	rate := strconv.FormatFloat(l.Rate, 'f', -1, 64)
	if l.Rate >= 0.1 {
		rate = strconv.FormatFloat(l.Rate, 'g', 4, 64)
	}
	switch l.Kind {
	case Concurrency:
		return fmt.Sprintf("concurrency %d", l.Concurrency)
	case Constant, Poisson:
		return fmt.Sprintf("%s %s req/s", l.Kind, rate)
	case Gamma:
		return fmt.Sprintf("gamma %g, %s req/s", l.Burstiness, rate)
	case Schedule:
		return "scheduled arrivals"
	}
	return "no load"
}

// Validate reports a load that cannot run.
func (l Load) Validate() error {
	switch l.Kind {
	case Concurrency:
		if l.Concurrency < 1 {
			return fmt.Errorf("sweep: %v: a closed loop needs 1 stream or more", l)
		}
		return nil
	case Constant, Poisson, Gamma:
		if !(l.Rate > 0) || l.Rate > maxRate {
			return fmt.Errorf("sweep: %v: the rate must be above 0 and at most %g a second", l, float64(maxRate))
		}
		if l.Kind == Gamma && !(l.Burstiness > 0 && l.Burstiness <= 1e6) {
			return fmt.Errorf("sweep: %v: a gamma load's burstiness must be above 0 and at most 10^6", l)
		}
		return nil
	case Schedule:
		return nil
	}
	return fmt.Errorf("sweep: a load of kind %v: set Concurrency, Constant, Poisson, Gamma or Schedule", l.Kind)
}

// maxRate bounds an open loop's rate: beyond it, arrivals are closer than
// the timers that space them.
const maxRate = 1e6

// Apply sets g's load: a closed loop's Concurrency, or an open loop's
// Rate and Burstiness or, for a Constant load, its Arrivals. The other
// load settings of g are cleared, but for a Schedule, whose Arrivals g
// keeps.
func (l Load) Apply(g *loadgen.Generator) {
	g.Concurrency, g.Rate, g.Burstiness = 0, 0, 0
	if l.Kind != Schedule {
		g.Arrivals = nil
	}
	switch l.Kind {
	case Concurrency:
		g.Concurrency = l.Concurrency
	case Constant:
		gap := float64(time.Second) / l.Rate
		g.Arrivals = func(seq int) (time.Duration, bool) {
			return time.Duration(float64(seq) * gap), true
		}
	case Poisson:
		g.Rate = l.Rate
	case Gamma:
		g.Rate, g.Burstiness = l.Rate, l.Burstiness
	}
}
