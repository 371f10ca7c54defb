package metrics

// LatencyFromDueOf returns the end-to-end latency of the completed requests
// of a scope, counted from when each was due (its Due: an open loop's
// scheduled arrival) rather than from when it was sent. The two differ by
// the time a request waited on the client: for a free slot under an open
// loop's cap, or for a connection. Counting from the arrival is what a user
// of the server would have seen; counting from the send leaves the
// client's queue out (coordinated omission).
func (r *Recorder) LatencyFromDueOf(scope Scope) Distribution {
	var h Histogram
	r.mu.Lock()
	for _, i := range r.partsOf(scope) {
		_ = h.merge(&r.parts[i].fromDue) // same geometry: nothing is dropped
	}
	r.mu.Unlock()
	return h.Summary()
}
