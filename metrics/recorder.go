package metrics

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// SLO holds optional service-level objectives. A zero field is not checked.
// A request meets the SLO when it completed and every set objective holds.
type SLO struct {
	TTFT    time.Duration `json:"ttft,omitempty"`
	TPOT    time.Duration `json:"tpot,omitempty"`
	Latency time.Duration `json:"latency,omitempty"`
}

// IsZero reports whether no objective is set.
func (s SLO) IsZero() bool { return s == SLO{} }

// Met reports whether tl completed within every set objective.
func (s SLO) Met(tl *Timeline) bool {
	if !tl.OK() {
		return false
	}
	return (s.TTFT == 0 || tl.TTFT() <= s.TTFT) &&
		(s.TPOT == 0 || tl.TPOT() <= s.TPOT) &&
		(s.Latency == 0 || tl.Latency() <= s.Latency)
}

// numShards is how many histograms share the per-token gaps. Each request's
// gaps go to one shard, buffered in its Timeline, so a lock is taken once per
// gapBufLen chunks, on one of several locks.
const numShards = 8

type shard struct {
	mu     sync.Mutex
	itl    Histogram    // guarded by mu
	tokens atomic.Int64 // tokens observed, window or not
	inWin  atomic.Int64 // tokens observed inside the window
	_      [64]byte     // keep shards on separate cache lines
}

// Recorder aggregates request timelines, online and in bounded memory, into
// the columns of a measurement: throughput over a [Window], time to first
// token, time between tokens and the rest of [Summary]. Its zero value is
// ready to use; set SLO before the first call.
//
// Observe is called for every chunk and costs O(1) with no allocation; Record
// once per request. Both are safe for concurrent use: many goroutines may
// observe their own timelines at once. Summary reads the requests recorded so
// far; a request still in flight is not in it.
type Recorder struct {
	// SLO decides which completed requests count toward goodput.
	SLO SLO

	win     atomic.Pointer[Window]
	opening atomic.Bool
	next    atomic.Uint32
	shards  [numShards]shard

	recorded atomic.Int64
	failed   atomic.Int64

	mu  sync.Mutex
	agg aggregate // guarded by mu
}

// aggregate holds what Record folds in, request by request.
type aggregate struct {
	requests, completed, failed, canceled, good int
	errors                                      [numKinds]int
	sources                                     [4]int
	winTokens                                   int
	winExtra                                    float64
	winLast                                     time.Time
	active                                      time.Duration
	ttft, tbt, tpot, latency, wait              Histogram
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
	if w := r.win.Load(); w != nil {
		return *w
	}
	return Window{}
}

// window returns the current window, waiting out an OpenWindow in progress.
func (r *Recorder) window() *Window {
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
// in the time-between-tokens histogram. Chunks with no tokens are ignored.
func (r *Recorder) Observe(tl *Timeline, t time.Time, tokens int) {
	if tokens <= 0 {
		return
	}
	if !tl.sharded {
		tl.shard = uint16(r.next.Add(1) % numShards)
		tl.sharded = true
	}
	if tl.Chunks > 0 {
		tl.gapBuf[tl.gapN] = gap{d: t.Sub(tl.Last) / time.Duration(tokens), n: int64(tokens)}
		tl.gapN++
		if tl.gapN == gapBufLen {
			r.flush(tl)
		}
	}
	tl.Observe(t, tokens)
	s := &r.shards[tl.shard]
	s.tokens.Add(int64(tokens))
	if w := r.window(); w != nil && w.Contains(t) {
		tl.win.tokens += tokens
		tl.win.chunks++
		tl.win.last = t
		s.inWin.Add(int64(tokens))
	}
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
	s := &r.shards[tl.shard]
	s.mu.Lock()
	for _, g := range tl.gapBuf[:tl.gapN] {
		s.itl.RecordN(g.d, g.n)
	}
	s.mu.Unlock()
	tl.gapN = 0
}

// Record folds a finished request into the aggregate. Call it once per
// request, after its last Observe and with its outcome set; the timeline may
// be reused afterwards.
func (r *Recorder) Record(tl *Timeline) {
	r.flush(tl)
	w := r.Window()

	r.mu.Lock()
	defer r.mu.Unlock()
	a := &r.agg
	a.requests++
	switch {
	case tl.Kind == KindCanceled:
		a.canceled++
	case tl.Kind != KindNone || tl.Err != nil:
		a.failed++
		k := tl.Kind
		if k == KindNone {
			k = KindOther
		}
		a.errors[k]++
	}
	if int(tl.Source) < len(a.sources) {
		a.sources[tl.Source]++
	}
	if !tl.First.IsZero() {
		a.ttft.Record(tl.TTFT())
	}
	if !tl.Sent.IsZero() && !tl.Start.IsZero() {
		a.wait.Record(tl.ClientWait())
	}
	if tl.OutputTokens() >= 2 {
		a.tbt.Record(tl.TimeBetweenTokens())
	}
	if tl.OK() {
		a.latency.Record(tl.Latency())
		if tl.OutputTokens() >= 2 {
			a.tpot.Record(tl.TPOT())
		}
		if w.Contains(tl.End) {
			a.completed++
			if !r.SLO.IsZero() && r.SLO.Met(tl) {
				a.good++
			}
		}
	}
	a.winTokens += tl.win.tokens
	if tl.ExtraTokens > 0 && tl.Chunks > 0 {
		a.winExtra += float64(tl.ExtraTokens) * float64(tl.win.chunks) / float64(tl.Chunks)
	}
	if tl.win.last.After(a.winLast) {
		a.winLast = tl.win.last
	}
	if !tl.First.IsZero() {
		end := tl.End
		if end.IsZero() {
			end = tl.Last
		}
		a.active += w.overlap(tl.First, end)
	}
	r.recorded.Add(1)
	if tl.Kind != KindNone && tl.Kind != KindCanceled {
		r.failed.Add(1)
	}
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
// for merging runs (their JSON form is HdrHistogram's V2 encoding).
type Histograms struct {
	TTFT       *Histogram `json:"ttft"`
	TBT        *Histogram `json:"tbt"`
	ITL        *Histogram `json:"itl"`
	TPOT       *Histogram `json:"tpot"`
	Latency    *Histogram `json:"latency"`
	ClientWait *Histogram `json:"client_wait"`
}

// Histograms returns copies of the recorded distributions.
func (r *Recorder) Histograms() Histograms {
	r.mu.Lock()
	h := Histograms{
		TTFT:       r.agg.ttft.Clone(),
		TBT:        r.agg.tbt.Clone(),
		TPOT:       r.agg.tpot.Clone(),
		Latency:    r.agg.latency.Clone(),
		ClientWait: r.agg.wait.Clone(),
	}
	r.mu.Unlock()
	h.ITL = r.itl()
	return h
}

// itl merges the shards' gap histograms into one.
func (r *Recorder) itl() *Histogram {
	var itl Histogram
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		_ = itl.Merge(&s.itl) // same geometry: nothing is dropped
		s.mu.Unlock()
	}
	return &itl
}
