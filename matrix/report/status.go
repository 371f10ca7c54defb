package report

import "github.com/llmload/llmload/matrix"

// statusForms is every way a status is written but its name, in one place.
type statusForms struct {
	words  string // in a sentence or a chart: "Requests queued"
	shown  string // in a report, where an undecided cell was not run
	class  string // the CSS class of its cells in the HTML heat map
	counts string // what counts it in the HTML summary: "2 queued"
	legend string // the note that explains it under a report's grid, or ""
}

var statusText = map[matrix.Status]statusForms{
	matrix.StatusUnknown:  {"", "Not run", "notrun", "not run", "Not run: the run ended before this cell was decided."},
	matrix.Valid:          {"Valid", "Valid", "valid", "valid", ""},
	matrix.RequestsQueued: {"Requests queued", "Requests queued", "queued", "queued", "Requests queued: the server could not run all requests at once, so some waited in a queue."},
	matrix.OverCapacity: {"Over capacity", "Over capacity", "over", "over capacity",
		"Over capacity: not run because this many requests at this context would exceed the server's " +
			"KV cache or limits, or sent and cut or refused for length, or starved (no output)."},
	matrix.Failed: {"Failed", "Failed", "failed", "failed", "Failed: more requests failed than the cell can absorb."},
}

// reportOrder is the order in which reports count and explain statuses.
var reportOrder = [...]matrix.Status{matrix.Valid, matrix.RequestsQueued, matrix.OverCapacity, matrix.Failed, matrix.StatusUnknown}

// known reports whether s is one of the statuses.
func known(s matrix.Status) bool {
	_, ok := statusText[s]
	return ok
}

// wordsOf returns the status as a sentence or a chart says it: "Valid",
// "Requests queued", "Over capacity" or "Failed"; its name for a status
// that is not one of these.
func wordsOf(s matrix.Status) string {
	if t, ok := statusText[s]; ok {
		return t.words
	}
	return string(s)
}

// tokenOf is the status as the JSON and CSV write it, "" for one that is
// not known.
func tokenOf(s matrix.Status) string {
	if known(s) {
		return string(s)
	}
	return ""
}

// shownOf is the status as a report shows it: its words, and "Not run"
// for StatusUnknown.
func shownOf(s matrix.Status) string {
	if t, ok := statusText[s]; ok {
		return t.shown
	}
	return wordsOf(s)
}

// classOf is the CSS class of the status's cells in the HTML heat map.
func classOf(s matrix.Status) string {
	return statusText[s].class
}
