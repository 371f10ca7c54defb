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

// statusText is every way a status is written, in one place.
var statusText = [...]struct {
	words  string // String: "Requests queued"
	token  string // MarshalText, for JSON and CSV: "requests_queued"
	shown  string // in a report, where an undecided cell was not run
	class  string // the CSS class of its cells in the HTML heat map
	counts string // what counts it in the HTML summary: "2 queued"
	legend string // the note that explains it under a report's grid, or ""
}{
	StatusUnknown:  {"", "", "Not run", "notrun", "not run", "Not run: the run ended before this cell was decided."},
	Valid:          {"Valid", "valid", "Valid", "valid", "valid", ""},
	RequestsQueued: {"Requests queued", "requests_queued", "Requests queued", "queued", "queued", "Requests queued: the server could not run all requests at once, so some waited in a queue."},
	OverCapacity: {"Over capacity", "over_capacity", "Over capacity", "over", "over capacity",
		"Over capacity: not run because this many requests at this context would exceed the server's " +
			"KV cache or limits, or sent and cut or refused for length, or starved (no output)."},
	Failed: {"Failed", "failed", "Failed", "failed", "failed", "Failed: more requests failed than the cell can absorb."},
}

// reportOrder is the order in which reports count and explain statuses.
var reportOrder = [...]Status{Valid, RequestsQueued, OverCapacity, Failed, StatusUnknown}

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

// token is the status as MarshalText writes it, "" for one that is not
// valid.
func (s Status) token() string {
	if int(s) < len(statusText) {
		return statusText[s].token
	}
	return ""
}

// shown is the status as a report shows it: its words, and "Not run" for
// StatusUnknown.
func (s Status) shown() string {
	if int(s) < len(statusText) {
		return statusText[s].shown
	}
	return s.String()
}

// class is the CSS class of the status's cells in the HTML heat map.
func (s Status) class() string {
	if int(s) < len(statusText) {
		return statusText[s].class
	}
	return ""
}
