package matrix

import "fmt"

// Status is a cell's verdict. Its zero value means the cell has not been
// decided (not run yet).
type Status uint8

// The statuses of a cell, as the speed-test matrix shows them.
const (
	StatusUnknown Status = iota
	// Valid: measured with every request running at once.
	Valid
	// RequestsQueued: measured, but the server could not run all requests
	// at once, so some waited in its queue.
	RequestsQueued
	// OverCapacity: predicted not to fit and never sent, or sent and
	// starved (no output, or rejected for length or memory).
	OverCapacity
	// Failed: more requests failed than the cell can absorb.
	Failed
)

var statusText = [...]struct{ words, token string }{
	{"", ""},
	{"Valid", "valid"},
	{"Requests queued", "requests_queued"},
	{"Over capacity", "over_capacity"},
	{"Failed", "failed"},
}

// String returns the status as the report shows it: "Valid", "Requests
// queued", "Over capacity" or "Failed".
func (s Status) String() string {
	if int(s) < len(statusText) {
		return statusText[s].words
	}
	return fmt.Sprintf("Status(%d)", s)
}

// MarshalText returns the status as the JSON and CSV write it: "valid",
// "requests_queued", "over_capacity" or "failed".
func (s Status) MarshalText() ([]byte, error) {
	if int(s) < len(statusText) {
		return []byte(statusText[s].token), nil
	}
	return nil, fmt.Errorf("matrix: invalid status %d", s)
}

// UnmarshalText reads what MarshalText writes.
func (s *Status) UnmarshalText(b []byte) error {
	for i, t := range statusText {
		if t.token == string(b) {
			*s = Status(i)
			return nil
		}
	}
	return fmt.Errorf("matrix: unknown status %q", b)
}
