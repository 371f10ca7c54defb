package metrics

import "time"

// ServerTimings are one request's timings as the server itself measured
// them, where it reports them: vLLM's per-request metrics (the response's
// "metrics" object, asked for with loadgen's Request.ServerTimings, which
// sends include_metrics), TGI's x-queue-time
// and x-inference-time headers. Source says which; "" means the server
// reported nothing and every duration is zero.
type ServerTimings struct {
	// Source names where the timings came from: "vllm" or "tgi".
	Source string
	// Queue is the time the request waited in the server's queue before
	// it was scheduled.
	Queue time.Duration
	// Prefill is from being scheduled to the first output token: the
	// server's own time to first token, its queue left out (vLLM's
	// time_to_first_token_ms). Zero when the server does not say.
	Prefill time.Duration
	// Generation is from the first output token to the last (vLLM's
	// generation_time_ms), or the whole of the server's compute when it
	// does not split it (TGI's x-inference-time).
	Generation time.Duration
	// MeanITL is the server's mean time between output tokens.
	MeanITL time.Duration
	// Dropped says why the server's timings of the request were dropped,
	// when they were: a field that was not a non-negative number of
	// milliseconds (NaN, say), or timings that outlast what the client
	// measured, such as a queue longer than the client's time to first
	// token. Source and every duration are then zero; a [Recorder] counts
	// such requests in [Summary.ServerTimingsDropped].
	Dropped string
}

// Split divides the request's time to first token, as the client measured
// it, into the server's queue, the server's prefill, and the rest: the
// network and the client. ok is false when the server did not report both
// its queue and its prefill, or no token arrived.
func (tl *Timeline) Split() (queue, prefill, rest time.Duration, ok bool) {
	s := tl.Server
	ttft := tl.TTFT()
	if s.Source == "" || s.Prefill <= 0 || ttft <= 0 {
		return 0, 0, 0, false
	}
	return s.Queue, s.Prefill, ttft - s.Queue - s.Prefill, true
}

// Outcome returns what became of the request, as [Recorder.Record] counts
// it: "completed" (no error, and [DONE] or a finish reason), "failed" (an
// error other than cancellation) or "canceled" (cut by cancellation, or
// ended with neither an error nor a finish).
func (tl *Timeline) Outcome() string {
	switch {
	case tl.Kind == KindCanceled:
		return "canceled"
	case tl.Kind != KindNone || tl.Err != nil:
		return "failed"
	case !tl.OK():
		return "canceled"
	}
	return "completed"
}
