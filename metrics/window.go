package metrics

import "time"

// Window is the measurement interval [Start, End): tokens that arrive inside
// it are counted, others are not. The zero Window contains nothing.
type Window struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// contains reports whether t falls in [Start, End).
func (w Window) contains(t time.Time) bool {
	return !t.Before(w.Start) && t.Before(w.End)
}

// Duration returns End − Start, or 0 for an empty window.
func (w Window) Duration() time.Duration {
	if !w.End.After(w.Start) {
		return 0
	}
	return w.End.Sub(w.Start)
}

// IsZero reports whether the window is unset.
func (w Window) IsZero() bool { return w.Start.IsZero() && w.End.IsZero() }

// overlap returns how much of [from, to) falls inside the window.
func (w Window) overlap(from, to time.Time) time.Duration {
	if from.Before(w.Start) {
		from = w.Start
	}
	if to.After(w.End) {
		to = w.End
	}
	if !to.After(from) {
		return 0
	}
	return to.Sub(from)
}
