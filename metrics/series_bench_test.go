package metrics

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkObserveSeries is one token observed, its gap recorded, with and
// without a time series: what keeping a series adds to a token's cost. The
// tokens arrive as from 100 streams of 100 tokens a second, 10,000 a
// second of the clock, a new recorder for each minute of it.
//
//	go test -run '^$' -bench ObserveSeries -count 3 ./metrics
func BenchmarkObserveSeries(b *testing.B) {
	for _, every := range []time.Duration{0, time.Second, 50 * time.Millisecond} {
		b.Run(fmt.Sprintf("every=%v", every), func(b *testing.B) {
			r := &Recorder{Every: every}
			g := newGaps()
			t := time.Now()
			minute := t.Add(time.Minute)
			tl := &Timeline{Start: t, Sent: t}
			for b.Loop() {
				t = t.Add(g.next() / 100)
				if t.After(minute) {
					r, minute = &Recorder{Every: every}, t.Add(time.Minute)
				}
				r.Observe(tl, t, 1)
				if tl.Tokens == tokensPerRequest {
					tl.End, tl.Done = t, true
					r.Record(tl)
					tl = &Timeline{Start: t, Sent: t}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/token")
		})
	}
}
