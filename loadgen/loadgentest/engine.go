package loadgentest

import (
	"sync"
	"sync/atomic"
	"time"
)

// maxLag is how far the engine may fall behind its schedule before it gives
// up catching up: past it, the missed time is dropped and counted in
// Stats.Behind, and throughput falls below the profile's.
const maxLag = 100 * time.Millisecond

// Request states, as the handler sees them through request.state.
const (
	stateActive   = iota
	stateFinished // reached max_tokens
	stateClosed   // the engine stopped
)

// A request is one generation request. The handler creates it and then only
// reads out, state and cached, and waits on wake; everything else belongs to
// the engine goroutine.
type request struct {
	promptLen int
	hashes    []uint64 // chained hashes of the prompt's full blocks
	maxTokens int
	// encode is its images' vision-encoder cost, in profile seconds,
	// paid in the step that first admits it unless the prefix cache
	// holds every image token, the last of which ends at visionEnd.
	encode    float64
	visionEnd int

	arrived time.Time // set by the handler before submit

	out    atomic.Int64 // tokens generated so far
	state  atomic.Int32
	cached atomic.Int64 // prompt tokens found in the prefix cache at the last admission
	wake   chan struct{}
	// When the engine first admitted it, and produced its first and its
	// latest token, in nanoseconds since epoch (clock.go): its own
	// timings, which it reports when asked (see servertimings.go).
	admittedAt, firstAt, lastAt atomic.Int64

	// Engine-owned.
	generated int
	computed  int // tokens whose KV is in the cache
	scheduled int // tokens computed in the current step
	blocks    []int32
	hashed    int // leading blocks registered in the prefix cache
	where     int8
	admitted  bool
	sampled   bool // sampled a token in the current step
	lastToken time.Time
}

// Where a request is, for the engine.
const (
	inInbox = iota
	inWaiting
	inRunning
	inNowhere // finished or aborted
)

func newRequest(promptLen int, hashes []uint64, maxTokens int) *request {
	return &request{promptLen: promptLen, hashes: hashes, maxTokens: maxTokens, wake: make(chan struct{}, 1)}
}

func (r *request) notify() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// engine steps a continuous-batching model in one goroutine, as vLLM's V1
// scheduler does: each step decodes one token for every running request and
// prefills prompts in chunks under a token budget, then sleeps until the
// step's absolute deadline.
type engine struct {
	p     Profile
	cache *kvCache

	running []*request
	// admitted holds the requests first admitted in the step being
	// scheduled, until stamp gives them its start.
	admitted []*request
	waiting  deque
	nwait    int // waiting requests not aborted

	mu      sync.Mutex // guards inbox and aborts
	inbox   []*request
	aborts  []*request
	spare   []*request
	kick    chan struct{}
	done    chan struct{}
	stopped chan struct{}

	// Published for Stats and /metrics.
	nRunning, nWaiting, nUsed         atomic.Int64
	steps, preemptions                atomic.Int64
	promptTokens, generationTokens    atomic.Int64
	cacheQueries, cacheHits, finished atomic.Int64
	behind                            atomic.Int64 // nanoseconds
	maxLate                           atomic.Int64 // the latest a step began after its deadline, in nanoseconds

	histMu                    sync.Mutex // guards the histograms
	ttft, itl, e2e, queueTime histogram
	lastStep                  time.Time // when the last step ended
	stepStart                 time.Time // when the step being run began, on the engine's schedule

	power *powerMeter // nil without a power model
}

func newEngine(p Profile) *engine {
	return &engine{
		p:         p,
		cache:     newKVCache(p),
		kick:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		stopped:   make(chan struct{}),
		ttft:      newHistogram(ttftBuckets),
		itl:       newHistogram(itlBuckets),
		e2e:       newHistogram(requestBuckets),
		queueTime: newHistogram(requestBuckets),
	}
}

// submit hands r to the engine.
func (e *engine) submit(r *request) {
	e.mu.Lock()
	e.inbox = append(e.inbox, r)
	e.mu.Unlock()
	e.wakeUp()
}

// abort tells the engine r is no longer wanted; its blocks are freed before
// the next step.
func (e *engine) abort(r *request) {
	e.mu.Lock()
	e.aborts = append(e.aborts, r)
	e.mu.Unlock()
	e.wakeUp()
}

func (e *engine) wakeUp() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// start runs the engine in a goroutine of its own until close.
func (e *engine) start() { go e.run() }

// close stops the engine goroutine and waits for it.
func (e *engine) close() {
	close(e.done)
	<-e.stopped
}

func (e *engine) run() {
	defer close(e.stopped)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var deadline time.Time
	idle := true
	for {
		e.drain()
		cost, ok := e.schedule()
		e.publish()
		if !ok {
			idle = true
			select {
			case <-e.kick:
				continue
			case <-e.done:
				e.closeAll()
				return
			}
		}
		now := time.Now()
		if idle {
			deadline = now
			idle = false
		} else if lag := now.Sub(deadline); lag > maxLag {
			e.behind.Add(int64(lag))
			deadline = now
		} else if int64(lag) > e.maxLate.Load() {
			e.maxLate.Store(int64(lag))
		}
		e.stamp(deadline)
		deadline = deadline.Add(time.Duration(cost / e.p.Speed * float64(time.Second)))
		if d := time.Until(deadline); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-e.done:
				timer.Stop()
				e.closeAll()
				return
			}
		} else {
			select {
			case <-e.done:
				e.closeAll()
				return
			default:
			}
		}
		e.apply(deadline)
	}
}

// drain takes new requests and aborts from the handlers.
func (e *engine) drain() {
	e.mu.Lock()
	in, ab := e.inbox, e.aborts
	e.inbox, e.aborts = e.spare[:0], nil
	e.mu.Unlock()
	for _, r := range in {
		r.where = inWaiting
		e.waiting.pushBack(r)
		e.nwait++
	}
	e.spare = in[:0]
	clear(in)
	removed := false
	for _, r := range ab {
		// A request is submitted before it can be aborted, under the same
		// lock, so it is never still in the inbox here.
		switch r.where {
		case inWaiting:
			e.nwait-- // left in the deque, skipped when it reaches the head
		case inRunning:
			e.cache.release(r.blocks)
			r.blocks = r.blocks[:0]
			removed = true
		}
		r.where = inNowhere
	}
	if removed {
		e.compact()
	}
}

// compact removes requests that left the running set, keeping the order.
func (e *engine) compact() {
	k := 0
	for _, r := range e.running {
		if r.where == inRunning {
			e.running[k] = r
			k++
		}
	}
	clear(e.running[k:])
	e.running = e.running[:k]
}

// schedule plans one step and returns its cost in profile seconds; ok is
// false when there is nothing to do.
func (e *engine) schedule() (cost float64, ok bool) {
	p := &e.p
	budget := p.MaxNumBatchedTokens
	var batch, sumCtx, maxCtx int
	var prefill float64
	preempted := false
	for i := 0; i < len(e.running); i++ {
		r := e.running[i]
		r.scheduled = 0
		if budget == 0 {
			continue
		}
		n := min(r.promptLen+r.generated-r.computed, budget)
		for !e.grow(r, r.computed+n) {
			victim := e.running[len(e.running)-1]
			e.running[len(e.running)-1] = nil
			e.running = e.running[:len(e.running)-1]
			e.preempt(victim)
			preempted = true
			if victim == r {
				break
			}
		}
		if r.where != inRunning {
			break // r preempted itself: it was the last
		}
		r.scheduled = n
		budget -= n
		if n == 1 && r.generated > 0 {
			ctx := r.promptLen + r.generated
			batch++
			sumCtx += ctx
			maxCtx = max(maxCtx, ctx)
		} else {
			prefill += p.prefillCost(r.computed, n)
		}
		ok = true
	}
	// vLLM admits no new request in a step that had to preempt.
	for !preempted && budget > 0 && len(e.running) < p.MaxNumSeqs && e.waiting.len() > 0 {
		r := e.waiting.front()
		if r.where != inWaiting { // aborted while waiting
			e.waiting.popFront()
			continue
		}
		total := r.promptLen + r.generated
		// A full hit still recomputes the last token, for its logits.
		hashes := r.hashes[:min(len(r.hashes), (total-1)/e.cache.size)]
		hit, idle := e.cache.hits(hashes)
		cached := hit * e.cache.size
		n := min(total-cached, budget)
		if e.cache.blocksFor(cached+n)-hit+idle > e.cache.free() {
			break // first come, first served: later requests wait too
		}
		for _, h := range hashes[:hit] {
			r.blocks = append(r.blocks, e.cache.take(h))
		}
		r.hashed = hit
		r.computed = cached
		e.grow(r, cached+n)
		e.waiting.popFront()
		e.nwait--
		r.where = inRunning
		e.running = append(e.running, r)
		r.cached.Store(int64(cached))
		if !r.admitted {
			if cached < r.visionEnd {
				prefill += r.encode
			}
			r.admitted = true
			e.admitted = append(e.admitted, r)
			e.histMu.Lock()
			e.queueTime.observe(time.Since(r.arrived).Seconds(), 1)
			e.histMu.Unlock()
		}
		e.cacheQueries.Add(int64(r.promptLen))
		e.cacheHits.Add(int64(min(cached, r.promptLen)))
		r.scheduled = n
		budget -= n
		prefill += p.prefillCost(cached, n)
		ok = true
	}
	// A step that only preempted still made progress: the next admits.
	return p.decodeCost(batch, sumCtx, maxCtx) + prefill, ok || preempted
}

// grow gives r the blocks to hold tokens tokens and registers its full
// prompt blocks in the prefix cache; it returns false if the cache is full.
func (e *engine) grow(r *request, tokens int) bool {
	need := e.cache.blocksFor(tokens) - len(r.blocks)
	if need > e.cache.free() {
		return false
	}
	for range need {
		r.blocks = append(r.blocks, e.cache.alloc())
	}
	full := min(tokens/e.cache.size, len(r.hashes))
	for ; r.hashed < full; r.hashed++ {
		e.cache.register(r.blocks[r.hashed], r.hashes[r.hashed])
	}
	return true
}

// preempt frees r's blocks and puts it back at the head of the waiting
// queue, to be recomputed (prompt and output so far) when it is readmitted.
func (e *engine) preempt(r *request) {
	e.cache.release(r.blocks)
	r.blocks = r.blocks[:0]
	r.hashed = 0
	r.computed = 0
	r.scheduled = 0
	r.where = inWaiting
	e.waiting.pushFront(r)
	e.nwait++
	e.preemptions.Add(1)
}

// apply ends the step at time now: scheduled tokens are now computed, and
// every request whose whole sequence is computed samples one token. The
// counters and gauges are published before any handler is told, so a client
// that has seen a token finds it in /metrics.
func (e *engine) apply(now time.Time) {
	var generated, finished, steady int64
	nowNs := monoNanos(now) // once a step: compared with each request's admission
	e.histMu.Lock()
	for _, r := range e.running {
		if r.scheduled == 0 {
			continue
		}
		r.computed += r.scheduled
		r.scheduled = 0
		if r.computed < r.promptLen+r.generated {
			continue
		}
		// A lagging engine's steps run behind real time, so a step can end
		// before a request it admitted arrived: its tokens then take the
		// step's time from its admission, not a time before it.
		at := now
		if adm := r.admittedAt.Load(); nowNs < adm {
			at = monoTime(adm).Add(now.Sub(e.stepStart))
		}
		switch {
		case r.generated == 0:
			e.promptTokens.Add(int64(r.promptLen))
			e.ttft.observe(at.Sub(r.arrived).Seconds(), 1)
			r.firstAt.Store(monoNanos(at))
		case r.lastToken.Equal(e.lastStep):
			steady++ // its gap is the step's: observed once for all below
		default:
			e.itl.observe(now.Sub(r.lastToken).Seconds(), 1)
		}
		r.lastToken = now
		r.lastAt.Store(monoNanos(at))
		r.generated++
		r.sampled = true
		generated++
		if r.generated >= r.maxTokens {
			e.cache.release(r.blocks)
			r.blocks = r.blocks[:0]
			r.where = inNowhere
			e.e2e.observe(at.Sub(r.arrived).Seconds(), 1)
			finished++
		}
	}
	if steady > 0 {
		e.itl.observe(now.Sub(e.lastStep).Seconds(), steady)
	}
	e.histMu.Unlock()
	e.lastStep = now
	e.steps.Add(1)
	e.generationTokens.Add(generated)
	e.finished.Add(finished)
	e.nRunning.Store(int64(len(e.running)) - finished)
	e.power.set(time.Now(), len(e.running)-int(finished))
	e.nUsed.Store(int64(e.cache.used))
	for _, r := range e.running {
		if !r.sampled {
			continue
		}
		r.sampled = false
		r.out.Store(int64(r.generated))
		if r.where == inNowhere {
			r.state.Store(stateFinished)
		}
		r.notify()
	}
	if finished > 0 {
		e.compact()
	}
}

func (e *engine) publish() {
	e.nRunning.Store(int64(len(e.running)))
	e.power.set(time.Now(), len(e.running))
	e.nWaiting.Store(int64(e.nwait))
	e.nUsed.Store(int64(e.cache.used))
}

// closeAll tells every request still in the engine that it stopped.
func (e *engine) closeAll() {
	e.drain()
	for _, r := range e.running {
		r.state.Store(stateClosed)
		r.notify()
	}
	for e.waiting.len() > 0 {
		r := e.waiting.popFront()
		r.state.Store(stateClosed)
		r.notify()
	}
}

// deque is a FIFO queue of requests that also takes requests at its head.
type deque struct {
	buf  []*request
	head int
	n    int
}

func (q *deque) len() int { return q.n }

func (q *deque) front() *request { return q.buf[q.head] }

func (q *deque) popFront() *request {
	r := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return r
}

func (q *deque) pushBack(r *request) {
	q.grow()
	q.buf[(q.head+q.n)%len(q.buf)] = r
	q.n++
}

func (q *deque) pushFront(r *request) {
	q.grow()
	q.head = (q.head - 1 + len(q.buf)) % len(q.buf)
	q.buf[q.head] = r
	q.n++
}

func (q *deque) grow() {
	if q.n < len(q.buf) {
		return
	}
	buf := make([]*request, max(16, 2*len(q.buf)))
	for i := range q.n {
		buf[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = buf, 0
}
