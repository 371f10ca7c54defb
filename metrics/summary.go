package metrics

import (
	"math"
	"time"
)

// Summary is a measurement reduced to its columns. Throughput counts the
// tokens that arrived inside the window; per-request figures cover each
// request's whole life, and the requests of the summary's [Scope].
//
// # Definitions
//
// These are the speed-test matrix's definitions.
//
//   - Output tokens: tokens that arrived inside the [Window]. Each chunk counts
//     the growth of the server's usage.completion_tokens where the server sends
//     usage on every chunk, else one token per non-empty content or reasoning
//     delta; role-only and empty deltas count 0. When the final usage reports
//     more than the chunks counted, the difference is spread over the
//     request's chunks ([TokenSource] says which rule counted a request).
//   - Measured for: from the window's start to the last counted token; the
//     whole window when none was counted.
//   - Total tok/s: output tokens ÷ measured for.
//   - TTFT: from the request being written (never from when it was queued on
//     the client) to its first content or reasoning token. Client-side waiting
//     is reported apart, as ClientWait.
//   - Time between tokens (TBT): per request, (last − first token time) ÷
//     (tokens − 1) over its whole life; reports show the median over requests.
//   - ITL: every gap between tokens; a chunk carrying k tokens Δ after the
//     previous one is k gaps of Δ÷k, so bunched tokens do not look fast.
//   - Per request tok/s: the median over requests of 1 ÷ TBT (not total tok/s
//     ÷ concurrency).
//   - TPOT: (latency − TTFT) ÷ (tokens − 1) over completed requests (vLLM's).
//   - Average active: the time-average over the window of requests with a
//     first token and no end.
//   - Completed: requests that ended with [DONE] or a finish reason inside
//     the window.
//   - Warm-up: requests that ended before the window opened. A summary of
//     the window counts them in WarmupRequests and nowhere else, so cold starts move
//     none of its figures; [Recorder.Recording] summarises them on their own
//     ([ScopeWarmup]) or with the window's ([ScopeAll], the speed-test
//     matrix's view, where TTFT is over every request a cell launched).
//     Every request is counted in exactly one outcome: Requests = WarmupRequests +
//     Completed + CompletedOutside + Failed + Canceled.
//
// # Names in other tools
//
// The same word means different things in different benchmarks:
//
//	llmload               vLLM bench           AIPerf                       guidellm
//	TTFT                  ttft                 time_to_first_token          time_to_first_token
//	ITL (per token)       itl (per chunk)      —                            —
//	TBT (per request)     —                    inter_token_latency          inter_token_latency
//	TPOT (excl. first)    tpot                 inter_token_latency          inter_token_latency
//	—                     —                    —                            time_per_output_token (incl. first)
//	Latency               e2el                 request_latency              request_latency
//	OutputTokensPerSec     output_throughput    output_token_throughput      output_tokens_per_second
//
// vLLM's itl is one value per chunk, so a server that sends several tokens
// per chunk looks faster between chunks than it is between tokens; llmload's
// ITL splits the chunk. AIPerf's and guidellm's inter_token_latency divide
// from the first token to the end of the response, like TPOT; llmload's TBT
// divides from the first token to the last, which does not include the time
// the server takes to close the stream. Throughputs differ in their
// denominators: vLLM and the others divide by the whole benchmark's duration,
// llmload by the measured part of a fixed window.
type Summary struct {
	// Window is the measurement window; for a recording without one, the
	// span from the first request's start to the last one's end.
	Window Window `json:"window"`

	// Requests is how many requests the summary counts. Each is in exactly
	// one of WarmupRequests, Completed, CompletedOutside, Failed and Canceled.
	Requests int `json:"requests"`
	// WarmupRequests is how many of them ended before the window opened: they are
	// set apart, in no other field of a window's summary (see
	// [Recorder.Recording] for theirs).
	WarmupRequests int `json:"warmup,omitempty"`
	// Completed is how many finished ([DONE] or a finish reason, no error)
	// inside the window; CompletedOutside how many finished outside it:
	// after it ended (a drain), or, in a summary of the warm-up or of the
	// whole recording, before it opened.
	Completed        int `json:"completed"`
	CompletedOutside int `json:"completed_outside,omitempty"`
	// CompletedTokens is the output tokens of the Completed requests, the
	// whole of each, inside the window or not: CompletedTokens ÷ Completed
	// is a completed request's mean output.
	CompletedTokens int `json:"completed_tokens,omitempty"`
	// InputTokens is the input tokens of the Completed requests, as the
	// server's usage counted them (prompt_tokens): of an Embeddings or
	// Rerank run, its whole throughput.
	InputTokens int `json:"input_tokens,omitempty"`
	// ReasoningTokens and AnswerTokens split CompletedTokens: the tokens
	// of reasoning (see [Timeline.ReasoningTokens]) and those after it.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	AnswerTokens    int `json:"answer_tokens,omitempty"`
	// ToolCalls is how many of the Completed requests called a tool.
	ToolCalls int `json:"tool_calls,omitempty"`
	// Failed is how many ended with an error; Canceled how many were cut
	// short without one: by cancellation, such as the end of the window, or
	// by a reader that stopped.
	Failed   int `json:"failed"`
	Canceled int `json:"canceled"`
	// Missed is how many of the Canceled had already missed the SLO when
	// they were cut (see [SLO]); zero without an SLO.
	Missed int `json:"missed,omitempty"`
	// Errors counts failed requests by kind.
	Errors map[ErrorKind]int `json:"errors,omitempty"`
	// Sources counts requests by how their tokens were counted.
	Sources map[TokenSource]int `json:"sources,omitempty"`
	// ServerTimingsDropped counts requests whose server timings were
	// dropped as not to be believed (see [ServerTimings.Dropped]).
	ServerTimingsDropped int `json:"server_timings_dropped,omitempty"`
	// ReasoningOverclaimed counts requests whose usage claimed more
	// reasoning tokens than their output (see
	// [Timeline.ReasoningOverclaim]).
	ReasoningOverclaimed int `json:"reasoning_overclaimed,omitempty"`

	// OutputTokens is the number of tokens that arrived inside the window.
	OutputTokens int `json:"output_tokens"`
	// MeasuredFor runs from the window's start to the last counted token; it
	// is the window's length when no token was counted.
	MeasuredFor time.Duration `json:"measured_for"`
	// OutputTokensPerSec is OutputTokens ÷ MeasuredFor.
	OutputTokensPerSec float64 `json:"total_tok_s"`
	// PerRequestTokensPerSec is the median over requests of 1 ÷ their time
	// between tokens: 1 ÷ TBT.P50.
	PerRequestTokensPerSec float64 `json:"per_request_tok_s"`
	// AvgActive is the time-average, over the window, of requests that had a
	// first token and had not ended: the client's view of concurrency.
	AvgActive float64 `json:"avg_active"`

	// TTFT is time to first token over requests that got one.
	TTFT Distribution `json:"ttft"`
	// TTFO is time to first output token, the first answer token after any
	// reasoning, over requests that got one (see [Timeline.TTFO]).
	TTFO Distribution `json:"ttfo,omitzero"`
	// TBT is each request's mean time between tokens, one value per request
	// with at least two tokens.
	TBT Distribution `json:"tbt"`
	// ITL is every gap between tokens, a k-token chunk counting as k gaps of
	// Δ÷k; in a window's summary, the gaps whose later token arrived after
	// the window opened.
	ITL Distribution `json:"itl"`
	// TPOT is vLLM's time per output token, over completed requests.
	TPOT Distribution `json:"tpot"`
	// Latency is end-to-end latency over completed requests.
	Latency Distribution `json:"latency"`
	// ClientWait is time spent on the client before a request was written.
	ClientWait Distribution `json:"client_wait"`
	// LatencyFromDue is the end-to-end latency of the completed requests
	// counted from when each was due ([Timeline].Due: an open loop's
	// scheduled arrival, otherwise its start) rather than from the send.
	// The two differ by the time a request waited on the client: for a
	// free slot under an open loop's cap, or for a connection. Counting
	// from the arrival is what a user of the server would have seen;
	// counting from the send leaves the client's queue out (coordinated
	// omission).
	LatencyFromDue Distribution `json:"latency_from_due,omitzero"`
	// Split divides the TTFT of the requests whose server reported its
	// own timings into its queue, its prefill and the rest (see
	// [TTFTSplit]); empty when none did.
	Split TTFTSplit `json:"ttft_split,omitzero"`

	// Good is how many requests completed inside the window within the SLO;
	// Goodput is Good per second of window. Both are zero without an SLO.
	Good    int     `json:"good,omitempty"`
	Goodput float64 `json:"goodput,omitempty"`
}

// Scope selects the requests a summary covers, by name; any other name is
// ScopeWindow.
type Scope string

// The scopes of a recording.
const (
	// ScopeWindow is the measurement, Summary's scope: the requests that
	// ended after the window opened, and the gaps between tokens that
	// arrived after it opened. Without a window, the whole recording.
	ScopeWindow Scope = "window"
	// ScopeWarmup is the warm-up: the requests that ended before the window
	// opened, and the gaps before it. Its throughput fields are zero.
	// Without a window, it is empty.
	ScopeWarmup Scope = "warmup"
	// ScopeAll is every request recorded, warm-up included, with the
	// window's throughput: the speed-test matrix's meaning, where time to
	// first token is over every request a cell launched.
	ScopeAll Scope = "all"
)

// summaryOf returns the columns of one scope of the recording and the
// distributions they are derived from, merged once.
func (r *Recorder) summaryOf(scope Scope) (Summary, Histograms) {
	parts := r.partsOf(scope)
	itl := r.itl(parts)
	w := r.Window()
	windowless := w.IsZero()

	r.mu.Lock()
	defer r.mu.Unlock()
	var s Summary
	h := Histograms{ITL: itl}
	for _, i := range parts {
		p := &r.parts[i]
		s.Requests += p.requests
		s.Failed += p.failed
		s.Canceled += p.canceled
		s.Missed += p.missed
		s.ServerTimingsDropped += p.serverDropped
		s.ReasoningOverclaimed += p.reasoningOver
		if i == partWarmup && !windowless {
			// Completed before the window opened: outside it.
			s.CompletedOutside += p.completed + p.outside
		} else {
			s.Completed += p.completed
			s.CompletedTokens += p.completedTokens
			s.InputTokens += p.inputTokens
			s.ReasoningTokens += p.reasoningTokens
			s.AnswerTokens += p.answerTokens
			s.ToolCalls += p.toolCalls
			s.CompletedOutside += p.outside
			s.Good += p.good
		}
		for k, n := range p.errors {
			if n > 0 {
				if s.Errors == nil {
					s.Errors = make(map[ErrorKind]int)
				}
				s.Errors[errorKinds[k]] += n
			}
		}
		for src, n := range p.sources {
			if n > 0 && tokenSources[src] != sourceUnknown {
				if s.Sources == nil {
					s.Sources = make(map[TokenSource]int)
				}
				s.Sources[tokenSources[src]] += n
			}
		}
		// Same geometry: nothing is dropped.
		_ = h.merge(Histograms{TTFT: &p.ttft, TBT: &p.tbt, TPOT: &p.tpot, Latency: &p.latency, ClientWait: &p.wait, TTFO: &p.ttfo,
			SplitTTFT: &p.splitTTFT, SplitQueue: &p.splitQueue, SplitPrefill: &p.splitPrefill, SplitRest: &p.splitRest,
			LatencyFromDue: &p.fromDue})
	}
	for _, d := range []**Histogram{&h.TTFT, &h.TBT, &h.TPOT, &h.Latency, &h.ClientWait, &h.TTFO} {
		if *d == nil {
			*d = &Histogram{} // a scope of no parts
		}
	}
	if scope == ScopeWindow && !windowless {
		s.WarmupRequests = r.parts[partWarmup].requests
		s.Requests += s.WarmupRequests
	}
	s.distributions(h)
	if scope == ScopeWarmup {
		return s, h // the warm-up has no window, and no throughput
	}

	a := &r.tally
	tokens, extra, last, active := a.winTokens, a.winExtra, a.winLast, a.active
	if windowless {
		w = Window{Start: a.from, End: a.to}
		tokens, extra, last, active = a.tokens, float64(a.extra), a.last, a.activeAll
	}
	s.Window = w
	s.OutputTokens = tokens + int(math.Round(extra))
	s.rates(last, active.Seconds())
	return s, h
}

// distributions sets a summary's distributions from its histograms, and
// the per-request rate from its time between tokens: the one derivation
// of a recorder's summary and of a merge's.
func (s *Summary) distributions(h Histograms) {
	s.TTFT, s.TBT, s.ITL = h.TTFT.Summary(), h.TBT.Summary(), h.ITL.Summary()
	s.TPOT, s.Latency, s.ClientWait = h.TPOT.Summary(), h.Latency.Summary(), h.ClientWait.Summary()
	s.TTFO = h.TTFO.Summary()
	s.LatencyFromDue, s.Split = h.LatencyFromDue.Summary(), splitOf(h)
	s.PerRequestTokensPerSec = perSecond(s.TBT.P50)
}

// rates sets a summary's window figures from its window, output tokens
// and good requests: how long it measured (to last, its last counted
// token), the total tok/s, and, over the window, the average requests
// active (from activeSeconds, their summed time in it) and the goodput.
func (s *Summary) rates(last time.Time, activeSeconds float64) {
	s.MeasuredFor = measuredFor(s.Window, last)
	s.OutputTokensPerSec = tokensPerSecond(s.OutputTokens, s.MeasuredFor)
	if d := s.Window.Duration(); d > 0 {
		s.AvgActive = activeSeconds / d.Seconds()
		s.Goodput = float64(s.Good) / d.Seconds()
	}
}

// measuredFor returns how long a window measured: from its start to the last
// counted token at last, at most the window's length, and the whole window
// when no token was counted (last is zero or outside it).
func measuredFor(w Window, last time.Time) time.Duration {
	if !w.contains(last) || !last.After(w.Start) {
		return w.Duration()
	}
	return last.Sub(w.Start)
}

// tokensPerSecond returns tokens ÷ d, or 0 when d is not positive.
func tokensPerSecond(tokens int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(tokens) / d.Seconds()
}

// perSecond returns the rate of one event every d, or 0 when d is not
// positive: perSecond(20*time.Millisecond) is 50.
func perSecond(d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return 1 / d.Seconds()
}
