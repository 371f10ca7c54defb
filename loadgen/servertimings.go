package loadgen

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/llmload/llmload/metrics"
)

// serverTimings is what a chunk says of the server's own timings: vLLM's
// per-request "metrics" object (asked for with [Request.ServerTimings],
// which sends include_metrics). bad names the first field that was not a
// non-negative number of milliseconds; literal says a NaN or Infinity
// literal was passed over.
type serverTimings struct {
	set, literal                     bool
	bad                              string
	queue, ttft, generation, meanITL time.Duration
}

// readMetrics reads vLLM's per-request metrics object. The timings are
// extra, and never fail a request: anything else under the name is passed
// over, and a field that is not a non-negative number of milliseconds,
// Python's NaN and Infinity literals included (which are not JSON), is
// noted in bad, and the request's timings are then dropped. A null field
// is one the server did not measure.
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
		if s.nonFinite() {
			t.literal = true
			if d != nil && t.bad == "" {
				t.bad = string(key)
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
			t.set = true
		} else if t.bad == "" && s.err == nil {
			t.bad = string(key)
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
func (t *serverTimings) server() metrics.ServerTimings {
	return metrics.ServerTimings{Source: "vllm", Queue: t.queue, Prefill: t.ttft, Generation: t.generation, MeanITL: t.meanITL}
}

// timingSlack is how far the server's timings may run past the client's
// own before they are dropped: 5 ms and a tenth of the client's figure.
// The server's clock starts once the request reached it and stops before
// its answer left, so its spans fall within the client's; the slack covers
// rounding and the two clocks' rates.
func timingSlack(d time.Duration) time.Duration { return 5*time.Millisecond + d/10 }

// implausible says why the server's timings s cannot be true of a request
// the client saw take ttft to its first token and latency in all, both from
// the request's start (before connecting: the client's stamp of the
// request's writing can lag the server's receipt on a busy machine), or ""
// when they can: its queue and prefill, before the first token, cannot
// outlast ttft, and its queue and generation, which do not overlap, cannot
// outlast latency, each by more than timingSlack. (A server may stamp its
// prefill's end as late as the first token's flush, past the start of its
// generation, so prefill and generation may overlap.) A zero ttft or
// latency (no token, no end) checks nothing.
func implausible(s metrics.ServerTimings, ttft, latency time.Duration) string {
	pre, total := s.Queue+s.Prefill, s.Queue+s.Generation
	switch {
	case ttft > 0 && pre > ttft+timingSlack(ttft):
		return fmt.Sprintf("the server's queue and prefill (%v) outlast the client's time to first token from the request's start (%v)", pre, ttft)
	case latency > 0 && total > latency+timingSlack(latency):
		return fmt.Sprintf("the server's queue and generation (%v) outlast the client's latency from the request's start (%v)", total, latency)
	}
	return ""
}

// settleServer drops the request's server timings if they are not to be
// believed: a field was not a number of milliseconds, or they outlast what
// the client measured (see implausible). What is dropped is said in
// Server.Dropped, for reports to count.
func (rs *requestState) settleServer() {
	tl := rs.tl
	why := ""
	switch {
	case rs.timingsBad != "":
		why = fmt.Sprintf("the server's %s was not a non-negative number of milliseconds", rs.timingsBad)
	case tl.Server.Source != "":
		why = implausible(tl.Server, since(tl.Start, tl.First), since(tl.Start, tl.End))
	}
	if why != "" {
		tl.Server = metrics.ServerTimings{Dropped: why}
	}
}

// since returns to − from, or 0 when either is unknown.
func since(from, to time.Time) time.Duration {
	if from.IsZero() || to.IsZero() {
		return 0
	}
	return to.Sub(from)
}

// timingHeaders reads TGI's x-queue-time and x-inference-time headers
// (whole milliseconds), when the server sent them. bad names the first
// that was sent and is not a non-negative number of milliseconds.
func timingHeaders(h http.Header) (st metrics.ServerTimings, ok bool, bad string) {
	q, qok, qbad := headerMillis(h, "X-Queue-Time")
	inf, iok, ibad := headerMillis(h, "X-Inference-Time")
	bad = cmp.Or(qbad, ibad)
	if !qok && !iok {
		return metrics.ServerTimings{}, false, bad
	}
	return metrics.ServerTimings{Source: "tgi", Queue: q, Generation: inf}, true, bad
}

// headerMillis reads the header name as milliseconds: ok when it was sent
// and holds a non-negative number of them, bad (the name) when it was sent
// and does not.
func headerMillis(h http.Header, name string) (d time.Duration, ok bool, bad string) {
	v := h.Get(name)
	if v == "" {
		return 0, false, ""
	}
	ms, err := strconv.ParseFloat(v, 64)
	if err != nil || !(ms >= 0 && ms < 1e12) {
		return 0, false, name
	}
	return time.Duration(ms * float64(time.Millisecond)), true, ""
}
