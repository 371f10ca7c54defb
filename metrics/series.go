package metrics

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"time"
)

// seriesCap is the most buckets a series keeps. Past it, adjacent buckets
// merge in pairs and the interval doubles, so a series of one-second
// buckets holds an hour at full resolution and ten hours in 2,250 buckets
// of 16 s.
const seriesCap = 3600

// Series is a recording over time, in buckets of Every: what the requests
// did in each, from Start (the first bucket's start, a multiple of Every
// since the Unix epoch) to End (the last request's end). A bucket's rates
// and averages are over the part of it between the recording's first
// request and End.
//
// Each column holds a value for every bucket. A request counts in the
// bucket where it started (Started) and in the one where it ended
// (Finished or Failed; one cut at the end of a window is in neither); its
// time to first token in the bucket where its first token arrived; each
// gap between tokens in the bucket where its later token arrived. A
// bucket's percentiles come from a histogram of log-spaced bins, 32 for
// each doubling, so they are within 1.6% of the exact ones (0 where the
// bucket has no value); percentiles of merged buckets are exact to the
// same bins. Durations are in milliseconds. The server's columns are
// empty unless a caller that samples the server sets them (the matrix
// does).
type Series struct {
	Start time.Time     `json:"start"`
	End   time.Time     `json:"end"`
	Every time.Duration `json:"every_ns"`
	// Window is the recording's measurement window, zero without one.
	Window Window `json:"window,omitzero"`

	// TokensPerSec is the output tokens that arrived a second.
	TokensPerSec []float64 `json:"tok_s"`
	// Started counts the requests begun, Finished those completed,
	// Failed those that failed (cancellations are not failures).
	Started  []int `json:"started"`
	Finished []int `json:"finished"`
	Failed   []int `json:"failed"`
	// The quantiles of time to first token and of the gaps between tokens.
	TTFTP50 []float64 `json:"ttft_p50_ms"`
	TTFTP90 []float64 `json:"ttft_p90_ms"`
	TTFTP99 []float64 `json:"ttft_p99_ms"`
	ITLP50  []float64 `json:"itl_p50_ms"`
	ITLP90  []float64 `json:"itl_p90_ms"`
	ITLP99  []float64 `json:"itl_p99_ms"`
	// Decoding is the client's streams between their first token and
	// their end, Waiting those sent and waiting for a first token, each on
	// average over the bucket.
	Decoding []float64 `json:"decoding"`
	Waiting  []float64 `json:"waiting"`

	// The server's requests running and waiting and its KV cache usage
	// (0–1), as its /metrics said in the bucket (the last reading before
	// it where none was taken in it), and its preemptions in the bucket.
	ServerRunning     []float64 `json:"server_running,omitempty"`
	ServerWaiting     []float64 `json:"server_waiting,omitempty"`
	ServerKVUsage     []float64 `json:"server_kv_usage,omitempty"`
	ServerPreemptions []float64 `json:"server_preemptions,omitempty"`

	// From, Tokens, TTFTBins and ITLBins are what a series merges from
	// (see [MergeRecordings]): the first request's start, each bucket's
	// output tokens, and its time-to-first-token and inter-token sketches
	// as pairs of bin and count. Only a [Recording]'s series holds them;
	// [Recorder.Series] leaves them out.
	From     time.Time  `json:"from,omitzero"`
	Tokens   []int64    `json:"tokens,omitempty"`
	TTFTBins [][]uint32 `json:"ttft_bins,omitempty"`
	ITLBins  [][]uint32 `json:"itl_bins,omitempty"`
}

// sketch counts durations in log-linear bins: below 64 ns one bin a
// nanosecond, above it 32 bins for each doubling, so a bin's middle is
// within 1/64 of any value in it. It keeps only the bins it counted, in
// order of their keys, and at most sketchMaxBins of them: past that the
// lowest two merge, as DDSketch does, since a series shows the median and
// the tail. Unlike an HDR histogram of the same accuracy (several KB each),
// a bucket's sketch costs a few hundred bytes, and two sketches of the same
// bins merge exactly.
type sketch struct {
	bins []sketchBin
}

type sketchBin struct {
	key uint16
	n   uint32
}

const (
	sketchSubBits = 5
	sketchMaxBins = 128
)

// sketchKey returns the bin of d (negative counts as 0).
func sketchKey(d time.Duration) uint16 {
	v := uint64(max(d, 0))
	e := bits.Len64(v)
	if e <= sketchSubBits+1 {
		return uint16(v)
	}
	shift := e - 1 - sketchSubBits
	m := (v >> shift) & (1<<sketchSubBits - 1)
	return uint16((e-sketchSubBits)<<sketchSubBits) | uint16(m)
}

// sketchValue returns the middle of a bin.
func sketchValue(key uint16) time.Duration {
	if key < 2<<sketchSubBits {
		return time.Duration(key)
	}
	shift := uint(key>>sketchSubBits) - 1
	lo := uint64(1<<sketchSubBits|key&(1<<sketchSubBits-1)) << shift
	return time.Duration(lo + (uint64(1)<<shift)/2)
}

func (s *sketch) add(key uint16, n uint32) {
	lo, hi := 0, len(s.bins)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.bins[m].key < key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(s.bins) && s.bins[lo].key == key {
		s.bins[lo].n += n
		return
	}
	s.bins = slices.Insert(s.bins, lo, sketchBin{key, n})
	if len(s.bins) > sketchMaxBins {
		s.bins[1].n += s.bins[0].n
		s.bins = slices.Delete(s.bins, 0, 1)
	}
}

func (s *sketch) record(d time.Duration) { s.add(sketchKey(d), 1) }

func (s *sketch) merge(o *sketch) {
	for _, b := range o.bins {
		s.add(b.key, b.n)
	}
}

// quantile returns the q-quantile (0–1) in milliseconds, the value at the
// rank ⌈q·count⌉ as HdrHistogram gives it, or 0 for an empty sketch.
func (s *sketch) quantile(q float64) float64 {
	var total uint64
	for _, b := range s.bins {
		total += uint64(b.n)
	}
	if total == 0 {
		return 0
	}
	rank := max(uint64(math.Ceil(q*float64(total))), 1)
	var seen uint64
	for _, b := range s.bins {
		if seen += uint64(b.n); seen >= rank {
			return sigFigs(float64(sketchValue(b.key)) / float64(time.Millisecond))
		}
	}
	return sigFigs(float64(sketchValue(s.bins[len(s.bins)-1].key)) / float64(time.Millisecond))
}

// seriesBucket is one bucket of a series in progress.
type seriesBucket struct {
	tokens                    int64
	started, finished, failed int32
	decoding, waiting         float64 // stream-seconds
	ttft, itl                 sketch
}

func (b *seriesBucket) merge(o *seriesBucket) {
	b.tokens += o.tokens
	b.started += o.started
	b.finished += o.finished
	b.failed += o.failed
	b.decoding += o.decoding
	b.waiting += o.waiting
	b.ttft.merge(&o.ttft)
	b.itl.merge(&o.itl)
}

// seriesPart is a series in progress: buckets numbered from first, bucket
// k covering [k·every, (k+1)·every) since the Unix epoch, so parts kept
// apart (one a shard of the recorder) line up once at the same interval.
type seriesPart struct {
	every time.Duration
	first int64
	b     []seriesBucket
	gaps  *gapCounts // the gaps of the bucket most recently given one, not yet in its sketch
}

// gapCounts counts the gaps of one bucket in every bin of a sketch, so that
// a gap costs an increment; they go into the bucket's sketch when gaps
// come for another bucket, when the part coarsens, and before it is read.
// A shard's gaps come in the order of their times, give or take a
// timeline's buffer, so nearly every gap goes to the bucket of the one
// before it.
type gapCounts struct {
	on     bool
	k      int64 // the bucket
	lo, hi uint16
	n      [1 << 11]uint32
}

// atNanos returns the bucket holding the Unix time ns.
func (p *seriesPart) atNanos(ns int64) *seriesBucket {
	if i := ns/int64(p.every) - p.first; i >= 0 && i < int64(len(p.b)) {
		return &p.b[i]
	}
	return p.at(time.Unix(0, ns))
}

// recordGaps counts n gaps of d, the later token at the Unix time ns.
func (p *seriesPart) recordGaps(ns int64, d time.Duration, n uint32) {
	if p.gaps == nil {
		p.gaps = new(gapCounts)
	}
	g := p.gaps
	k := ns / int64(p.every)
	if !g.on || g.k != k {
		p.spill()
		g.on, g.k, g.lo, g.hi = true, k, math.MaxUint16, 0
	}
	key := sketchKey(d)
	g.n[key] += n
	g.lo, g.hi = min(g.lo, key), max(g.hi, key)
}

// spill puts the counted gaps into their bucket's sketch.
func (p *seriesPart) spill() {
	g := p.gaps
	if g == nil || !g.on {
		return
	}
	g.on = false
	b := p.at(time.Unix(0, g.k*int64(p.every)))
	for key := int(g.lo); key <= int(g.hi); key++ {
		if g.n[key] > 0 {
			b.itl.add(uint16(key), g.n[key])
			g.n[key] = 0
		}
	}
}

// bucketOf returns the number of the bucket holding t.
func (p *seriesPart) bucketOf(t time.Time) int64 { return t.UnixNano() / int64(p.every) }

// coarsen merges the buckets in pairs and doubles the interval.
func (p *seriesPart) coarsen() {
	p.spill()
	p.every *= 2
	if len(p.b) == 0 {
		return
	}
	first := p.first / 2
	out := make([]seriesBucket, (p.first+int64(len(p.b))-1)/2-first+1)
	for i := range p.b {
		out[(p.first+int64(i))/2-first].merge(&p.b[i])
	}
	p.first, p.b = first, out
}

// cover makes the part hold the buckets of t0 to t1 (t0 ≤ t1), coarsening
// it while they would be more than seriesCap, and returns their numbers.
func (p *seriesPart) cover(t0, t1 time.Time) (k0, k1 int64) {
	for {
		k0, k1 = p.bucketOf(t0), p.bucketOf(t1)
		lo, hi := k0, k1
		if len(p.b) > 0 {
			lo, hi = min(lo, p.first), max(hi, p.first+int64(len(p.b))-1)
		}
		if hi-lo+1 <= seriesCap {
			if len(p.b) == 0 {
				p.first, p.b = lo, make([]seriesBucket, hi-lo+1)
				return k0, k1
			}
			if lo < p.first {
				p.b = append(make([]seriesBucket, p.first-lo, int64(len(p.b))+p.first-lo), p.b...)
				p.first = lo
			}
			if n := hi - p.first + 1; n > int64(len(p.b)) {
				p.b = append(p.b, make([]seriesBucket, n-int64(len(p.b)))...)
			}
			return k0, k1
		}
		p.coarsen()
	}
}

// at returns the bucket holding t.
func (p *seriesPart) at(t time.Time) *seriesBucket {
	k, _ := p.cover(t, t)
	return &p.b[k-p.first]
}

// spread adds the stream-seconds of [from, to) to each bucket they
// overlap, through add.
func (p *seriesPart) spread(from, to time.Time, add func(b *seriesBucket, secs float64)) {
	if !to.After(from) {
		return
	}
	k0, k1 := p.cover(from, to)
	for k := k0; k <= k1; k++ {
		bs := time.Unix(0, k*int64(p.every))
		be := bs.Add(p.every)
		s, e := maxTime(bs, from), minTime(be, to)
		if e.After(s) {
			add(&p.b[k-p.first], e.Sub(s).Seconds())
		}
	}
}

// add merges o into p, which has an interval of its own, or none yet.
func (p *seriesPart) add(o *seriesPart) {
	if len(o.b) == 0 {
		return
	}
	if p.every == 0 {
		p.every = o.every
	}
	for p.every < o.every {
		p.coarsen()
	}
	for {
		ratio := int64(p.every / o.every)
		t0 := time.Unix(0, o.first*int64(o.every))
		t1 := time.Unix(0, (o.first+int64(len(o.b))-1)*int64(o.every))
		every := p.every
		p.cover(t0, t1)
		if p.every != every {
			continue // coarsened: the ratio changed
		}
		for i := range o.b {
			p.b[(o.first+int64(i))/ratio-p.first].merge(&o.b[i])
		}
		return
	}
}

// series turns the part into its columns; from and to bound the recording
// (zero where unknown).
func (p *seriesPart) series(from, to time.Time) *Series {
	n := len(p.b)
	s := &Series{Start: time.Unix(0, p.first*int64(p.every)).UTC(), Every: p.every, End: to,
		TokensPerSec: make([]float64, n), Started: make([]int, n), Finished: make([]int, n), Failed: make([]int, n),
		TTFTP50: make([]float64, n), TTFTP90: make([]float64, n), TTFTP99: make([]float64, n),
		ITLP50: make([]float64, n), ITLP90: make([]float64, n), ITLP99: make([]float64, n),
		Decoding: make([]float64, n), Waiting: make([]float64, n)}
	if s.End.IsZero() {
		s.End = s.Start.Add(time.Duration(n) * p.every)
	}
	for i := range p.b {
		b := &p.b[i]
		bs := s.Start.Add(time.Duration(i) * p.every)
		be := bs.Add(p.every)
		if !from.IsZero() {
			bs = maxTime(bs, from)
		}
		be = minTime(be, s.End)
		secs := be.Sub(bs).Seconds()
		if secs <= 0 {
			secs = p.every.Seconds()
		}
		s.TokensPerSec[i] = sigFigs(float64(b.tokens) / secs)
		s.Started[i], s.Finished[i], s.Failed[i] = int(b.started), int(b.finished), int(b.failed)
		s.TTFTP50[i], s.TTFTP90[i], s.TTFTP99[i] = b.ttft.quantile(0.5), b.ttft.quantile(0.9), b.ttft.quantile(0.99)
		s.ITLP50[i], s.ITLP90[i], s.ITLP99[i] = b.itl.quantile(0.5), b.itl.quantile(0.9), b.itl.quantile(0.99)
		s.Decoding[i], s.Waiting[i] = sigFigs(b.decoding/secs), sigFigs(b.waiting/secs)
	}
	return s
}

// sigFigs rounds v to four significant digits, which is what a chart or a
// table shows, so a series stays small as JSON.
func sigFigs(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	return r
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// recordSeries adds a finished request to the recorder's own part of the
// series. The caller holds r.mu.
func (r *Recorder) recordSeries(tl *Timeline) {
	p := &r.series
	end := tl.End
	if end.IsZero() {
		end = tl.Last
	}
	if begun := firstSet(tl.Start, tl.Sent); !begun.IsZero() {
		p.at(begun).started++
	}
	switch {
	case end.IsZero():
	case tl.Kind == KindCanceled || (tl.Kind == KindNone && tl.Err == nil && !tl.OK()):
	case tl.Kind != KindNone || tl.Err != nil:
		p.at(end).failed++
	default:
		p.at(end).finished++
	}
	if !tl.First.IsZero() {
		p.at(tl.First).ttft.record(tl.TTFT())
	}
	if tl.Sent.IsZero() || end.IsZero() {
		return
	}
	waitEnd := end
	if !tl.First.IsZero() {
		waitEnd = tl.First
		p.spread(tl.First, end, func(b *seriesBucket, secs float64) { b.decoding += secs })
	}
	p.spread(tl.Sent, waitEnd, func(b *seriesBucket, secs float64) { b.waiting += secs })
}

// Series returns the recording over time, in buckets of [Recorder].Every
// (or a multiple of it, past 3,600 buckets), or nil when Every is 0 or
// nothing was recorded. Requests still in flight are in it only by their
// tokens and gaps so far.
func (r *Recorder) Series() *Series {
	s, _, _ := r.gather()
	return s
}

// gather returns the recording's series, the buckets of every shard it
// was made from and the recording's start; a nil series when Every is 0
// or nothing was recorded.
func (r *Recorder) gather() (*Series, seriesPart, time.Time) {
	all := seriesPart{every: r.Every}
	if r.Every <= 0 {
		return nil, all, time.Time{}
	}
	r.mu.Lock()
	all.add(&r.series)
	from, to := r.tally.from, maxTime(r.tally.to, r.tally.last)
	r.mu.Unlock()
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		s.series.spill()
		all.add(&s.series)
		s.mu.Unlock()
	}
	if len(all.b) == 0 {
		return nil, all, from
	}
	s := all.series(from, to)
	s.Window = r.Window()
	return s, all, from
}

// mergeable returns the recording's series with what it merges from, or
// nil without a series.
func (r *Recorder) mergeable() *Series {
	s, all, from := r.gather()
	if s == nil {
		return nil
	}
	s.From = from
	s.Tokens = make([]int64, len(all.b))
	s.TTFTBins, s.ITLBins = make([][]uint32, len(all.b)), make([][]uint32, len(all.b))
	for i := range all.b {
		b := &all.b[i]
		s.Tokens[i] = b.tokens
		s.TTFTBins[i], s.ITLBins[i] = b.ttft.pairs(), b.itl.pairs()
	}
	return s
}

// pairs returns the sketch's bins as bin, count pairs.
func (s *sketch) pairs() []uint32 {
	out := make([]uint32, 0, 2*len(s.bins))
	for _, b := range s.bins {
		out = append(out, uint32(b.key), b.n)
	}
	return out
}

// secs returns how long bucket i of s covers: its interval, cut to the
// span of the recording (from its first request's start to End).
func (s *Series) secs(i int) float64 {
	bs := s.Start.Add(time.Duration(i) * s.Every)
	be := bs.Add(s.Every)
	if !s.From.IsZero() {
		bs = maxTime(bs, s.From)
	}
	be = minTime(be, s.End)
	if secs := be.Sub(bs).Seconds(); secs > 0 {
		return secs
	}
	return s.Every.Seconds()
}

// part returns the series as a part to merge: its buckets numbered from
// the one nearest its start, so a series moved to another clock by less
// than half a bucket keeps its buckets. It refuses a series without what
// it merges from, or whose columns disagree.
func (s *Series) part() (*seriesPart, error) {
	n := len(s.Tokens)
	switch {
	case s.Every <= 0:
		return nil, errors.New("its series has no interval")
	case n == 0:
		return nil, errors.New("its series holds no tokens a bucket: it was not made to merge (a Recorder's Recording makes it)")
	case len(s.Started) != n || len(s.Finished) != n || len(s.Failed) != n || len(s.TTFTBins) != n || len(s.ITLBins) != n ||
		len(s.Decoding) != n || len(s.Waiting) != n:
		return nil, fmt.Errorf("its series' columns are not all %d buckets long", n)
	}
	p := &seriesPart{every: s.Every, first: (s.Start.UnixNano() + int64(s.Every)/2) / int64(s.Every), b: make([]seriesBucket, n)}
	for i := range p.b {
		b := &p.b[i]
		secs := s.secs(i)
		b.tokens = s.Tokens[i]
		b.started, b.finished, b.failed = int32(s.Started[i]), int32(s.Finished[i]), int32(s.Failed[i])
		b.decoding, b.waiting = s.Decoding[i]*secs, s.Waiting[i]*secs
		for _, bins := range []struct {
			dst *sketch
			src []uint32
		}{{&b.ttft, s.TTFTBins[i]}, {&b.itl, s.ITLBins[i]}} {
			if len(bins.src)%2 != 0 {
				return nil, fmt.Errorf("its series' bucket %d has an odd list of bins", i)
			}
			for j := 0; j < len(bins.src); j += 2 {
				if bins.src[j] > math.MaxUint16 {
					return nil, fmt.Errorf("its series' bucket %d has a bin out of range", i)
				}
				bins.dst.add(uint16(bins.src[j]), bins.src[j+1])
			}
		}
	}
	return p, nil
}

// mergeSeries merges the series of recordings, each in buckets of its own
// interval or a power of two times it: the counts, the tokens and the
// sketches of buckets that line up add exactly, and the streams decoding
// and waiting add up; a series on a clock off by less than half a bucket
// lands in the buckets it would have had, its events within that offset of
// a bucket's edge one bucket over. The server's columns are left out: they
// are the whole server's, not a recording's share.
func mergeSeries(ss []*Series, window Window) (*Series, error) {
	var all seriesPart
	var from, to time.Time
	for i, s := range ss {
		if s == nil {
			continue
		}
		p, err := s.part()
		if err == nil && all.every > 0 && max(all.every, p.every)%min(all.every, p.every) != 0 {
			err = fmt.Errorf("its series' interval %v is not a multiple of the others' %v", p.every, all.every)
		}
		if err != nil {
			return nil, &MergeError{Index: i, Reason: err.Error()}
		}
		all.add(p)
		if !s.From.IsZero() && (from.IsZero() || s.From.Before(from)) {
			from = s.From
		}
		to = maxTime(to, s.End)
	}
	if len(all.b) == 0 {
		return nil, nil
	}
	out := all.series(from, to)
	out.Window, out.From = window, from
	out.Tokens = make([]int64, len(all.b))
	out.TTFTBins, out.ITLBins = make([][]uint32, len(all.b)), make([][]uint32, len(all.b))
	for i := range all.b {
		out.Tokens[i] = all.b[i].tokens
		out.TTFTBins[i], out.ITLBins[i] = all.b[i].ttft.pairs(), all.b[i].itl.pairs()
	}
	return out, nil
}
