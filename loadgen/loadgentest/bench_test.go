package loadgentest

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/llmload/llmload/internal/simtokens"
)

// BenchmarkEngineStep times one engine step with every request decoding, no
// HTTP: the scheduler's own cost per step and per running request.
func BenchmarkEngineStep(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("running=%d", n), func(b *testing.B) {
			p := FastProfile().withDefaults()
			e := newEngine(p)
			for i := range n {
				e.submit(testRequest(p, 16, fmt.Sprint(i), 1<<30))
			}
			step := func() {
				e.drain()
				e.schedule()
				e.publish()
				e.apply(time.Now())
			}
			for len(e.running) < n || e.nwait > 0 {
				step()
			}
			b.ReportAllocs()
			for b.Loop() {
				step()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/request")
		})
	}
}

// BenchmarkStreams runs N concurrent streams over loopback HTTP against the
// fast profile (10 ms decode steps, 100 tokens/s a stream) and reports the
// tokens per second the process writes. One op is one engine step; of-model
// is the profile's step time over the measured one (below 1 the simulator,
// not the model, sets the pace), and tokens/chunk above 1 means the writers
// lag the engine and merge tokens, as vLLM does for a slow consumer. The client side (one goroutine a stream,
// discarding the body) runs in the same process and shares its 2 cores.
func BenchmarkStreams(b *testing.B) {
	for _, tc := range []struct {
		streams int
		speed   float64
	}{{100, 1}, {1000, 1}, {4000, 1}, {8000, 1}, {1000, 10}} {
		b.Run(fmt.Sprintf("streams=%d/speed=%g", tc.streams, tc.speed), func(b *testing.B) {
			benchStreams(b, tc.streams, tc.speed)
		})
	}
}

func benchStreams(b *testing.B, streams int, speed float64) {
	p := FastProfile()
	p.Speed = speed
	srv := NewServer(p)
	defer srv.Close()
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	body := completion(simtokens.Prompt(32, "bench"), p.MaxModelLen-64, true)
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := post(ctx, srv, "/v1/completions", body, nil)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			io.Copy(io.Discard, resp.Body)
		}()
	}
	h := srv.Handler
	for st := h.Stats(); st.Running < streams; st = h.Stats() {
		time.Sleep(10 * time.Millisecond)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)

	start := h.Stats()
	b.ResetTimer()
	for b.Loop() {
		for s := h.Stats().Steps; h.Stats().Steps == s; {
			time.Sleep(200 * time.Microsecond)
		}
	}
	end := h.Stats()
	elapsed := b.Elapsed().Seconds()
	steps := float64(end.Steps - start.Steps)
	model := p.DecodeStepTime(streams, 0, 0).Seconds() / speed
	written := float64(end.WrittenTokens - start.WrittenTokens)
	b.ReportMetric(written/elapsed, "tokens/s")
	b.ReportMetric(written/float64(end.Chunks-start.Chunks), "tokens/chunk")
	b.ReportMetric(model/(elapsed/steps), "of-model")
	b.ReportMetric(float64(ms.HeapInuse+ms.StackInuse)/float64(streams), "B/stream")
	cancel()
}
