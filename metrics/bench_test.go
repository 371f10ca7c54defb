package metrics

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkConcurrentGaps compares three ways for many workers to record
// the gaps between tokens into one cell's distribution, with b.RunParallel
// and one op per token:
//
//   - guarded: one Histogram behind a mutex, every gap recorded under it;
//   - per-worker: a Histogram per worker, no lock, merged into one at the end;
//   - recorder: the Recorder as it is: Observe buffers a request's gaps in its
//     Timeline and flushes them, 16 at a time, into one of 8 sharded
//     histograms; Record flushes the rest at the end of each request (1,000
//     tokens here). Observe also keeps the live token counts and the window's
//     tally, which the other two schemes do not.
//
// ns/token is the recording alone, contention included. fixed-ms is what a
// cell pays once: allocating the histograms and merging them (or, for the
// recorder, merging its shards as Summary does). recorder+series is the
// recorder keeping a time series of 1 s buckets as well. heap-B is the memory the
// scheme holds (histograms, and for the recorder the workers' timelines),
// measured as live heap growth: a histogram takes about 188 KB. A cell
// records about 6 million gaps a minute at 1,000 streams of 100 tokens/s.
//
//	go test -run '^$' -bench ConcurrentGaps -count 3 ./metrics
func BenchmarkConcurrentGaps(b *testing.B) {
	for _, workers := range []int{128, 1000} {
		for _, sc := range []struct {
			name string
			run  func(b *testing.B, workers int) (fixed time.Duration, held uint64)
		}{
			{"guarded", benchGuarded},
			{"per-worker", benchPerWorker},
			{"recorder", func(b *testing.B, workers int) (time.Duration, uint64) { return benchRecorder(b, workers, 0) }},
			{"recorder+series", func(b *testing.B, workers int) (time.Duration, uint64) { return benchRecorder(b, workers, time.Second) }},
		} {
			b.Run(fmt.Sprintf("workers=%d/%s", workers, sc.name), func(b *testing.B) {
				procs := runtime.GOMAXPROCS(0)
				per := (workers + procs - 1) / procs
				b.SetParallelism(per) // per × GOMAXPROCS goroutines
				b.ReportAllocs()
				fixed, held := sc.run(b, per*procs)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/token")
				b.ReportMetric(float64(fixed.Microseconds())/1e3, "fixed-ms")
				b.ReportMetric(float64(held), "heap-B")
			})
		}
	}
}

// gaps yields a worker's gaps between tokens: 5 to 15 ms, as from a server
// decoding at about 100 tokens/s.
type gaps struct{ r *rand.Rand }

var gapSeed atomic.Uint64

func newGaps() gaps {
	return gaps{rand.New(rand.NewPCG(1, gapSeed.Add(1)))}
}

func (g gaps) next() time.Duration {
	return 5*time.Millisecond + time.Duration(g.r.Int64N(int64(10*time.Millisecond)))
}

// liveHeap returns the bytes of live heap objects, after a GC.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func benchGuarded(b *testing.B, workers int) (time.Duration, uint64) {
	base := liveHeap()
	start := time.Now()
	var mu sync.Mutex
	h := NewHistogram()
	fixed := time.Since(start)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := newGaps()
		for pb.Next() {
			d := g.next()
			mu.Lock()
			h.Record(d)
			mu.Unlock()
		}
	})
	b.StopTimer()
	held := liveHeap() - base
	if h.Count() != int64(b.N) {
		b.Fatalf("recorded %d gaps, want %d", h.Count(), b.N)
	}
	return fixed, held
}

func benchPerWorker(b *testing.B, workers int) (time.Duration, uint64) {
	base := liveHeap()
	start := time.Now()
	hs := make([]*Histogram, workers)
	for i := range hs {
		hs[i] = NewHistogram()
	}
	fixed := time.Since(start)
	var next atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		h := hs[next.Add(1)-1]
		g := newGaps()
		for pb.Next() {
			h.Record(g.next())
		}
	})
	b.StopTimer()
	held := liveHeap() - base
	start = time.Now()
	var all Histogram
	for _, h := range hs {
		if err := all.Merge(h); err != nil {
			b.Fatal(err)
		}
	}
	fixed += time.Since(start)
	if all.Count() != int64(b.N) {
		b.Fatalf("recorded %d gaps, want %d", all.Count(), b.N)
	}
	return fixed, held
}

// tokensPerRequest is how many tokens each request of the recorder scheme
// streams before Record.
const tokensPerRequest = 1000

// benchRecorder runs the recorder, keeping a time series of buckets of
// every when above 0.
func benchRecorder(b *testing.B, workers int, every time.Duration) (time.Duration, uint64) {
	t0 := time.Now()
	r := &Recorder{Every: every}
	r.SetWindow(Window{Start: t0, End: t0.Add(24 * time.Hour)})
	// The per-request histograms (TTFT, latency, ...) would exist in every
	// scheme: create them before the baseline.
	p := &r.parts[partWindow]
	for _, h := range []*Histogram{&p.ttft, &p.tbt, &p.tpot, &p.latency, &p.wait} {
		h.init()
	}

	base := liveHeap()
	var (
		mu        sync.Mutex
		timelines []*Timeline // the workers' last timelines, kept to measure them
		requests  atomic.Int64
	)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := newGaps()
		t := t0
		tl := &Timeline{Start: t, Sent: t}
		for pb.Next() {
			t = t.Add(g.next())
			r.Observe(tl, t, 1)
			if tl.Tokens == tokensPerRequest {
				tl.End, tl.Done = t, true
				r.Record(tl)
				requests.Add(1)
				tl = &Timeline{Start: t, Sent: t}
			}
		}
		if tl.Tokens > 0 {
			tl.End, tl.Done = t, true
			r.Record(tl)
			requests.Add(1)
		}
		mu.Lock()
		timelines = append(timelines, tl)
		mu.Unlock()
	})
	b.StopTimer()
	held := liveHeap() - base
	runtime.KeepAlive(timelines)
	start := time.Now()
	itl := r.itl([]int{partWindow}) // as Summary merges the shards
	fixed := time.Since(start)
	// A request's first token has no gap before it.
	if want := int64(b.N) - requests.Load(); itl.Count() != want {
		b.Fatalf("recorded %d gaps, want %d", itl.Count(), want)
	}
	return fixed, held
}

// BenchmarkHistogramRecord is one Record into a Histogram, without
// contention: the HDR bucket and the exact count, minimum, maximum and sum
// kept beside it.
//
//	go test -run '^$' -bench HistogramRecord -count 5 ./metrics
func BenchmarkHistogramRecord(b *testing.B) {
	var h Histogram
	g := newGaps()
	values := make([]time.Duration, 1024)
	for i := range values {
		values[i] = g.next()
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h.Record(values[i&1023])
		i++
	}
}
