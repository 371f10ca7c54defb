package metrics

import (
	"fmt"
	"io/fs"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// numShards is how many histograms share the per-token gaps. Each request's
// gaps go to one shard, buffered in its Timeline, so a lock is taken once per
// gapBufLen chunks, on one of several locks.
const numShards = 8

// A recording has two parts: the warm-up, before the window opens, and the
// window, from its start on. Requests go to the part in which they ended,
// gaps between tokens to the part in which their later token arrived.
const (
	partWarmup = iota
	partWindow
	numParts
)

type shard struct {
	mu     sync.Mutex
	itl    [numParts]Histogram // guarded by mu
	series seriesPart          // tokens and gaps over time, when the recorder keeps a series; guarded by mu
	tokens atomic.Int64        // tokens observed, window or not
	inWin  atomic.Int64        // tokens observed inside the window
	_      [64]byte            // keep shards on separate cache lines
}

// Recorder aggregates request timelines, online and in bounded memory, into
// the columns of a measurement: throughput over a [Window], time to first
// token, time between tokens and the rest of [Summary]. Its zero value is
// ready to use; set SLO before the first call.
//
// With a window set ([Recorder.SetWindow] or [Recorder.OpenWindow]), a
// request that ended before the window opened is a warm-up request: the
// Summary counts it in Warmup and in nothing else, and
// [Recorder.Recording](ScopeWarmup) summarises the warm-up on its own.
// Without a window, the Summary covers every request recorded, over the
// span from the first one's start to the last one's end.
//
// Observe is called for every chunk and costs O(1) with no allocation; Record
// once per request. Both are safe for concurrent use: many goroutines may
// observe their own timelines at once. Summary reads the requests recorded so
// far; a request still in flight is not in it.
type Recorder struct {
	// SLO decides which completed requests count toward goodput.
	SLO SLO
	// ByModel keeps a recording of each model's requests
	// ([Timeline].Model) beside the whole one, in the same window:
	// [Recording].Models. Set it before the first call.
	ByModel bool

	parent   *Recorder // a model's recorder: its window is parent's
	modelsMu sync.Mutex
	models   map[string]*Recorder // guarded by modelsMu
	// Every, when above 0, makes the recorder keep a time series of the
	// run in buckets this long (see [Recorder.Series]); set it before the
	// first call.
	Every time.Duration

	win     atomic.Pointer[Window]
	opening atomic.Bool
	next    atomic.Uint32
	shards  [numShards]shard

	recorded atomic.Int64
	failed   atomic.Int64

	mu     sync.Mutex
	parts  [numParts]part // guarded by mu
	tally  tally          // guarded by mu
	series seriesPart     // guarded by mu
}

// part holds what Record folds in for the requests of one part of the
// recording.
type part struct {
	requests, completed, outside, failed, canceled, good int
	completedTokens                                      int // the output tokens of the completed requests
	inputTokens                                          int // and their input tokens, from the usage
	reasoningTokens, answerTokens                        int // and how many of them were reasoning and answer
	toolCalls                                            int // completed requests that called a tool
	missed                                               int // canceled requests that had missed the SLO
	serverDropped, reasoningOver                         int // requests whose server timings were dropped, whose reasoning count was cut
	errors                                               [len(errorKinds)]int
	sources                                              [len(tokenSources)]int
	ttft, tbt, tpot, latency, wait, ttfo                 Histogram
	splitTTFT, splitQueue, splitPrefill, splitRest       Histogram // the requests with the server's timings
	fromDue                                              Histogram // latency of the completed, from when each was due
}

// tally holds the figures that are not per request but over time: the
// window's tokens and activity, and, for a recording without a window, the
// span of all its requests.
type tally struct {
	winTokens int
	winExtra  float64
	winLast   time.Time
	active    time.Duration

	from, to  time.Time // the earliest start and the latest end recorded
	tokens    int       // every token recorded
	extra     int
	last      time.Time // the last token recorded
	activeAll time.Duration
}

// SetWindow sets the measurement window. Call it before observing chunks
// that may fall inside it, or use [Recorder.OpenWindow] while requests are
// in flight. Setting the window again replaces it for chunks observed later.
func (r *Recorder) SetWindow(w Window) {
	r.win.Store(&w)
}

// OpenWindow starts the window at now() and ends it d later, while other
// goroutines observe chunks. It tells them a window is opening before it
// reads the clock, so every chunk stamped at or after the window's start is
// counted inside it, and none stamped before. It returns the window.
func (r *Recorder) OpenWindow(now func() time.Time, d time.Duration) Window {
	r.opening.Store(true)
	start := now()
	w := Window{Start: start, End: start.Add(d)}
	r.win.Store(&w)
	r.opening.Store(false)
	return w
}

// Window returns the measurement window, zero until one is set.
func (r *Recorder) Window() Window {
	if r.parent != nil {
		return r.parent.Window()
	}
	if w := r.win.Load(); w != nil {
		return *w
	}
	return Window{}
}

// window returns the current window, waiting out an OpenWindow in progress.
func (r *Recorder) window() *Window {
	if r.parent != nil {
		return r.parent.window()
	}
	w := r.win.Load()
	for w == nil && r.opening.Load() {
		runtime.Gosched()
		w = r.win.Load()
	}
	return w
}

// Observe records that a chunk carrying tokens arrived at t for the request
// tl. It updates tl (see [Timeline.Observe]), counts the tokens in the window
// if t is inside it, and records tokens gaps of (t − previous chunk) ÷ tokens
// in the time-between-tokens histogram of the window, or of the warm-up if t
// is before the window opened. Chunks with no tokens are ignored, and so
// is a nil Timeline (Observe returns nothing, as loadgen's Observer does;
// [Recorder.Record] of it is an error).
func (r *Recorder) Observe(tl *Timeline, t time.Time, tokens int) {
	if tokens <= 0 || tl == nil {
		return
	}
	if !tl.sharded {
		tl.shard = uint16(r.next.Add(1) % numShards)
		tl.sharded = true
		if r.ByModel {
			tl.model = r.modelOf(tl.Model)
		}
	}
	w := r.window()
	if tl.Chunks > 0 || r.Every > 0 {
		n := int64(tokens)
		if w == nil || t.Before(w.Start) {
			n = -n // a warm-up gap
		}
		g := gap{d: -1, n: n} // a first chunk: its tokens, no gap (kept for a series alone)
		if tl.Chunks > 0 {
			g.d = t.Sub(tl.Last) / time.Duration(tokens)
		}
		if r.Every > 0 {
			g.at = t.UnixNano()
		}
		tl.gapBuf[tl.gapN] = g
		tl.gapN++
		if tl.gapN == gapBufLen {
			r.flush(tl)
		}
	}
	tl.Observe(t, tokens)
	s := &r.shards[tl.shard]
	s.tokens.Add(int64(tokens))
	var ms *shard
	if tl.model != nil && r.ByModel {
		ms = &tl.model.shards[tl.shard]
		ms.tokens.Add(int64(tokens))
	}
	if w != nil && w.contains(t) {
		tl.win.tokens += tokens
		tl.win.chunks++
		tl.win.last = t
		s.inWin.Add(int64(tokens))
		if ms != nil {
			ms.inWin.Add(int64(tokens))
		}
	}
}

// modelOf returns the recorder of a model's requests, made on first use.
func (r *Recorder) modelOf(name string) *Recorder {
	r.modelsMu.Lock()
	defer r.modelsMu.Unlock()
	m := r.models[name]
	if m == nil {
		if r.models == nil {
			r.models = map[string]*Recorder{}
		}
		m = &Recorder{SLO: r.SLO, parent: r}
		r.models[name] = m
	}
	return m
}

// Observe records, on the timeline alone, that a chunk carrying tokens
// arrived at t: it sets First on the first such chunk, Last on every one, and
// counts Chunks and Tokens. Use it when no [Recorder] is involved;
// [Recorder.Observe] calls it.
func (tl *Timeline) Observe(t time.Time, tokens int) {
	if tokens <= 0 {
		return
	}
	if tl.Chunks == 0 {
		tl.First = t
	}
	tl.Last = t
	tl.Chunks++
	tl.Tokens += tokens
}

func (r *Recorder) flush(tl *Timeline) {
	if tl.gapN == 0 {
		return
	}
	shards := [2]*shard{&r.shards[tl.shard]}
	if tl.model != nil && r.ByModel {
		shards[1] = &tl.model.shards[tl.shard]
	}
	for i, s := range shards {
		if s == nil {
			continue
		}
		s.mu.Lock()
		for _, g := range tl.gapBuf[:tl.gapN] {
			n := g.n
			switch {
			case g.d < 0:
				n = max(n, -n)
			case n < 0:
				n = -n
				s.itl[partWarmup].recordN(g.d, n)
			default:
				s.itl[partWindow].recordN(g.d, n)
			}
			if i == 0 && r.Every > 0 { // the run's series; a model's recorder keeps none
				if s.series.every == 0 {
					s.series.every = r.Every
				}
				s.series.atNanos(g.at).tokens += n
				if g.d >= 0 {
					s.series.recordGaps(g.at, g.d, uint32(min(n, math.MaxUint32)))
				}
			}
		}
		s.mu.Unlock()
	}
	tl.gapN = 0
}

// Record folds a finished request into the aggregate. Call it once per
// request, after its last Observe and with its outcome set; the timeline may
// be reused afterwards.
//
// Every request is counted in exactly one outcome: completed (no error, and
// [DONE] or a finish reason) inside the window or outside it, failed (an
// error other than cancellation, counted by kind), or canceled (cut by
// cancellation, or ended with neither an error nor a finish, as when its
// reader stopped).
//
// A nil Timeline, or a nil Recorder, records nothing and is an error that
// is [fs.ErrInvalid] (see [errors.Is]); Record returns nil otherwise.
func (r *Recorder) Record(tl *Timeline) error {
	switch {
	case r == nil:
		return fmt.Errorf("metrics: Record into a nil *Recorder: %w", fs.ErrInvalid)
	case tl == nil:
		return fmt.Errorf("metrics: Record of a nil *Timeline: %w", fs.ErrInvalid)
	}
	r.record(tl)
	return nil
}

// record is Record of a Timeline and a Recorder that are not nil.
func (r *Recorder) record(tl *Timeline) {
	r.flush(tl)
	if r.ByModel {
		m := tl.model
		if m == nil {
			m = r.modelOf(tl.Model)
		}
		tl.model = nil
		defer m.record(tl) // its gaps flushed above, into m's too
	}
	w := r.window()
	end := tl.End
	if end.IsZero() {
		end = tl.Last
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	p := &r.parts[partWarmup]
	if w != nil && !end.Before(w.Start) {
		p = &r.parts[partWindow]
	}
	p.countOutcome(tl, w, r.SLO)
	if i := slices.Index(tokenSources[:], tl.Source); i >= 0 {
		p.sources[i]++
	}
	p.recordDurations(tl)
	r.tally.add(tl, w, end)
	if r.Every > 0 {
		if r.series.every == 0 {
			r.series.every = r.Every
		}
		r.recordSeries(tl)
	}
	r.recorded.Add(1)
	if tl.Kind != KindNone && tl.Kind != KindCanceled {
		r.failed.Add(1)
	}
}

// countOutcome counts tl's outcome in p: canceled (with the SLO it had
// already missed), failed by kind, completed inside the window (w nil:
// every completed request) with its tokens and the SLO it met, or
// completed outside it.
func (p *part) countOutcome(tl *Timeline, w *Window, slo SLO) {
	p.requests++
	if tl.Server.Dropped != "" {
		p.serverDropped++
	}
	if tl.ReasoningOverclaim > 0 {
		p.reasoningOver++
	}
	switch {
	case tl.Kind == KindCanceled:
		p.canceled++
		if slo != (SLO{}) && slo.missed(tl) {
			p.missed++
		}
	case tl.Kind != KindNone || tl.Err != nil:
		p.failed++
		k := tl.Kind
		if k == KindNone {
			k = KindOther
		}
		p.errors[kindIndex(k)]++
	case !tl.OK():
		p.canceled++ // ended early without an error: a reader that stopped
		if slo != (SLO{}) && slo.missed(tl) {
			p.missed++
		}
	case w == nil || w.contains(tl.End):
		// Inside the window; without a window, every completed request is
		// (the window is then the recording's span).
		p.completed++
		p.completedTokens += tl.OutputTokens()
		p.inputTokens += tl.PromptTokens
		p.reasoningTokens += min(tl.ReasoningTokens, tl.OutputTokens())
		p.answerTokens += tl.AnswerTokens()
		if tl.ToolCall {
			p.toolCalls++
		}
		if slo != (SLO{}) && slo.met(tl) {
			p.good++
		}
	default:
		p.outside++
	}
}

// recordDurations records tl's durations in p's histograms: each where
// the request got far enough to have it, latency and TPOT for completed
// requests only.
func (p *part) recordDurations(tl *Timeline) {
	if !tl.First.IsZero() {
		p.ttft.Record(tl.TTFT())
		p.recordSplit(tl)
	}
	if !tl.FirstAnswer.IsZero() {
		p.ttfo.Record(tl.TTFO())
	}
	if !tl.Sent.IsZero() && !tl.Start.IsZero() {
		p.wait.Record(tl.clientWait())
	}
	if tl.OutputTokens() >= 2 {
		p.tbt.Record(tl.TimeBetweenTokens())
	}
	if tl.OK() {
		p.latency.Record(tl.Latency())
		if !tl.Due.IsZero() && !tl.End.IsZero() {
			p.fromDue.Record(tl.End.Sub(tl.Due))
		}
		if tl.OutputTokens() >= 2 {
			p.tpot.Record(tl.tpot())
		}
	}

}

// add adds tl, which ended at end, to the recording's tallies: its tokens
// inside window w and in all, the recording's span, and the time it was
// active.
func (a *tally) add(tl *Timeline, w *Window, end time.Time) {
	a.winTokens += tl.win.tokens
	if tl.ExtraTokens > 0 && tl.Chunks > 0 {
		a.winExtra += float64(tl.ExtraTokens) * float64(tl.win.chunks) / float64(tl.Chunks)
		a.extra += tl.ExtraTokens
	}
	if tl.win.last.After(a.winLast) {
		a.winLast = tl.win.last
	}
	a.tokens += tl.Tokens
	if tl.Last.After(a.last) {
		a.last = tl.Last
	}
	from := firstSet(tl.Start, tl.Sent, tl.First, end)
	if !from.IsZero() && (a.from.IsZero() || from.Before(a.from)) {
		a.from = from
	}
	if end.After(a.to) {
		a.to = end
	}
	if !tl.First.IsZero() {
		if w != nil {
			a.active += w.overlap(tl.First, end)
		}
		if end.After(tl.First) {
			a.activeAll += end.Sub(tl.First)
		}
	}
}

// firstSet returns the first of ts that is not zero.
func firstSet(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// Snapshot is a cheap, live view of a recording in progress.
type Snapshot struct {
	Tokens       int64 // tokens observed so far, window or not
	WindowTokens int64 // tokens observed inside the window
	Recorded     int64 // requests recorded
	Failed       int64 // recorded requests that failed (cancellations excluded)
}

// Snapshot returns live counts without taking any lock that Observe takes.
func (r *Recorder) Snapshot() Snapshot {
	var s Snapshot
	for i := range r.shards {
		s.Tokens += r.shards[i].tokens.Load()
		s.WindowTokens += r.shards[i].inWin.Load()
	}
	s.Recorded = r.recorded.Load()
	s.Failed = r.failed.Load()
	return s
}

// Histograms are full copies of a recording's distributions, for export and
// for merging runs (their JSON form is HdrHistogram's V2 encoding with the
// exact figures beside it: see [Histogram.MarshalJSON]). The zero
// Histograms is empty and ready to merge into.
type Histograms struct {
	TTFT       *Histogram `json:"ttft"`
	TBT        *Histogram `json:"tbt"`
	ITL        *Histogram `json:"itl"`
	TPOT       *Histogram `json:"tpot"`
	Latency    *Histogram `json:"latency"`
	ClientWait *Histogram `json:"client_wait"`
	// TTFO is time to first output token; absent from recordings made
	// before it was measured.
	TTFO *Histogram `json:"ttfo,omitempty"`
	// SplitTTFT, SplitQueue, SplitPrefill and SplitRest are the TTFT
	// split of the requests whose server reported its timings (see
	// [TTFTSplit]), and LatencyFromDue the completed requests' latency
	// from when each was due (see [Summary].LatencyFromDue); absent when
	// empty, and from recordings made before they were measured.
	SplitTTFT      *Histogram `json:"split_ttft,omitempty"`
	SplitQueue     *Histogram `json:"split_queue,omitempty"`
	SplitPrefill   *Histogram `json:"split_prefill,omitempty"`
	SplitRest      *Histogram `json:"split_rest,omitempty"`
	LatencyFromDue *Histogram `json:"latency_from_due,omitempty"`
}

// merge adds every distribution of o to hs, creating those hs lacks. It
// returns the first error of [Histogram.merge]; the other distributions are
// merged regardless.
func (hs *Histograms) merge(o Histograms) error {
	var first error
	for _, p := range []struct {
		dst      **Histogram
		src      *Histogram
		optional bool // absent while empty
	}{
		{&hs.TTFT, o.TTFT, false}, {&hs.TBT, o.TBT, false}, {&hs.ITL, o.ITL, false},
		{&hs.TPOT, o.TPOT, false}, {&hs.Latency, o.Latency, false}, {&hs.ClientWait, o.ClientWait, false},
		{&hs.TTFO, o.TTFO, false}, {&hs.SplitTTFT, o.SplitTTFT, true}, {&hs.SplitQueue, o.SplitQueue, true},
		{&hs.SplitPrefill, o.SplitPrefill, true}, {&hs.SplitRest, o.SplitRest, true},
		{&hs.LatencyFromDue, o.LatencyFromDue, true},
	} {
		if *p.dst == nil && p.optional && p.src.count() == 0 {
			continue
		}
		if *p.dst == nil {
			*p.dst = &Histogram{}
		}
		if err := (*p.dst).merge(p.src); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// partsOf returns the parts of the recording a scope covers. Without a
// window, everything recorded is in the warm-up part, and the window and
// the whole recording are that part.
func (r *Recorder) partsOf(scope Scope) []int {
	if r.window() == nil {
		if scope == ScopeWarmup {
			return nil
		}
		return []int{partWarmup}
	}
	switch scope {
	case ScopeWarmup:
		return []int{partWarmup}
	case ScopeAll:
		return []int{partWarmup, partWindow}
	}
	return []int{partWindow}
}

// itl merges the shards' gap histograms of the given parts into one.
func (r *Recorder) itl(parts []int) *Histogram {
	var itl Histogram
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		for _, p := range parts {
			_ = itl.merge(&s.itl[p]) // same geometry: nothing is dropped
		}
		s.mu.Unlock()
	}
	return &itl
}
