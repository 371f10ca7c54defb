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

// statusForms is every way a status is written but its name, in one place.
type statusForms struct {
	words  string // in a sentence or a chart: "Requests queued"
	shown  string // in a report, where an undecided cell was not run
	class  string // the CSS class of its cells in the HTML heat map
	counts string // what counts it in the HTML summary: "2 queued"
	legend string // the note that explains it under a report's grid, or ""
}

var statusText = map[Status]statusForms{
	StatusUnknown:  {"", "Not run", "notrun", "not run", "Not run: the run ended before this cell was decided."},
	Valid:          {"Valid", "Valid", "valid", "valid", ""},
	RequestsQueued: {"Requests queued", "Requests queued", "queued", "queued", "Requests queued: the server could not run all requests at once, so some waited in a queue."},
	OverCapacity: {"Over capacity", "Over capacity", "over", "over capacity",
		"Over capacity: not run because this many requests at this context would exceed the server's " +
			"KV cache or limits, or sent and cut or refused for length, or starved (no output)."},
	Failed: {"Failed", "Failed", "failed", "failed", "Failed: more requests failed than the cell can absorb."},
}

// reportOrder is the order in which reports count and explain statuses.
var reportOrder = [...]Status{Valid, RequestsQueued, OverCapacity, Failed, StatusUnknown}

// known reports whether s is one of the statuses.
func (s Status) known() bool {
	_, ok := statusText[s]
	return ok
}

// words returns the status as a sentence or a chart says it: "Valid",
// "Requests queued", "Over capacity" or "Failed"; its name for a status
// that is not one of these.
func (s Status) words() string {
	if t, ok := statusText[s]; ok {
		return t.words
	}
	return string(s)
}

// token is the status as the JSON and CSV write it, "" for one that is not
// known.
func (s Status) token() string {
	if s.known() {
		return string(s)
	}
	return ""
}

// shown is the status as a report shows it: its words, and "Not run" for
// StatusUnknown.
func (s Status) shown() string {
	if t, ok := statusText[s]; ok {
		return t.shown
	}
	return s.words()
}

// class is the CSS class of the status's cells in the HTML heat map.
func (s Status) class() string {
	return statusText[s].class
}
