package metrics

// TTFTSplit divides time to first token, over the requests whose server
// reported its own timings, into the server's queue, the server's prefill
// and the rest: the network and the client (see [Timeline.Split]). Means
// add up: Queue.Mean + Prefill.Mean + Rest.Mean is TTFT.Mean, to rounding;
// percentiles are each their own and need not.
type TTFTSplit struct {
	// Requests counts the requests split: those with a first token whose
	// server reported its queue and prefill.
	Requests int64        `json:"requests"`
	TTFT     Distribution `json:"ttft"`
	Queue    Distribution `json:"queue"`
	Prefill  Distribution `json:"prefill"`
	Rest     Distribution `json:"rest"`
}

// splitHists holds a part's split, one histogram a term.
type splitHists struct {
	ttft, queue, prefill, rest Histogram
}

func (h *splitHists) record(tl *Timeline) {
	q, p, rest, ok := tl.Split()
	if !ok {
		return
	}
	h.ttft.Record(tl.TTFT())
	h.queue.Record(q)
	h.prefill.Record(p)
	h.rest.Record(max(rest, 0))
}

// SplitOf returns the TTFT split of a scope of the recording: its requests
// whose server reported its timings.
func (r *Recorder) SplitOf(scope Scope) TTFTSplit {
	var all splitHists
	r.mu.Lock()
	for _, i := range r.partsOf(scope) {
		p := &r.parts[i].split
		_ = all.ttft.merge(&p.ttft) // same geometry: nothing is dropped
		_ = all.queue.merge(&p.queue)
		_ = all.prefill.merge(&p.prefill)
		_ = all.rest.merge(&p.rest)
	}
	r.mu.Unlock()
	return TTFTSplit{Requests: all.ttft.Count(), TTFT: all.ttft.Summary(), Queue: all.queue.Summary(),
		Prefill: all.prefill.Summary(), Rest: all.rest.Summary()}
}
