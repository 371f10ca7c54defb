package workload

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/llmload/llmload/loadgen"
)

// Feed hands the items of a [Reader] to a [loadgen.Generator] as
// requests: [Feed.Source] is its Source, and for a workload with a
// schedule (a trace), [Feed.Load] its Load, arrivals at the items' times.
// It reads one item at a time, as requests need them, so a file is never
// held whole.
//
// When the Reader ends, or fails, the Feed stops the run: Source returns
// nil (which ends a run) and the schedule has no more arrivals;
// [Feed.Err] then says why, nil for a Reader that simply ended.
type Feed struct {
	r Reader
	b *Builder

	mu      sync.Mutex
	pending map[int]*loadgen.Request // arrivals timed, not yet sent
	read    int                      // items read
	made    int                      // requests made
	err     error
	ended   bool
}

// NewFeed returns a Feed of r's items, made into requests by b.
func NewFeed(r Reader, b *Builder) *Feed {
	return &Feed{r: r, b: b, pending: map[int]*loadgen.Request{}}
}

// next reads the next item; f.mu is held.
func (f *Feed) next() (Item, bool) {
	if f.ended {
		return Item{}, false
	}
	it, err := f.r.Read()
	if err != nil {
		f.ended = true
		if !errors.Is(err, io.EOF) {
			f.err = err
		}
		return Item{}, false
	}
	f.read++
	return it, true
}

// Source returns the request for arrival seq: the item the schedule of
// [Feed.Load] timed for it or, without a schedule, the next item. It is a
// [loadgen.Source], safe for concurrent use.
func (f *Feed) Source(_, seq int) *loadgen.Request {
	f.mu.Lock()
	req, ok := f.pending[seq]
	if ok {
		delete(f.pending, seq)
		f.mu.Unlock()
		return req
	}
	items := f.batch()
	n := f.made
	f.made++
	f.mu.Unlock()
	if items == nil {
		return nil
	}
	return f.request(items, n)
}

// batch reads the items of the next request: one, or a Builder's batch of
// Embeddings or Rerank inputs (fewer at the end of the items); nil at the
// end. f.mu is held.
func (f *Feed) batch() []Item {
	n := f.b.batch()
	var items []Item
	for len(items) < n {
		it, ok := f.next()
		if !ok {
			break
		}
		items = append(items, it)
	}
	return items
}

// request makes the request of items, the n-th the Feed made: it names
// the Builder's Models in turn, where it has them.
func (f *Feed) request(items []Item, n int) *loadgen.Request {
	var req *loadgen.Request
	if len(items) == 1 && f.b.batch() == 1 {
		req = f.b.Request(items[0])
	} else {
		req = f.b.pooled(items)
	}
	if m := f.b.Models; len(m) > 0 {
		req.Model = m[n%len(m)]
	}
	return req
}

// Load returns the schedule of the items' arrivals: arrival seq is due
// at the At of the next item, from the start of the run, and the schedule
// ends with the items. Each request is made, and its body encoded, as its
// arrival is timed, before it is due, so that sending it costs nothing but
// the sending. Set the Schedule's MaxInFlight to cap the requests in
// flight.
func (f *Feed) Load() loadgen.Schedule {
	return loadgen.Schedule{Due: f.due}
}

// due times arrival seq; a Generator calls it in order of seq.
func (f *Feed) due(seq int) (time.Duration, bool) {
	f.mu.Lock()
	items := f.batch()
	n := f.made
	f.made++
	f.mu.Unlock()
	if items == nil {
		return 0, false
	}
	it := items[0]
	req := f.request(items, n)
	_, _ = req.Body() // a request that cannot work is refused when it is sent
	f.mu.Lock()
	f.pending[seq] = req
	f.mu.Unlock()
	return it.At, true
}

// Err returns why the items ended early: nil when the Reader simply ended
// or has not ended.
func (f *Feed) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return fmt.Errorf("workload: after %d items: %w", f.read, f.err)
	}
	return nil
}

// Close closes the Reader if it holds a file.
func (f *Feed) Close() error {
	closeReader(f.r)
	return nil
}
