package metrics

import "time"

// TTFTSplit divides time to first token, over the requests whose server
// reported its own timings, into the server's queue, the server's prefill
// and the rest: the network and the client (see [Timeline.Split]). Means
// add up: Queue.Mean + Prefill.Mean + Rest.Mean is TTFT.Mean, to rounding
// (a rest below zero, a server's clock ahead of the client's, counts as
// zero); percentiles are each their own and need not.
type TTFTSplit struct {
	// Requests counts the requests split: those with a first token whose
	// server reported its queue and prefill.
	Requests int64        `json:"requests"`
	TTFT     Distribution `json:"ttft"`
	Queue    Distribution `json:"queue"`
	Prefill  Distribution `json:"prefill"`
	Rest     Distribution `json:"rest"`
	// Outside reports a large rest: more than a quarter of the mean TTFT,
	// and at least 2 ms of it, was spent outside the server. Whose it was
	// the client's health tells: the client's when it was short of CPU
	// ([github.com/llmload/llmload/loadgen.Health]), the network's
	// otherwise.
	Outside bool `json:"outside,omitempty"`
}

// Outside the server, a split's TTFT is large once the rest takes more
// than restShare of it and at least restFloor.
const (
	restShare = 0.25
	restFloor = 2 * time.Millisecond
)

// splitOf returns the split of the histograms of a recording.
func splitOf(h Histograms) TTFTSplit {
	s := TTFTSplit{Requests: h.SplitTTFT.count(), TTFT: h.SplitTTFT.Summary(), Queue: h.SplitQueue.Summary(),
		Prefill: h.SplitPrefill.Summary(), Rest: h.SplitRest.Summary()}
	s.Outside = s.Requests > 0 && s.TTFT.Mean > 0 && s.Rest.Mean >= restFloor &&
		float64(s.Rest.Mean) > restShare*float64(s.TTFT.Mean)
	return s
}

// recordSplit records a request's split, if its server reported its
// timings, in a part's histograms.
func (p *part) recordSplit(tl *Timeline) {
	q, pre, rest, ok := tl.Split()
	if !ok {
		return
	}
	p.splitTTFT.Record(tl.TTFT())
	p.splitQueue.Record(q)
	p.splitPrefill.Record(pre)
	p.splitRest.Record(max(rest, 0))
}
