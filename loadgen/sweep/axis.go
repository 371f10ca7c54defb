package sweep

import (
	"fmt"
	"math"

	"github.com/llmload/llmload/loadgen"
)

// Axis is what a benchmark's loads vary along: the streams of a closed
// loop or the rate of an open one. Its zero value means not set.
type Axis uint8

// The axes.
const (
	// AxisConcurrency varies the streams of a closed loop: requests in
	// flight at once, as vLLM's --max-num-seqs and a replica count are
	// sized.
	AxisConcurrency Axis = iota + 1
	// AxisRate varies the requests a second of an open loop.
	AxisRate
)

// String returns "concurrency", "rate", or "" for the zero Axis.
func (a Axis) String() string {
	switch a {
	case AxisConcurrency:
		return "concurrency"
	case AxisRate:
		return "rate"
	case 0:
		return ""
	}
	return fmt.Sprintf("Axis(%d)", uint8(a))
}

// MarshalText writes the axis as String does; an unknown one is an error.
func (a Axis) MarshalText() ([]byte, error) {
	if a > AxisRate {
		return nil, fmt.Errorf("sweep: unknown axis %d", uint8(a))
	}
	return []byte(a.String()), nil
}

// UnmarshalText reads "concurrency", "rate" or "".
func (a *Axis) UnmarshalText(b []byte) error {
	for _, v := range []Axis{0, AxisConcurrency, AxisRate} {
		if string(b) == v.String() {
			*a = v
			return nil
		}
	}
	return fmt.Errorf("sweep: unknown axis %q: want concurrency or rate", b)
}

// unit names a level of the axis: "streams" or "req/s".
func (a Axis) unit() string {
	if a == AxisConcurrency {
		return "streams"
	}
	return "req/s"
}

// amount says what a level of the axis is: "a whole number of streams",
// "a rate in requests a second".
func (a Axis) amount() string {
	if a == AxisConcurrency {
		return "a whole number of streams"
	}
	return "a rate in requests a second"
}

// level formats a level of the axis: "12 streams", "3.25 req/s".
func (a Axis) level(x float64) string {
	switch {
	case a == AxisConcurrency && x == 1:
		return "1 stream"
	case a == AxisConcurrency:
		return fmt.Sprintf("%.0f streams", x)
	}
	return fmt.Sprintf("%.4g req/s", x)
}

// axisOf is the axis a load lies on: concurrency for a closed loop, rate
// for an open one, none for a schedule.
func axisOf(l loadgen.Load) Axis {
	switch l.(type) {
	case loadgen.Closed:
		return AxisConcurrency
	case loadgen.Open:
		return AxisRate
	}
	return 0
}

// maxStreams bounds a closed loop's streams, as
// [github.com/llmload/llmload/matrix.MaxStreams] does: the most one
// process runs with honest timing.
const maxStreams = 16384

// whole reports that v is a whole number.
func whole(v float64) bool { return v == math.Trunc(v) && !math.IsInf(v, 0) }
