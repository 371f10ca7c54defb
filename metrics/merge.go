package metrics

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/llmload/llmload/internal/counts"
)

// Recording is what a [Recorder] measured, in a form that travels: the
// summary of one scope and the full distributions under it. Its JSON
// carries every histogram in HdrHistogram's V2 encoding with its exact
// figures (see [Histogram.MarshalJSON]), so recordings made on several
// machines, or saved long ago, merge exactly with [MergeRecordings].
type Recording struct {
	Summary    Summary    `json:"summary"`
	Histograms Histograms `json:"histograms"`
	// Models holds each model's recording, by name, from a Recorder with
	// ByModel; nil without.
	Models map[string]Recording `json:"models,omitempty"`
	// Series is the recording over time, warm-up and window, with what it
	// merges from, from a Recorder with Every (see [Recorder.Series]); nil
	// without.
	Series *Series `json:"series,omitempty"`
}

// Recording returns the summary and the distributions of one scope of the
// recording.
func (r *Recorder) Recording(scope Scope) Recording {
	s, h := r.summaryOf(scope)
	rec := Recording{Summary: s, Histograms: h, Series: r.mergeable()}
	r.modelsMu.Lock()
	models := maps.Clone(r.models)
	r.modelsMu.Unlock()
	for name, m := range models {
		if rec.Models == nil {
			rec.Models = make(map[string]Recording, len(models))
		}
		rec.Models[name] = m.Recording(scope)
	}
	return rec
}

// MergeError is every error of [MergeRecordings]: which recording could
// not be merged, and why (test with [errors.As]).
type MergeError struct {
	Index  int // the recording's position in the arguments
	Reason string
}

// Error names the recording and the reason.
func (e *MergeError) Error() string {
	return fmt.Sprintf("metrics: recording %d does not merge: %s", e.Index, e.Reason)
}

// MergeRecordings returns the recording of every request of recs, as one
// Recorder would have made it had it seen them all: recorders on several
// machines that measured the same window, each with its own share of the
// load, merge into the measurement of the whole load.
//
// The merge is exact. Every count adds up (requests, outcomes, errors by
// kind, tokens); every distribution is the sum of the recordings' HDR
// buckets, which is the histogram of all their values, bucket for bucket,
// with the exact count, minimum, maximum and mean, so every quantile is
// the one a single recorder of every value would report. Throughput is the
// tokens of all recordings over the merged window, measured up to the
// last token any of them counted; the average of active requests is the
// sum of the recordings' averages, each weighted by its window's share of
// the merged one. Output tokens that a final usage spread over a request's
// chunks (SourceFinalUsage) are rounded per recording, so they may differ
// from a single recorder's by half a token a recording.
//
// The windows must be on one clock: convert each recorder's window to a
// common one (a leader's) before merging. The merged window is their
// intersection; recordings of windows that do not overlap are an error,
// and so is a recording whose summary and histograms disagree on a count.
// Merging the result with more recordings is the same as merging them all
// at once. The result's histograms are new: recs are not changed.
func MergeRecordings(recs ...Recording) (Recording, error) {
	var out Recording
	if len(recs) == 0 {
		return out, nil
	}
	for _, r := range recs {
		for name := range r.Models {
			if _, done := out.Models[name]; done {
				continue
			}
			var of []Recording
			for _, o := range recs {
				if m, ok := o.Models[name]; ok {
					of = append(of, m)
				}
			}
			m, err := MergeRecordings(of...)
			if err != nil {
				return Recording{}, fmt.Errorf("model %q: %w", name, err)
			}
			if out.Models == nil {
				out.Models = map[string]Recording{}
			}
			out.Models[name] = m
		}
	}
	s := &out.Summary
	s.Window = recs[0].Summary.Window
	var last time.Time
	active := 0.0 // the sum of active request-seconds
	for i, r := range recs {
		if err := r.check(); err != nil {
			return Recording{}, &MergeError{Index: i, Reason: err.Error()}
		}
		if err := out.Histograms.merge(r.Histograms); err != nil {
			return Recording{}, &MergeError{Index: i, Reason: err.Error()}
		}
		p := r.Summary
		s.Window = intersect(s.Window, p.Window)
		s.Requests += p.Requests
		s.WarmupRequests += p.WarmupRequests
		s.Completed += p.Completed
		s.CompletedOutside += p.CompletedOutside
		s.CompletedTokens += p.CompletedTokens
		s.InputTokens += p.InputTokens
		s.ReasoningTokens += p.ReasoningTokens
		s.AnswerTokens += p.AnswerTokens
		s.ToolCalls += p.ToolCalls
		s.Failed += p.Failed
		s.Canceled += p.Canceled
		s.Missed += p.Missed
		s.ServerTimingsDropped += p.ServerTimingsDropped
		s.ReasoningOverclaimed += p.ReasoningOverclaimed
		s.Good += p.Good
		s.OutputTokens += p.OutputTokens
		s.Errors = counts.Add(s.Errors, p.Errors)
		s.Sources = counts.Add(s.Sources, p.Sources)
		if p.OutputTokens > 0 && p.MeasuredFor > 0 {
			if l := p.Window.Start.Add(p.MeasuredFor); l.After(last) {
				last = l
			}
		}
		active += p.AvgActive * p.Window.Duration().Seconds()
	}
	if !s.Window.End.After(s.Window.Start) && !recs[0].Summary.Window.IsZero() {
		// Blame the first recording that misses the first one's window (a
		// late or moved shard), else the first that misses the others'.
		first := recs[0].Summary.Window
		for i := 1; i < len(recs); i++ {
			if w := recs[i].Summary.Window; !w.End.After(first.Start) || !w.Start.Before(first.End) {
				return Recording{}, &MergeError{Index: i, Reason: fmt.Sprintf("its window %v–%v does not overlap recording 0's %v–%v", w.Start.Format(time.RFC3339Nano), w.End.Format(time.RFC3339Nano), first.Start.Format(time.RFC3339Nano), first.End.Format(time.RFC3339Nano))}
			}
		}
		for i := range recs {
			if w := recs[i].Summary.Window; !w.End.After(s.Window.Start) || !w.Start.Before(s.Window.End) {
				return Recording{}, &MergeError{Index: i, Reason: fmt.Sprintf("its window %v–%v does not overlap the others'", w.Start.Format(time.RFC3339Nano), w.End.Format(time.RFC3339Nano))}
			}
		}
	}
	s.distributions(out.Histograms)
	s.rates(last, active)
	series := make([]*Series, len(recs))
	for i, r := range recs {
		series[i] = r.Series
	}
	var err error
	if out.Series, err = mergeSeries(series, s.Window); err != nil {
		return Recording{}, err
	}
	return out, nil
}

// check reports a recording whose histograms cannot stand for its summary.
func (r Recording) check() error {
	h, s := r.Histograms, r.Summary
	for _, p := range []struct {
		name string
		hist *Histogram
		sum  Distribution
	}{
		{"ttft", h.TTFT, s.TTFT}, {"tbt", h.TBT, s.TBT}, {"itl", h.ITL, s.ITL},
		{"tpot", h.TPOT, s.TPOT}, {"latency", h.Latency, s.Latency}, {"client_wait", h.ClientWait, s.ClientWait},
		{"ttfo", h.TTFO, s.TTFO}, {"latency_from_due", h.LatencyFromDue, s.LatencyFromDue},
		{"split_ttft", h.SplitTTFT, s.Split.TTFT}, {"split_queue", h.SplitQueue, s.Split.Queue},
		{"split_prefill", h.SplitPrefill, s.Split.Prefill}, {"split_rest", h.SplitRest, s.Split.Rest},
	} {
		if p.hist.count() != p.sum.Count {
			return fmt.Errorf("its %s histogram holds %d values and its summary counts %d", p.name, p.hist.count(), p.sum.Count)
		}
	}
	if s.OutputTokens < 0 || s.Requests < 0 {
		return errors.New("negative counts")
	}
	return nil
}

// intersect returns the part of two windows common to both; a zero window
// stands for none set and leaves the other.
func intersect(a, b Window) Window {
	switch {
	case a.IsZero():
		return b
	case b.IsZero():
		return a
	}
	if b.Start.After(a.Start) {
		a.Start = b.Start
	}
	if b.End.Before(a.End) {
		a.End = b.End
	}
	return a
}
