package sweep

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/llmload/llmload/loadgen"
)

// loadJSON is how a result stores its load: {"kind": "concurrency",
// "concurrency": 8}, {"kind": "poisson", "rate": 3.2}, {"kind": "gamma",
// "rate": 3.2, "burstiness": 0.5}, {"kind": "schedule"}, with the ramp,
// the cap on requests in flight and the arrivals' seed when set. The ramp
// is a setting, so it is text ("30s") as a person gives it.
type loadJSON struct {
	Kind        string       `json:"kind"`
	Concurrency int          `json:"concurrency,omitempty"`
	Ramp        durationText `json:"ramp,omitempty"`
	Rate        float64      `json:"rate,omitempty"`
	Burstiness  float64      `json:"burstiness,omitempty"`
	MaxInFlight int          `json:"max_in_flight,omitempty"`
	Seed        uint64       `json:"seed,omitempty"`
}

// durationText is a duration written as text ("1m30s"). It reads that, and
// a number of nanoseconds, as files written before wrote a ramp.
type durationText time.Duration

// MarshalJSON writes the duration as time.Duration.String does.
func (d durationText) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration's text or a number of nanoseconds.
func (d *durationText) UnmarshalJSON(b []byte) error {
	var ns int64
	if err := json.Unmarshal(b, &ns); err == nil {
		*d = durationText(ns)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("sweep: a ramp is %s: want a duration such as \"30s\"", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("sweep: a ramp is %q: want a duration such as \"30s\": %w", s, err)
	}
	*d = durationText(v)
	return nil
}

func encodeLoad(l loadgen.Load) *loadJSON {
	switch l := l.(type) {
	case loadgen.Closed:
		return &loadJSON{Kind: "concurrency", Concurrency: max(l.Streams, 1), Ramp: durationText(l.Ramp)}
	case loadgen.Open:
		return &loadJSON{Kind: l.Arrival.String(), Rate: l.Rate, Burstiness: l.Burstiness, MaxInFlight: l.MaxInFlight, Seed: l.Seed}
	case loadgen.Schedule:
		return &loadJSON{Kind: "schedule", MaxInFlight: l.MaxInFlight}
	}
	return nil
}

// decodeLoad reads a stored load; a schedule's times are not stored, and
// its Due is nil.
func decodeLoad(j *loadJSON) (loadgen.Load, error) {
	if j == nil {
		return nil, nil
	}
	switch j.Kind {
	case "concurrency":
		return loadgen.Closed{Streams: j.Concurrency, Ramp: time.Duration(j.Ramp)}, nil
	case "schedule":
		return loadgen.Schedule{MaxInFlight: j.MaxInFlight}, nil
	}
	var a loadgen.Arrival
	if err := a.UnmarshalText([]byte(j.Kind)); err != nil {
		return nil, fmt.Errorf("sweep: a run's load is of kind %q: want concurrency, constant, poisson, gamma or schedule", j.Kind)
	}
	return loadgen.Open{Rate: j.Rate, Arrival: a, Burstiness: j.Burstiness, MaxInFlight: j.MaxInFlight, Seed: j.Seed}, nil
}

// result is a Result as stored: its load in the document's form.
type result Result

// MarshalJSON writes the result, its load as {"kind": ..., ...}.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		result
		Load *loadJSON `json:"load"`
	}{result(r), encodeLoad(r.Load)})
}

// UnmarshalJSON reads a result written by MarshalJSON.
func (r *Result) UnmarshalJSON(b []byte) error {
	var v struct {
		*result
		Load *loadJSON `json:"load"`
	}
	v.result = (*result)(r)
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch r.Stopped {
	case loadgen.StopUnknown, loadgen.StopWindow, loadgen.StopRequests, loadgen.StopCanceled, loadgen.StopFailed:
	default:
		return fmt.Errorf("sweep: unknown stop reason %q (want window, requests, canceled or failed)", r.Stopped)
	}
	l, err := decodeLoad(v.Load)
	r.Load = l
	return err
}
