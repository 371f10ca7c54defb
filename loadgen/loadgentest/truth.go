package loadgentest

import (
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmload/llmload/loadgen"
)

// Memory charged against Profile.TruthBytes.
const (
	chunkRecordBytes   = 16
	requestRecordBytes = 256
)

// Truth is the server's own record of what it wrote: per request, when each
// chunk carrying output tokens was flushed to the connection and how many
// tokens it carried. Tests compare client measurements with it.
//
// Records are bounded by Profile.TruthBytes: past it the oldest finished
// requests are forgotten, and while no finished request is left to forget,
// new chunk records are dropped (RequestTruth.ChunksDropped counts them; the
// request's totals stay exact). Truth is safe for concurrent use.
type Truth struct {
	limit   int64 // bytes; < 0: record nothing
	bytes   atomic.Int64
	mu      sync.Mutex
	byID    map[string]*record
	order   []*record // oldest first
	evicted atomic.Int64
}

// RequestTruth is the record of one request.
type RequestTruth struct {
	ID            string          `json:"id"`                   // the response's id, also sent as the X-Request-Id header
	PromptTokens  int             `json:"prompt_tokens"`        // as reported in usage
	CachedTokens  int             `json:"cached_tokens"`        // prompt tokens found in the prefix cache
	Received      time.Time       `json:"received"`             // when the handler got the request
	Queued        time.Time       `json:"queued,omitzero"`      // when it was handed to the engine, parsed and tokenized
	Scheduled     time.Time       `json:"scheduled,omitzero"`   // when the engine first admitted it
	FirstToken    time.Time       `json:"first_token,omitzero"` // when the engine produced its first token, before the handler wrote it
	Done          time.Time       `json:"done,omitzero"`        // when the response ended; zero while it runs
	Outcome       string          `json:"outcome"`              // "running", "length", or how it ended early: "aborted", "closed", "fault:NAME"
	OutputTokens  int             `json:"output_tokens"`        // tokens written
	ChunkCount    int             `json:"chunk_count"`          // chunks written that carried tokens
	Chunks        []loadgen.Chunk `json:"chunks"`               // those chunks, unless dropped: each one's flush time and tokens
	ChunksDropped int             `json:"chunks_dropped"`       // chunks written but not recorded
}

type record struct {
	mu      sync.Mutex
	t       RequestTruth
	at      []int64 // unix nanoseconds
	tokens  []int32
	dropped int
}

func newTruth(limit int64) *Truth {
	return &Truth{limit: limit, byID: make(map[string]*record)}
}

// start records a new request; it returns nil when recording is off.
func (t *Truth) start(id string, received time.Time, promptTokens int) *record {
	if t.limit < 0 {
		return nil
	}
	rec := &record{t: RequestTruth{ID: id, Received: received, PromptTokens: promptTokens, Outcome: "running"}}
	t.bytes.Add(requestRecordBytes)
	t.mu.Lock()
	t.byID[id] = rec
	t.order = append(t.order, rec)
	t.mu.Unlock()
	return rec
}

// queued records when the request was handed to the engine.
func (t *Truth) queued(rec *record, at time.Time) {
	if rec == nil {
		return
	}
	rec.mu.Lock()
	rec.t.Queued = at
	rec.mu.Unlock()
}

// chunk records a chunk of tokens flushed at time at.
func (t *Truth) chunk(rec *record, at time.Time, tokens int) {
	if rec == nil {
		return
	}
	keep := t.bytes.Load() < t.limit
	if keep {
		t.bytes.Add(chunkRecordBytes)
	}
	rec.mu.Lock()
	rec.t.OutputTokens += tokens
	rec.t.ChunkCount++
	if keep {
		rec.at = append(rec.at, monoNanos(at))
		rec.tokens = append(rec.tokens, int32(tokens))
	} else {
		rec.dropped++
	}
	rec.mu.Unlock()
}

// finish records how the request ended, then forgets old requests if the
// records are over their limit.
func (t *Truth) finish(rec *record, at time.Time, outcome string, cached int) {
	if rec == nil {
		return
	}
	rec.mu.Lock()
	rec.t.Done = at
	rec.t.Outcome = outcome
	rec.t.CachedTokens = cached
	rec.mu.Unlock()
	if t.bytes.Load() <= t.limit {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := 0
	for _, r := range t.order {
		r.mu.Lock()
		forget := t.bytes.Load() > t.limit && !r.t.Done.IsZero()
		size := requestRecordBytes + chunkRecordBytes*int64(len(r.at))
		r.mu.Unlock()
		if forget {
			delete(t.byID, r.t.ID)
			t.bytes.Add(-size)
			t.evicted.Add(1)
			continue
		}
		t.order[k] = r
		k++
	}
	clear(t.order[k:])
	t.order = t.order[:k]
}

// Request returns the record of the request with the given response id.
func (t *Truth) Request(id string) (RequestTruth, bool) {
	t.mu.Lock()
	rec, ok := t.byID[id]
	t.mu.Unlock()
	if !ok {
		return RequestTruth{}, false
	}
	return rec.snapshot(), true
}

// Requests returns the records kept, oldest first.
func (t *Truth) Requests() []RequestTruth {
	t.mu.Lock()
	recs := slices.Clone(t.order)
	t.mu.Unlock()
	out := make([]RequestTruth, len(recs))
	for i, rec := range recs {
		out[i] = rec.snapshot()
	}
	return out
}

// Forgotten returns how many finished requests were dropped to keep the
// records within their limit.
func (t *Truth) Forgotten() int64 { return t.evicted.Load() }

// Tokens returns the output tokens in recorded chunks flushed at or after
// from and before to.
func (t *Truth) Tokens(from, to time.Time) int {
	t.mu.Lock()
	recs := slices.Clone(t.order)
	t.mu.Unlock()
	lo, hi := monoNanos(from), monoNanos(to)
	n := 0
	for _, rec := range recs {
		rec.mu.Lock()
		i := sort.Search(len(rec.at), func(i int) bool { return rec.at[i] >= lo })
		for ; i < len(rec.at) && rec.at[i] < hi; i++ {
			n += int(rec.tokens[i])
		}
		rec.mu.Unlock()
	}
	return n
}

func (rec *record) snapshot() RequestTruth {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	t := rec.t
	t.ChunksDropped = rec.dropped
	t.Chunks = make([]loadgen.Chunk, len(rec.at))
	for i, at := range rec.at {
		t.Chunks[i] = loadgen.Chunk{Time: monoTime(at), Tokens: int(rec.tokens[i])}
	}
	return t
}
