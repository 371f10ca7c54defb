package loadgentest

import (
	"strconv"
	"time"
)

// A request that asks for them (include_metrics: true) gets its timings
// as vLLM's per-request metrics give them (--enable-per-request-metrics):
// in a "metrics" object on the last chunk of a stream (beside the usage,
// or in a chunk of its own when no usage was asked for), or of a whole
// response. They are the simulator's ground truth, taken at its HTTP edge
// so that what a client measures beyond them is the network and the
// client alone: the queue from the request's receipt to its first
// admission by the engine (parsing and tokenizing included), time to
// first token from then to the flush of the first chunk of tokens,
// generation from the engine's first token to its last.

// timingsJSON is the metrics object of a whole response.
type timingsJSON struct {
	TTFT            float64 `json:"time_to_first_token_ms"`
	Generation      float64 `json:"generation_time_ms"`
	Queue           float64 `json:"queue_time_ms"`
	MeanITL         float64 `json:"mean_itl_ms"`
	TokensPerSecond float64 `json:"tokens_per_second"`
}

// timings returns g's timings, or nil when g did not ask for them or the
// engine did not run it.
func (g *generation) timings() *timingsJSON {
	r := g.req
	admitted, first, last := r.admittedAt.Load(), r.firstAt.Load(), r.lastAt.Load()
	if !g.metrics || admitted == 0 || first == 0 {
		return nil
	}
	flushed := first
	if !g.firstFlush.IsZero() {
		flushed = monoNanos(g.firstFlush)
	}
	ms := func(ns int64) float64 { return float64(max(ns, 0)) / 1e6 }
	t := &timingsJSON{
		TTFT:       ms(flushed - admitted),
		Generation: ms(last - first),
		Queue:      ms(admitted - monoNanos(g.received)),
	}
	if n := r.out.Load(); n > 1 {
		t.MeanITL = t.Generation / float64(n-1)
	}
	if d := last - admitted; d > 0 {
		t.TokensPerSecond = float64(r.out.Load()) / (float64(d) / 1e9)
	}
	return t
}

// appendMetrics appends the metrics object to a chunk being written, if
// the request asked for it.
func (s *sseWriter) appendMetrics() {
	t := s.g.timings()
	if t == nil {
		return
	}
	f := func(name string, v float64) {
		if s.buf[len(s.buf)-1] != '{' {
			s.buf = append(s.buf, ',')
		}
		s.buf = append(s.buf, '"')
		s.buf = append(s.buf, name...)
		s.buf = append(s.buf, `":`...)
		s.buf = strconv.AppendFloat(s.buf, v, 'f', 3, 64)
	}
	s.buf = append(s.buf, `,"metrics":{`...)
	f("time_to_first_token_ms", t.TTFT)
	f("generation_time_ms", t.Generation)
	f("queue_time_ms", t.Queue)
	f("mean_itl_ms", t.MeanITL)
	f("tokens_per_second", t.TokensPerSecond)
	s.buf = append(s.buf, '}')
}

// stamp gives the requests first admitted in a step the step's start, on
// the engine's clock (the one its tokens are stamped with), or their
// arrival if that was later.
func (e *engine) stamp(start time.Time) {
	e.stepStart = start
	for _, r := range e.admitted {
		at := start
		if at.Before(r.arrived) {
			at = r.arrived
		}
		r.admittedAt.Store(monoNanos(at))
	}
	clear(e.admitted)
	e.admitted = e.admitted[:0]
}

// scheduled records when the engine first admitted the request and when
// it produced its first token.
func (t *Truth) scheduled(rec *record, r *request) {
	if rec == nil {
		return
	}
	rec.mu.Lock()
	rec.t.Scheduled = monoTime(r.admittedAt.Load())
	rec.t.FirstToken = monoTime(r.firstAt.Load())
	rec.mu.Unlock()
}
