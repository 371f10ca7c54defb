package chunk

import (
	"strconv"
	"time"

	"github.com/llmload/llmload/metrics"
)

// Timings is what a chunk says of the server's own timings: vLLM's
// per-request "metrics" object (asked for with [Request.ServerTimings],
// which sends include_metrics). bad names the first field that was not a
// non-negative number of milliseconds; literal says a NaN or Infinity
// literal was passed over.
type Timings struct {
	Set, Literal                     bool
	Bad                              string
	queue, ttft, generation, meanITL time.Duration
}

// readMetrics reads vLLM's per-request metrics object. The timings are
// extra, and never fail a request: anything else under the name is passed
// over, and a field that is not a non-negative number of milliseconds,
// Python's NaN and Infinity literals included (which are not JSON), is
// noted in bad, and the request's timings are then dropped. A null field
// is one the server did not measure.
func (c *Chunk) readMetrics(s *scanner) {
	if s.peek() != '{' {
		s.skip()
		return
	}
	t := &c.Timings
	for key := range s.object("metrics") {
		var d *time.Duration
		switch string(key) {
		case "queue_time_ms":
			d = &t.queue
		case "time_to_first_token_ms":
			d = &t.ttft
		case "generation_time_ms":
			d = &t.generation
		case "mean_itl_ms":
			d = &t.meanITL
		}
		if s.nonFinite() {
			t.Literal = true
			if d != nil && t.Bad == "" {
				t.Bad = string(key)
			}
			continue
		}
		if d == nil {
			s.skip()
			continue
		}
		if s.null() {
			continue // not measured
		}
		if ms, ok := s.millis(); ok {
			*d = ms
			t.Set = true
		} else if t.Bad == "" && s.err == nil {
			t.Bad = string(key)
		}
	}
}

// nonFinite consumes NaN, Infinity or -Infinity if one comes next: what
// Python's json module writes for a float that is not finite. It reports
// whether one came.
func (s *scanner) nonFinite() bool {
	for _, w := range [...]string{"NaN", "Infinity", "-Infinity"} {
		if s.peek() == w[0] && len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
			s.i += len(w)
			return true
		}
	}
	return false
}

// millis reads a JSON value and, if it is a non-negative number of
// milliseconds, returns it as a duration.
func (s *scanner) millis() (time.Duration, bool) {
	if c := s.peek(); c < '0' || c > '9' {
		s.skip()
		return 0, false
	}
	start := s.i
	s.num()
	if s.err != nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
	if err != nil || !(v >= 0 && v < 1e12) {
		return 0, false
	}
	return time.Duration(v * float64(time.Millisecond)), true
}

// server returns the timings as the timeline keeps them.
func (t *Timings) Server() metrics.ServerTimings {
	return metrics.ServerTimings{Source: "vllm", Queue: t.queue, Prefill: t.ttft, Generation: t.generation, MeanITL: t.meanITL}
}
