package matrix

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// streamTick is how often a cell reads its streams' state. It is fine
// enough to see a stream wait for its first token for a few tens of
// milliseconds, cheap enough for thousands of streams (a reading costs a few
// atomic loads).
const streamTick = 10 * time.Millisecond

// streamTracker keeps the client's own timeline of a cell: how many streams
// decode (have a first token and no end) and how many wait for their first
// token, read every streamTick. It summarises the window (from mark) and
// watches the warm-up: whether every stream has decoded at once, every
// slot has finished a request, and for how long the decoding count has
// been stuck below the concurrency while others waited.
//
// A closed loop's turnover can show a stream too many for a moment: the
// next request's first token read before the last one's end, longer when
// the client is short of CPU. So the window's ceiling is the count the
// decoding streams stayed at or below for all but a tenth of the window,
// and the warm-up's cap moves only on a count held for capHold
// readings in a row.
//
// Every method is safe for concurrent use.
type streamTracker struct {
	n    int
	slot []atomic.Int64 // requests begun by each closed-loop slot

	mu       sync.Mutex
	last     time.Time
	recent   [capHold]int // the last readings' decoding counts, newest first
	readings int
	lastWait int
	sawAll   bool      // every stream decoded at once, held for capHold readings
	capSince time.Time // since when no held count has been above capAt < n, and every reading had a stream waiting; zero when not
	capAt    int

	marked bool
	start  time.Time // the window's start: readings before it are not counted
	end    time.Time // the window's end: readings after it are not counted
	// launchedBefore counts the requests begun before the window,
	// launchedIn those begun in it (as far as the readings show).
	launchedBefore, launchedIn int64
	samples                    int
	total                      time.Duration
	dec                        float64 // ∫ decoding dt, in seconds
	wait                       float64 // ∫ waiting dt, in seconds
	waited                     time.Duration
	byDec                      []time.Duration // time at each decoding count, held through the interval
}

// capHold is how many readings in a row a decoding count must show to
// count as held in the warm-up; ceilingLeak the share of the window the
// decoding streams may spend above the window's ceiling.
const (
	capHold     = 3
	ceilingLeak = 0.1
)

func newStreamTracker(n int) *streamTracker {
	return &streamTracker{n: n, slot: make([]atomic.Int64, n), byDec: make([]time.Duration, n+1)}
}

// begin records that slot began its seq-th request (counted from 0).
func (t *streamTracker) begin(slot, seq int) {
	if slot >= 0 && slot < len(t.slot) {
		t.slot[slot].Store(int64(seq) + 1)
	}
}

// everySlotFinished reports whether every slot has begun its second
// request, so finished its first.
func (t *streamTracker) everySlotFinished() bool {
	for i := range t.slot {
		if t.slot[i].Load() < 2 {
			return false
		}
	}
	return true
}

// observe records a reading at now: decoding streams have a first token,
// waiting ones were sent and have none yet; launched counts the requests
// begun so far.
func (t *streamTracker) observe(now time.Time, decoding, waiting int, launched int64) {
	decoding = min(max(decoding, 0), t.n)
	waiting = max(waiting, 0)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case !t.marked || now.Before(t.start):
		t.launchedBefore = launched
	case !now.After(t.end):
		t.launchedIn = launched - t.launchedBefore
	}
	first := t.readings == 0
	if t.marked && !first && t.last.Before(t.end) && now.After(t.start) {
		until := now
		if until.After(t.end) {
			until = t.end
		}
		from := t.last
		if from.Before(t.start) {
			from = t.start // the reading before the window holds from its start
		}
		dt := until.Sub(from)
		t.total += dt
		t.dec += float64(t.recent[0]) * dt.Seconds()
		t.wait += float64(t.lastWait) * dt.Seconds()
		t.byDec[min(t.recent[0], decoding)] += dt // held through the interval
		if t.lastWait > 0 {
			t.waited += dt
		}
		t.samples++
	}
	copy(t.recent[1:], t.recent[:capHold-1])
	t.recent[0] = decoding
	t.readings++
	t.last, t.lastWait = now, waiting
	if t.readings < capHold {
		return
	}
	held := slices.Min(t.recent[:])
	if held >= t.n {
		t.sawAll = true
	}
	switch {
	case held >= t.n || waiting == 0:
		t.capSince, t.capAt = time.Time{}, 0
	case t.capSince.IsZero() || held > t.capAt:
		t.capSince, t.capAt = now, held // a new high: the server took another stream
	}
}

// allDecoded reports whether every stream has decoded at once.
func (t *streamTracker) allDecoded() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sawAll
}

// capped returns how long, up to now, the held decoding count has stayed at
// or below a number short of the concurrency while streams waited at every
// reading, and that number: a server that runs only so many requests at
// once holds the count there for good, a server still prefilling raises it
// from time to time.
func (t *streamTracker) capped(now time.Time) (time.Duration, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.capSince.IsZero() {
		return 0, 0
	}
	return now.Sub(t.capSince), t.capAt
}

// mark starts the window's summary at start, which may be still to come;
// it ends at end.
func (t *streamTracker) mark(start, end time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.marked, t.start, t.end = true, start, end
}

// summary returns the window's summary, or nil when it has no reading.
func (t *streamTracker) summary() *Streams {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.total <= 0 {
		return nil
	}
	s := &Streams{Samples: t.samples, Launched: int(t.launchedIn)}
	secs := t.total.Seconds()
	if t.launchedIn > 0 {
		// Little's law: the streams waiting on average, over the rate
		// requests began, is how long each waited.
		s.MeanWaitMs = 1000 * t.wait / float64(t.launchedIn)
	}
	s.AvgDecoding = t.dec / secs
	s.AvgWaiting = t.wait / secs
	s.WaitingShare = t.waited.Seconds() / secs
	above := 0.0
	s.Ceiling = -1
	for k := t.n; k >= 0; k-- {
		share := t.byDec[k].Seconds() / secs
		if share > 0 && s.PeakDecoding == 0 {
			s.PeakDecoding = k
		}
		if s.Ceiling < 0 && above+share > ceilingLeak {
			s.Ceiling, s.CeilingShare = k, share
		}
		above += share
	}
	s.Ceiling = max(s.Ceiling, 0)
	s.AllShare = t.byDec[t.n].Seconds() / secs
	return s
}
