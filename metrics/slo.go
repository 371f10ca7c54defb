package metrics

import (
	"encoding/json"
	"fmt"
	"time"
)

// SLO holds optional service-level objectives. A zero field is not checked.
// A request meets the SLO when it completed and every set objective holds.
// A request that ended without completing (cut short by cancellation, such
// as the end of a window) has missed it when it had already missed an
// objective as it ended: no first token within TTFT of being written, or a
// first token later than that, or no end within Latency; TPOT, an average
// over the whole output, is not judged before the end.
//
// As JSON, each objective set is a duration string as [time.Duration.String]
// writes it and [time.ParseDuration] reads it: {"ttft":"250ms"}.
type SLO struct {
	TTFT    time.Duration
	TPOT    time.Duration
	Latency time.Duration
	// TTFO is an objective on the time to the first answer token, after
	// any reasoning ([Timeline.TTFO]): what the end user of a reasoning
	// model waits for. A request with no answer token misses it.
	TTFO time.Duration
}

// met reports whether tl completed within every set objective.
func (s SLO) met(tl *Timeline) bool {
	if !tl.OK() {
		return false
	}
	return (s.TTFT == 0 || tl.TTFT() <= s.TTFT) &&
		(s.TPOT == 0 || tl.tpot() <= s.TPOT) &&
		(s.Latency == 0 || tl.Latency() <= s.Latency) &&
		(s.TTFO == 0 || (!tl.FirstAnswer.IsZero() && tl.TTFO() <= s.TTFO))
}

// missed reports whether tl, which ended without completing (cut short by
// cancellation, such as the end of a window), had already missed an
// objective when it ended: no first token within TTFT of being written,
// or a first token later than that, or no end within Latency. TPOT, an
// average over the whole output, is not judged before the end.
func (s SLO) missed(tl *Timeline) bool {
	if tl.Sent.IsZero() || tl.End.IsZero() {
		return false
	}
	waited := tl.End.Sub(tl.Sent)
	switch {
	case s.TTFT > 0 && tl.First.IsZero() && waited > s.TTFT:
		return true
	case s.TTFT > 0 && !tl.First.IsZero() && tl.TTFT() > s.TTFT:
		return true
	case s.Latency > 0 && waited > s.Latency:
		return true
	case s.TTFO > 0 && tl.FirstAnswer.IsZero() && waited > s.TTFO:
		return true
	case s.TTFO > 0 && !tl.FirstAnswer.IsZero() && tl.TTFO() > s.TTFO:
		return true
	}
	return false
}

// sloJSON is an SLO as JSON.
type sloJSON struct {
	TTFT    durationText `json:"ttft,omitempty"`
	TPOT    durationText `json:"tpot,omitempty"`
	Latency durationText `json:"latency,omitempty"`
	TTFO    durationText `json:"ttfo,omitempty"`
}

// MarshalJSON writes the objectives set, each as a duration string.
func (s SLO) MarshalJSON() ([]byte, error) {
	return json.Marshal(sloJSON{durationText(s.TTFT), durationText(s.TPOT), durationText(s.Latency), durationText(s.TTFO)})
}

// UnmarshalJSON reads objectives written by MarshalJSON.
func (s *SLO) UnmarshalJSON(b []byte) error {
	var j sloJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = SLO{TTFT: time.Duration(j.TTFT), TPOT: time.Duration(j.TPOT), Latency: time.Duration(j.Latency), TTFO: time.Duration(j.TTFO)}
	return nil
}

// durationText is a duration written as a string: "1.5s".
type durationText time.Duration

func (d durationText) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d *durationText) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("metrics: SLO: %w", err)
	}
	*d = durationText(v)
	return nil
}
