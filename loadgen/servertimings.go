package loadgen

import (
	"net/http"
	"strconv"
	"time"

	"github.com/llmload/llmload/metrics"
)

// serverTimings is what a chunk says of the server's own timings: vLLM's
// per-request "metrics" object (asked for with [Request.ServerTimings],
// which sends include_metrics).
type serverTimings struct {
	set                              bool
	queue, ttft, generation, meanITL time.Duration
}

// readMetrics reads vLLM's per-request metrics object. Anything else under
// the name, or a field that is not a non-negative number, is passed over:
// the timings are extra, and never fail a request.
func (c *chunk) readMetrics(s *scanner) {
	if s.peek() != '{' {
		s.skip()
		return
	}
	t := &c.timings
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
		if d == nil {
			s.skip()
			continue
		}
		if ms, ok := s.millis(); ok {
			*d = ms
			t.set = true
		}
	}
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
func (t *serverTimings) server() metrics.ServerTimings {
	return metrics.ServerTimings{Source: "vllm", Queue: t.queue, Prefill: t.ttft, Generation: t.generation, MeanITL: t.meanITL}
}

// timingHeaders reads TGI's x-queue-time and x-inference-time headers
// (whole milliseconds), when the server sent them.
func timingHeaders(h http.Header) (metrics.ServerTimings, bool) {
	q, qok := headerMillis(h, "X-Queue-Time")
	inf, iok := headerMillis(h, "X-Inference-Time")
	if !qok && !iok {
		return metrics.ServerTimings{}, false
	}
	return metrics.ServerTimings{Source: "tgi", Queue: q, Generation: inf}, true
}

func headerMillis(h http.Header, name string) (time.Duration, bool) {
	v := h.Get(name)
	if v == "" {
		return 0, false
	}
	ms, err := strconv.ParseFloat(v, 64)
	if err != nil || !(ms >= 0 && ms < 1e12) {
		return 0, false
	}
	return time.Duration(ms * float64(time.Millisecond)), true
}
