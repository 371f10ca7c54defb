package metrics

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The one geometry every [Histogram] uses: values in microseconds from 1 µs to
// one hour, with three significant decimal digits. Every histogram can merge
// with every other without loss. See [Histogram.Quantile] for the resolution
// of quantiles; count, minimum, maximum and mean are exact.
const (
	histogramLowest  = time.Microsecond
	histogramHighest = time.Hour
	histogramDigits  = 3
)

// droppedError is returned when some values of a histogram read back
// ([Histogram.UnmarshalJSON]) or merged ([MergeRecordings]) do not fit the
// geometry: it says how many.
type droppedError struct {
	dropped int64
}

// Error says how many values were dropped.
func (e *droppedError) Error() string {
	return fmt.Sprintf("metrics: %d histogram values dropped in merge (outside 1µs–1h)", e.dropped)
}

// errNilHistogram is returned by [Histogram.merge] called on a nil
// *Histogram, which has nowhere to put the values.
var errNilHistogram = errors.New("metrics: Merge into a nil *Histogram")

// Histogram is a high-dynamic-range histogram of durations, backed by
// HdrHistogram with the fixed geometry above (about 188 KB). Its zero value is
// an empty histogram ready to use, and so is a nil *Histogram for every method
// but UnmarshalJSON.
//
// Beside the buckets it keeps the count, the minimum, the maximum and the
// sum of the values exactly, to the nanosecond, so Count and the Min, Max
// and Mean of its [Histogram.Summary] are what was recorded, not a bucket's bound. Only the quantiles are
// bucketed (see [Histogram.Quantile]).
//
// Durations below 0 are recorded as 0; durations above an hour are recorded
// as an hour. Both are counted, and the count is written as "clamped" in
// its JSON.
//
// A Histogram is not safe for concurrent use.
type Histogram struct {
	h       *hdrhistogram.Histogram
	clamped int64

	// The exact figures, for values recorded in this process. A histogram
	// decoded from text has only its buckets: estimated is then set, and
	// Min, Max and Mean are the buckets' estimates.
	min, max     time.Duration
	sumHi, sumLo uint64 // the sum of the values in nanoseconds, 128 bits
	estimated    bool
}

func newHDR() *hdrhistogram.Histogram {
	return hdrhistogram.New(int64(histogramLowest/time.Microsecond), int64(histogramHighest/time.Microsecond), histogramDigits)
}

func (h *Histogram) init() {
	if h.h == nil {
		h.h = newHDR()
	}
}

// clamp returns d within the histogram's range, and whether it was outside.
func clamp(d time.Duration) (time.Duration, bool) {
	switch {
	case d < 0:
		return 0, true
	case d > histogramHighest:
		return histogramHighest, true
	}
	return d, false
}

// Record adds one duration.
func (h *Histogram) Record(d time.Duration) {
	h.recordN(d, 1)
}

// recordN adds n equal durations in one step; n ≤ 0 records nothing.
func (h *Histogram) recordN(d time.Duration, n int64) {
	if n <= 0 {
		return
	}
	h.init()
	d, clamped := clamp(d)
	if clamped {
		h.clamped += n
	}
	if h.h.TotalCount() == 0 {
		h.min, h.max = d, d
	} else {
		h.min, h.max = min(h.min, d), max(h.max, d)
	}
	h.addSum(uint64(d), uint64(n))
	_ = h.h.RecordValues(int64(d/time.Microsecond), n) // within the geometry, so this cannot fail
}

// addSum adds n values of d nanoseconds to the exact sum.
func (h *Histogram) addSum(d, n uint64) {
	hi, lo := bits.Mul64(d, n)
	var carry uint64
	h.sumLo, carry = bits.Add64(h.sumLo, lo, 0)
	h.sumHi += hi + carry
}

// count returns the number of recorded values.
func (h *Histogram) count() int64 {
	if h == nil || h.h == nil {
		return 0
	}
	return h.h.TotalCount()
}

// clampedCount returns how many recorded values were outside 0–1 h and were
// recorded at the nearest end instead.
func (h *Histogram) clampedCount() int64 {
	if h == nil {
		return 0
	}
	return h.clamped
}

// Quantile returns the value at quantile q, with q in [0, 1]: 0.5 is the
// median, 0.99 the 99th percentile. It is the value at rank q·count,
// rounded to the nearest rank and at least 1, of the recorded values in
// order (nearest rank: the median of two values is the lower one), to the
// histogram's resolution. An empty histogram returns 0.
//
// Resolution: values are kept in whole microseconds, one bucket per
// microsecond below 2.048 ms and buckets 1/2048 to 1/1024 of their value
// wide above it, and a quantile is reported as the top of its bucket. So
// Quantile returns the true value less at most 1 µs below 2.048 ms, and at
// most 0.1% more above it (100 ms may read 100.031 ms). The result is kept
// within the exact Min and Max: Quantile(0) is the minimum, Quantile(1) the
// maximum, and a histogram of equal values returns that value at every q.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.count() == 0 || math.IsNaN(q) {
		return 0
	}
	q = min(max(q, 0), 1)
	v := time.Duration(h.h.ValueAtPercentile(q*100)) * time.Microsecond
	return min(max(v, h.minimum()), h.maximum())
}

// mean returns the mean of the recorded values, or 0 when there are none. It
// is exact, to the nanosecond, for values recorded in this process.
func (h *Histogram) mean() time.Duration {
	n := h.count()
	if n == 0 {
		return 0
	}
	if h.estimated {
		return time.Duration(h.h.Mean() * float64(time.Microsecond))
	}
	// The mean is at most an hour, so the quotient fits: sumHi < n.
	mean, _ := bits.Div64(h.sumHi, h.sumLo, uint64(n))
	return time.Duration(mean)
}

// minimum returns the smallest recorded value, or 0 when there are none. It is
// exact for values recorded in this process.
func (h *Histogram) minimum() time.Duration {
	if h.count() == 0 {
		return 0
	}
	if h.estimated {
		return time.Duration(h.h.Min()) * time.Microsecond
	}
	return h.min
}

// maximum returns the largest recorded value, or 0 when there are none. It is
// exact for values recorded in this process.
func (h *Histogram) maximum() time.Duration {
	if h.count() == 0 {
		return 0
	}
	if h.estimated {
		return time.Duration(h.h.Max()) * time.Microsecond
	}
	return h.max
}

// merge adds every value of o to h; a nil or empty o adds nothing. It
// returns a *droppedError if any value could not be added (the others are
// added regardless), and [errNilHistogram] when h is nil.
func (h *Histogram) merge(o *Histogram) error {
	if h == nil {
		return errNilHistogram
	}
	if o == nil {
		return nil
	}
	h.clamped += o.clamped
	if o.count() == 0 {
		return nil
	}
	h.init()
	if h.h.TotalCount() == 0 {
		h.min, h.max = o.min, o.max
	} else {
		h.min, h.max = min(h.min, o.min), max(h.max, o.max)
	}
	var carry uint64
	h.sumLo, carry = bits.Add64(h.sumLo, o.sumLo, 0)
	h.sumHi += o.sumHi + carry
	h.estimated = h.estimated || o.estimated
	if dropped := h.h.Merge(o.h); dropped > 0 {
		return &droppedError{dropped: dropped}
	}
	return nil
}

// reset empties the histogram, keeping its memory.
func (h *Histogram) reset() {
	if h == nil {
		return
	}
	if h.h != nil {
		h.h.Reset()
	}
	*h = Histogram{h: h.h}
}

// clone returns an independent copy of h; the copy of a nil histogram is an
// empty one.
func (h *Histogram) clone() *Histogram {
	if h == nil {
		return &Histogram{}
	}
	c := *h
	if h.h != nil {
		c.h = h.h.Clone()
	}
	return &c
}

// Summary returns the histogram's count, mean, extremes and the quantiles
// every report shows.
func (h *Histogram) Summary() Distribution {
	return Distribution{
		Count: h.count(),
		Min:   h.minimum(),
		Mean:  h.mean(),
		P50:   h.Quantile(0.50),
		P90:   h.Quantile(0.90),
		P99:   h.Quantile(0.99),
		Max:   h.maximum(),
	}
}

// encodeV2 encodes the histogram in HdrHistogram's V2 compressed,
// base64 form (a string beginning "HISTF"), readable by every HdrHistogram
// implementation. The format holds the buckets alone: the clamped count
// and the exact minimum, maximum and mean are not part of it.
func (h *Histogram) encodeV2() ([]byte, error) {
	var hh *hdrhistogram.Histogram
	if h != nil {
		hh = h.h
	}
	if hh == nil {
		hh = newHDR()
	}
	b, err := hh.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("metrics: encode histogram: %w", err)
	}
	return b, nil
}

// decodeV2 decodes a histogram written by [Histogram.encodeV2]. A
// histogram of another geometry is merged into this one's geometry; values
// that do not fit are an error. The format has no exact figures, so the
// decoded histogram's Min, Max and Mean are its buckets' estimates (within
// the resolution [Histogram.Quantile] describes), and so are those of any
// histogram it is merged into.
//
// A histogram whose geometry would take more than [maxDecodedCounts]
// buckets (an extreme range, or more significant digits) is refused before
// anything is allocated for it.
func (h *Histogram) decodeV2(b []byte) error {
	if err := checkGeometry(b); err != nil {
		return fmt.Errorf("metrics: decode histogram: %w", err)
	}
	d, err := hdrhistogram.Decode(b)
	if err != nil {
		return fmt.Errorf("metrics: decode histogram: %w", err)
	}
	fresh := newHDR()
	if dropped := fresh.Merge(d); dropped > 0 {
		return &droppedError{dropped: dropped}
	}
	*h = Histogram{h: fresh, estimated: fresh.TotalCount() > 0}
	return nil
}

// histogramJSON is a histogram's JSON form: its buckets in HdrHistogram's
// V2 encoding, and beside them the figures the encoding does not hold.
type histogramJSON struct {
	V2      string `json:"v2"`
	Min     *int64 `json:"min_ns,omitempty"`
	Max     *int64 `json:"max_ns,omitempty"`
	Sum     string `json:"sum_ns,omitempty"` // decimal: it may need 128 bits
	Clamped int64  `json:"clamped,omitempty"`
}

// MarshalJSON encodes the histogram as a JSON object: "v2" holds its
// buckets in HdrHistogram's V2 compressed, base64 encoding (a string
// beginning "HISTF", readable by every HdrHistogram implementation), and "min_ns", "max_ns" and "sum_ns" its exact
// minimum, maximum and sum, in nanoseconds, so that a histogram read back,
// or merged from several read back, has the exact figures of the values
// recorded. A histogram that has only its buckets' estimates (one decoded
// from the bare V2 text, or merged with one) writes "v2" alone. "clamped"
// counts the values recorded at the ends of the range.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	b, err := h.encodeV2()
	if err != nil {
		return nil, err
	}
	j := histogramJSON{V2: string(b), Clamped: h.clampedCount()}
	if h.count() > 0 && !h.estimated {
		lo, hi := int64(h.min), int64(h.max)
		j.Min, j.Max = &lo, &hi
		sum := new(big.Int).Lsh(new(big.Int).SetUint64(h.sumHi), 64)
		j.Sum = sum.Or(sum, new(big.Int).SetUint64(h.sumLo)).String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes what [Histogram.MarshalJSON] writes, and a bare
// JSON string of the V2 encoding, as files written before the exact
// figures were kept hold (their Min, Max and Mean are then the buckets'
// estimates). Exact figures that contradict the buckets, or one another,
// are an error.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var j histogramJSON
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &j.V2); err != nil {
			return fmt.Errorf("metrics: histogram JSON: %w", err)
		}
	} else if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("metrics: histogram JSON must be an object with \"v2\", or a string: %w", err)
	}
	var d Histogram
	if err := d.decodeV2([]byte(j.V2)); err != nil {
		return err
	}
	if j.Clamped < 0 || j.Clamped > d.count() {
		return fmt.Errorf("metrics: histogram JSON: %d clamped values of %d", j.Clamped, d.count())
	}
	d.clamped = j.Clamped
	if j.Min != nil || j.Max != nil || j.Sum != "" {
		if err := d.setExact(j); err != nil {
			return err
		}
	}
	*h = d
	return nil
}

// setExact restores the exact figures of a histogram decoded from its
// buckets, checking them against the buckets.
func (h *Histogram) setExact(j histogramJSON) error {
	n := h.count()
	bad := func(why string) error { return fmt.Errorf("metrics: histogram JSON: %s", why) }
	if j.Min == nil || j.Max == nil || j.Sum == "" {
		return bad("min_ns, max_ns and sum_ns go together")
	}
	if n == 0 {
		return bad("exact figures of an empty histogram")
	}
	lo, hi := time.Duration(*j.Min), time.Duration(*j.Max)
	if lo < 0 || hi > histogramHighest || lo > hi {
		return bad(fmt.Sprintf("min %v and max %v are not an interval of 0–1h", lo, hi))
	}
	// The exact extremes fall in the buckets of the recorded ones.
	if !h.h.ValuesAreEquivalent(int64(lo/time.Microsecond), h.h.ValueAtPercentile(0)) ||
		!h.h.ValuesAreEquivalent(int64(hi/time.Microsecond), h.h.ValueAtPercentile(100)) {
		return bad(fmt.Sprintf("min %v or max %v is not in the buckets' range", lo, hi))
	}
	sum, ok := new(big.Int).SetString(j.Sum, 10)
	if !ok || sum.Sign() < 0 || sum.BitLen() > 128 {
		return bad(fmt.Sprintf("sum_ns %q is not a count of nanoseconds", j.Sum))
	}
	count := big.NewInt(n)
	if sum.Cmp(new(big.Int).Mul(count, big.NewInt(int64(lo)))) < 0 || sum.Cmp(new(big.Int).Mul(count, big.NewInt(int64(hi)))) > 0 {
		return bad(fmt.Sprintf("sum_ns %s is not between %d × min and %d × max", j.Sum, n, n))
	}
	mask := new(big.Int).SetUint64(math.MaxUint64)
	h.sumLo = new(big.Int).And(sum, mask).Uint64()
	h.sumHi = new(big.Int).Rsh(sum, 64).Uint64()
	h.min, h.max, h.estimated = lo, hi, false
	return nil
}

// Distribution is a histogram reduced to the figures reports show. Count,
// Min, Mean and Max are exact; the quantiles have the resolution that
// [Histogram.Quantile] describes (1 µs, or 0.1% above 2.048 ms).
type Distribution struct {
	Count int64         `json:"count"`
	Min   time.Duration `json:"min"`
	Mean  time.Duration `json:"mean"`
	P50   time.Duration `json:"p50"`
	P90   time.Duration `json:"p90"`
	P99   time.Duration `json:"p99"`
	Max   time.Duration `json:"max"`
}

// maxDecodedCounts bounds the buckets of a histogram decoded from its V2
// encoding: four times the recorder's own geometry (about 23,000 buckets),
// so a histogram of a neighbouring geometry reads and one of an extreme
// range (1 to 2^62 at 5 digits: 6 million buckets, 49 MB) does not.
const maxDecodedCounts = 1 << 17

// checkGeometry reads the header of a V2-encoded histogram and refuses a
// geometry of more than maxDecodedCounts buckets.
func checkGeometry(b []byte) error {
	// The first 8 bytes of the text's decoding are the cookie and the
	// compressed length; the zlib stream after them starts with the
	// 40-byte header, which is all that is inflated here.
	raw, err := base64.StdEncoding.DecodeString(string(b))
	if err != nil || len(raw) < 8 {
		return nil // hdrhistogram.Decode says what is wrong
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		return nil
	}
	defer z.Close()
	var hdr struct {
		Cookie, Payload, Offset, Digits int32
		Lowest, Highest                 int64
	}
	if err := binary.Read(z, binary.BigEndian, &hdr); err != nil {
		return nil
	}
	if n, ok := geometryCounts(hdr.Lowest, hdr.Highest, hdr.Digits); !ok || n > maxDecodedCounts {
		return fmt.Errorf("its geometry (%d to %d at %d digits) is beyond what a recording holds", hdr.Lowest, hdr.Highest, hdr.Digits)
	}
	return nil
}

// geometryCounts returns about how many buckets HdrHistogram allocates for
// a geometry, or false for one it refuses anyway.
func geometryCounts(lowest, highest int64, digits int32) (float64, bool) {
	if digits < 0 || digits > 5 || lowest < 1 || highest < 2*lowest {
		return 0, false
	}
	sub := math.Exp2(math.Ceil(math.Log2(2 * math.Pow10(int(digits)))))
	buckets := max(math.Ceil(math.Log2(float64(highest)/float64(lowest))-math.Log2(sub))+1, 1)
	return (buckets + 1) * sub / 2, true
}
