package metrics

import (
	"math"
	"time"
)

// Summary is a measurement reduced to its columns. The definitions are the
// speed-test matrix's (see the package documentation): throughput counts the
// tokens that arrived inside the window; per-request latencies cover each
// request's whole life, warm-up included.
type Summary struct {
	Window Window `json:"window"`

	// Requests is how many requests were recorded: launched in the
	// measurement, warm-up included.
	Requests int `json:"requests"`
	// Completed is how many finished ([DONE] or a finish reason, no error)
	// inside the window.
	Completed int `json:"completed"`
	// Failed is how many ended with an error; Canceled how many were cut by
	// cancellation, such as the end of the window.
	Failed   int `json:"failed"`
	Canceled int `json:"canceled"`
	// Errors counts failed requests by kind.
	Errors map[ErrorKind]int `json:"errors,omitempty"`
	// Sources counts requests by how their tokens were counted.
	Sources map[TokenSource]int `json:"sources,omitempty"`

	// OutputTokens is the number of tokens that arrived inside the window.
	OutputTokens int `json:"output_tokens"`
	// MeasuredFor runs from the window's start to the last counted token; it
	// is the window's length when no token was counted.
	MeasuredFor time.Duration `json:"measured_for"`
	// TotalTokensPerSec is OutputTokens ÷ MeasuredFor.
	TotalTokensPerSec float64 `json:"total_tok_s"`
	// PerRequestTokensPerSec is the median over requests of 1 ÷ their time
	// between tokens: 1 ÷ TBT.P50.
	PerRequestTokensPerSec float64 `json:"per_request_tok_s"`
	// AvgActive is the time-average, over the window, of requests that had a
	// first token and had not ended: the client's view of concurrency.
	AvgActive float64 `json:"avg_active"`

	// TTFT is time to first token over requests that got one.
	TTFT Distribution `json:"ttft"`
	// TBT is each request's mean time between tokens, one value per request
	// with at least two tokens.
	TBT Distribution `json:"tbt"`
	// ITL is every gap between tokens, a k-token chunk counting as k gaps of
	// Δ÷k.
	ITL Distribution `json:"itl"`
	// TPOT is vLLM's time per output token, over completed requests.
	TPOT Distribution `json:"tpot"`
	// Latency is end-to-end latency over completed requests.
	Latency Distribution `json:"latency"`
	// ClientWait is time spent on the client before a request was written.
	ClientWait Distribution `json:"client_wait"`

	// Good is how many requests completed inside the window within the SLO;
	// Goodput is Good per second of window. Both are zero without an SLO.
	Good    int     `json:"good,omitempty"`
	Goodput float64 `json:"goodput,omitempty"`
}

// Summary returns the columns of everything recorded so far.
func (r *Recorder) Summary() Summary {
	itl := r.itl()
	w := r.Window()

	r.mu.Lock()
	defer r.mu.Unlock()
	a := &r.agg
	s := Summary{
		Window:     w,
		Requests:   a.requests,
		Completed:  a.completed,
		Failed:     a.failed,
		Canceled:   a.canceled,
		TTFT:       a.ttft.Summary(),
		TBT:        a.tbt.Summary(),
		ITL:        itl.Summary(),
		TPOT:       a.tpot.Summary(),
		Latency:    a.latency.Summary(),
		ClientWait: a.wait.Summary(),
		Good:       a.good,
	}
	for k, n := range a.errors {
		if n > 0 {
			if s.Errors == nil {
				s.Errors = make(map[ErrorKind]int)
			}
			s.Errors[ErrorKind(k)] = n
		}
	}
	for src, n := range a.sources {
		if n > 0 && src != int(SourceUnknown) {
			if s.Sources == nil {
				s.Sources = make(map[TokenSource]int)
			}
			s.Sources[TokenSource(src)] = n
		}
	}
	s.OutputTokens = a.winTokens + int(math.Round(a.winExtra))
	s.MeasuredFor = MeasuredFor(w, a.winLast)
	s.TotalTokensPerSec = TokensPerSecond(s.OutputTokens, s.MeasuredFor)
	s.PerRequestTokensPerSec = PerSecond(s.TBT.P50)
	if d := w.Duration(); d > 0 {
		s.AvgActive = a.active.Seconds() / d.Seconds()
		s.Goodput = float64(a.good) / d.Seconds()
	}
	return s
}

// MeasuredFor returns how long a window measured: from its start to the last
// counted token at last, at most the window's length, and the whole window
// when no token was counted (last is zero or outside it).
func MeasuredFor(w Window, last time.Time) time.Duration {
	if !w.Contains(last) || !last.After(w.Start) {
		return w.Duration()
	}
	return last.Sub(w.Start)
}

// TokensPerSecond returns tokens ÷ d, or 0 when d is not positive.
func TokensPerSecond(tokens int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(tokens) / d.Seconds()
}

// PerSecond returns the rate of one event every d, or 0 when d is not
// positive: PerSecond(20*time.Millisecond) is 50.
func PerSecond(d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return 1 / d.Seconds()
}
