package matrix

// Status is a cell's verdict, named as the JSON and CSV write it. Its zero
// value means the cell has not been decided (not run yet).
type Status string

// The statuses of a cell, as the speed-test matrix shows them.
const (
	StatusUnknown Status = ""
	// Valid: measured with every request running at once.
	Valid Status = "valid"
	// RequestsQueued: measured, but the server could not run all requests
	// at once, so some waited in its queue.
	RequestsQueued Status = "requests_queued"
	// OverCapacity: predicted not to fit and never sent, or sent and
	// starved (no output, or rejected for length or memory).
	OverCapacity Status = "over_capacity"
	// Failed: more requests failed than the cell can absorb.
	Failed Status = "failed"
)

// statusWords are the statuses as a sentence says them.
var statusWords = map[Status]string{Valid: "Valid", RequestsQueued: "Requests queued", OverCapacity: "Over capacity", Failed: "Failed"}

// words returns the status as a sentence or a log line says it: "Valid",
// "Requests queued", "Over capacity" or "Failed"; its name for a status
// that is not one of these.
func (s Status) words() string {
	if w, ok := statusWords[s]; ok {
		return w
	}
	return string(s)
}

// known reports whether s is one of the statuses.
func (s Status) known() bool {
	_, ok := statusWords[s]
	return ok || s == StatusUnknown
}
