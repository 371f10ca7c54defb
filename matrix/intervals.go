package matrix

import (
	"math"
	"time"
)

// Interval is a range that holds a run's figure with about 95%
// confidence. A cell's requests are a sample: their median time to first
// token, say, would come out otherwise if the same server were measured
// again. For a median of n requests the interval runs between the
// quantiles 0.5 ± 0.98 ÷ √n of their distribution (the ranks that bound a
// median with 95% confidence, whatever the distribution), read from its
// 50th, 90th and 99th percentiles and mirrored below the median; a TTFT's
// spans at least two of the server's decode steps and the timers'
// resolution (250 µs, or the client's p99 timer lag) on either side,
// which move every request of a run alike. Rates take
// their time between tokens' interval, or, with fewer than three
// requests, that of the gaps between their tokens; the total tok/s also
// spans a TTFT at each end of the window, which may fall between two
// requests of every stream.
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// minIntervalRequests is the fewest requests, or gaps between tokens,
// whose spread gives an interval.
const minIntervalRequests = 3

// medianInterval is the interval of the median of n samples with
// quantiles q, or nil when n is too small or q makes no sense.
func medianInterval(q Quantiles, n int) *Interval {
	finite := !math.IsInf(q.P99, 0) && !math.IsNaN(q.P99)
	if n < minIntervalRequests || !(q.P50 > 0) || !(q.P90 >= q.P50) || !(q.P99 >= q.P90) || !finite {
		return nil
	}
	up := 0.5 + 0.98/math.Sqrt(float64(n))
	var high float64
	switch {
	case up <= 0.9:
		high = q.P50 + (q.P90-q.P50)*(up-0.5)/0.4
	case up <= 0.99:
		high = q.P90 + (q.P99-q.P90)*(up-0.9)/0.09
	default:
		high = q.P99
	}
	return &Interval{Low: max(2*q.P50-high, 0), High: high}
}

// scaled is in scaled to v, relative to the figure it was made for:
// inverse turns an interval of times into one of rates.
func scaled(in *Interval, of, v float64, inverse bool) *Interval {
	if in == nil || !(of > 0) || !(v > 0) {
		return nil
	}
	lo, hi := in.Low/of, in.High/of
	if inverse {
		if lo <= 0 {
			return nil
		}
		lo, hi = 1/hi, 1/lo
	}
	return &Interval{Low: v * lo, High: v * hi}
}

// timingResolution is how far apart two runs of one server may put the
// same latency for reasons that have nothing to do with the server's
// speed: timers and scheduling on a shared machine. A TTFT's interval is
// at least this wide on either side, or as wide as the client's timers
// were late in the run (its p99 lag), in the server's time (× the
// simulator's speed).
const timingResolution = 250 * time.Microsecond

// ttftSteps is how many of the server's decode steps a TTFT's interval
// spans at least on either side. A request's first token waits for the
// step in progress and may share its step with others' prefill, so where
// a run's requests fall among the server's steps moves its TTFT by a step
// or two, the same for every request of the run: two runs of the
// simulator put the median TTFT of one stream at 4K 2.5 steps apart while
// each run's own requests were within a step of each other.
const ttftSteps = 2

// Intervals are the intervals of a measured cell's figures, for a run at
// the simulator's speed (0 or 1 for a real server): total tok/s,
// per-request tok/s, time to first token and time between tokens, each
// nil where its noise cannot be told (too few requests). A cell with no
// request counts (results made elsewhere), or one the client may have
// limited, has none.
func (c *Cell) Intervals(speed float64) (total, perRequest, ttft, tbt *Interval) {
	m := c.Measurement
	if m == nil || c.Requests <= 0 || m.ClientLimited {
		return nil, nil, nil, nil
	}
	n := c.Requests - c.Errors
	ttft = medianInterval(m.TTFT, n)
	if ttft != nil {
		// The client's own timers fired up to Lag late: its clock, and an
		// in-process server's, were that far off.
		late := max(timingResolution.Seconds()*max(speed, 1), m.Client.Lag.P99.Seconds()) * 1000
		floor := max(late, ttftSteps*m.TBT.P50)
		ttft.Low, ttft.High = max(min(ttft.Low, m.TTFT.P50-floor), 0), max(ttft.High, m.TTFT.P50+floor)
	}
	// The rates' noise: the spread of the requests' time between tokens,
	// or of the gaps between tokens when there are too few requests.
	gaps := medianInterval(m.TBT, n)
	of := m.TBT.P50
	if gaps == nil {
		gaps, of = medianInterval(m.ITL, m.OutputTokens), m.ITL.P50
	}
	tbt = scaled(gaps, of, m.TBT.P50, false)
	perRequest = scaled(gaps, of, m.PerRequestTokensPerSec, true)
	total = scaled(gaps, of, m.OutputTokensPerSec, true)
	if total != nil && m.MeasuredS > 0 && m.TTFT.P99 > 0 {
		// Each end of the window may fall between two requests of every
		// stream, where no token comes for up to a TTFT.
		edge := m.OutputTokensPerSec * 2 * m.TTFT.P99 / (m.MeasuredS * 1000)
		total.Low, total.High = max(min(total.Low, m.OutputTokensPerSec-edge), 0), max(total.High, m.OutputTokensPerSec+edge)
	}
	return total, perRequest, ttft, tbt
}
