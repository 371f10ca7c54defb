package loadgen

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/llmload/llmload/metrics"
)

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
