package metrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The one geometry every [Histogram] uses: values in microseconds from 1 µs to
// one hour, with three significant decimal digits. Any recorded duration is
// reported back within 0.1% of its true value, and every histogram can merge
// with every other without loss.
const (
	HistogramLowest  = time.Microsecond
	HistogramHighest = time.Hour
	HistogramDigits  = 3
)

// ErrDropped is returned by [Histogram.Merge] when some values of the source
// could not be merged. It is wrapped in a [*DroppedError].
var ErrDropped = errors.New("metrics: histogram values dropped")

// DroppedError reports how many values [Histogram.Merge] dropped.
type DroppedError struct {
	Dropped int64
}

// Error says how many values were dropped.
func (e *DroppedError) Error() string {
	return fmt.Sprintf("metrics: %d histogram values dropped in merge (outside 1µs–1h)", e.Dropped)
}

// Unwrap returns [ErrDropped].
func (e *DroppedError) Unwrap() error { return ErrDropped }

// Histogram is a high-dynamic-range histogram of durations, backed by
// HdrHistogram with the fixed geometry above (about 188 KB). Its zero value is
// an empty histogram ready to use.
//
// Durations below 1 µs are recorded as 0; durations above an hour are
// recorded as an hour and counted in [Histogram.Clamped].
//
// A Histogram is not safe for concurrent use.
type Histogram struct {
	h       *hdrhistogram.Histogram
	clamped int64
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{h: newHDR()}
}

func newHDR() *hdrhistogram.Histogram {
	return hdrhistogram.New(int64(HistogramLowest/time.Microsecond), int64(HistogramHighest/time.Microsecond), HistogramDigits)
}

func (h *Histogram) init() {
	if h.h == nil {
		h.h = newHDR()
	}
}

func toMicros(d time.Duration) (v int64, clamped bool) {
	switch {
	case d < 0:
		return 0, true
	case d > HistogramHighest:
		return int64(HistogramHighest / time.Microsecond), true
	}
	return int64(d / time.Microsecond), false
}

// Record adds one duration.
func (h *Histogram) Record(d time.Duration) {
	h.RecordN(d, 1)
}

// RecordN adds n equal durations in one step; n ≤ 0 records nothing.
func (h *Histogram) RecordN(d time.Duration, n int64) {
	if n <= 0 {
		return
	}
	h.init()
	v, clamped := toMicros(d)
	if clamped {
		h.clamped += n
	}
	_ = h.h.RecordValues(v, n) // v is within the geometry, so this cannot fail
}

// Count returns the number of recorded values.
func (h *Histogram) Count() int64 {
	if h == nil || h.h == nil {
		return 0
	}
	return h.h.TotalCount()
}

// Clamped returns how many recorded values were outside 0–1 h and were
// recorded at the nearest end instead.
func (h *Histogram) Clamped() int64 {
	if h == nil {
		return 0
	}
	return h.clamped
}

// Quantile returns the value at quantile q, with q in [0, 1]: 0.5 is the
// median, 0.99 the 99th percentile. It is the smallest recorded value (to the
// histogram's precision) such that a fraction q of all values are at or below
// it. An empty histogram returns 0.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.Count() == 0 || math.IsNaN(q) {
		return 0
	}
	q = min(max(q, 0), 1)
	return time.Duration(h.h.ValueAtPercentile(q*100)) * time.Microsecond
}

// Mean returns the mean of the recorded values, or 0 when there are none.
func (h *Histogram) Mean() time.Duration {
	if h.Count() == 0 {
		return 0
	}
	return time.Duration(h.h.Mean() * float64(time.Microsecond))
}

// Min returns the smallest recorded value, or 0 when there are none.
func (h *Histogram) Min() time.Duration {
	if h.Count() == 0 {
		return 0
	}
	return time.Duration(h.h.Min()) * time.Microsecond
}

// Max returns the largest recorded value, or 0 when there are none.
func (h *Histogram) Max() time.Duration {
	if h.Count() == 0 {
		return 0
	}
	return time.Duration(h.h.Max()) * time.Microsecond
}

// Merge adds every value of o to h. It returns a [*DroppedError] if any value
// could not be added; the others are added regardless.
func (h *Histogram) Merge(o *Histogram) error {
	if o.Count() == 0 {
		if o != nil {
			h.clamped += o.clamped
		}
		return nil
	}
	h.init()
	h.clamped += o.clamped
	if dropped := h.h.Merge(o.h); dropped > 0 {
		return &DroppedError{Dropped: dropped}
	}
	return nil
}

// Reset empties the histogram, keeping its memory.
func (h *Histogram) Reset() {
	if h.h != nil {
		h.h.Reset()
	}
	h.clamped = 0
}

// Clone returns an independent copy of h.
func (h *Histogram) Clone() *Histogram {
	c := &Histogram{clamped: h.clamped}
	if h.h != nil {
		c.h = h.h.Clone()
	}
	return c
}

// Summary returns the histogram's count, mean, extremes and the quantiles
// every report shows.
func (h *Histogram) Summary() Distribution {
	return Distribution{
		Count: h.Count(),
		Min:   h.Min(),
		Mean:  h.Mean(),
		P50:   h.Quantile(0.50),
		P90:   h.Quantile(0.90),
		P99:   h.Quantile(0.99),
		Max:   h.Max(),
	}
}

// MarshalText encodes the histogram in HdrHistogram's V2 compressed,
// base64 form (a string beginning "HISTF"), readable by every HdrHistogram
// implementation. The clamped count is not part of that format.
func (h *Histogram) MarshalText() ([]byte, error) {
	hh := h.h
	if hh == nil {
		hh = newHDR()
	}
	b, err := hh.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("metrics: encode histogram: %w", err)
	}
	return b, nil
}

// UnmarshalText decodes a histogram written by [Histogram.MarshalText]. A
// histogram of another geometry is merged into this one's geometry; values
// that do not fit are an error.
func (h *Histogram) UnmarshalText(b []byte) error {
	d, err := hdrhistogram.Decode(b)
	if err != nil {
		return fmt.Errorf("metrics: decode histogram: %w", err)
	}
	fresh := newHDR()
	if dropped := fresh.Merge(d); dropped > 0 {
		return &DroppedError{Dropped: dropped}
	}
	h.h, h.clamped = fresh, 0
	return nil
}

// MarshalJSON encodes the histogram as a JSON string holding its V2
// compressed encoding.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	b, err := h.MarshalText()
	if err != nil {
		return nil, err
	}
	return json.Marshal(string(b))
}

// UnmarshalJSON decodes a JSON string written by [Histogram.MarshalJSON].
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("metrics: histogram JSON must be a string: %w", err)
	}
	return h.UnmarshalText([]byte(s))
}

// Distribution is a histogram reduced to the figures reports show. Durations
// are exact to the histogram's precision (0.1%).
type Distribution struct {
	Count int64         `json:"count"`
	Min   time.Duration `json:"min"`
	Mean  time.Duration `json:"mean"`
	P50   time.Duration `json:"p50"`
	P90   time.Duration `json:"p90"`
	P99   time.Duration `json:"p99"`
	Max   time.Duration `json:"max"`
}
