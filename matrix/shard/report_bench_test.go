package shard

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/metrics"
)

// benchStreams and benchWindow shape the part of a cell the report
// benchmarks send: what one shard measured of 1,000 streams of 100 tok/s
// over a 30 s window and its 5 s warm-up.
const (
	benchStreams = 1000
	benchWindow  = 30 * time.Second
	benchWarmup  = 5 * time.Second
)

// benchToken signs the benchmarks' reports.
const benchToken = "a-token-of-the-benchmarks"

var (
	benchPartOnce sync.Once
	benchPart     *part
)

// part is a follower's report as matrix writes it (its sharePart).
type part struct {
	Recording   metrics.Recording `json:"recording"`
	Streams     *matrix.Streams   `json:"streams,omitempty"`
	Health      loadgen.Health    `json:"health"`
	Warmup      textDuration      `json:"warmup"`
	WarmupEnded string            `json:"warmup_ended,omitempty"`
}

func (p *part) report() json.RawMessage {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return b
}

func readPart(tb testing.TB, b json.RawMessage) *part {
	var p part
	if err := json.Unmarshal(b, &p); err != nil {
		tb.Fatal(err)
	}
	return &p
}

// realisticPart returns a shard's part of a cell as RunShare makes it:
// benchStreams closed-loop streams, each request 1,024 tokens, 10 ms
// between tokens with the jitter of a loaded server (a small spread, and
// one gap in 50 a stall of 20–60 ms), first tokens after 40–200 ms, the
// last request of each stream cut at the window's end. Its histograms
// hold about 3.5 M gaps over many buckets, as a real cell's do.
func realisticPart(seed uint64) *part {
	r := rand.New(rand.NewPCG(seed, 7))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	window := metrics.Window{Start: t0, End: t0.Add(benchWindow)}
	var rec metrics.Recorder
	rec.SetWindow(window)
	for s := range benchStreams {
		t := t0.Add(-benchWarmup + time.Duration(s)*time.Millisecond)
		for t.Before(window.End) {
			tl := &metrics.Timeline{Start: t, Sent: t.Add(time.Duration(20+r.IntN(200)) * time.Microsecond)}
			at := tl.Sent.Add(time.Duration(40+r.IntN(160)) * time.Millisecond)
			cut := false
			for range 1024 {
				if !at.Before(window.End) {
					cut = true
					break
				}
				rec.Observe(tl, at, 1)
				gap := 10*time.Millisecond + time.Duration(r.NormFloat64()*300)*time.Microsecond
				if r.IntN(50) == 0 {
					gap += time.Duration(20+r.IntN(40)) * time.Millisecond
				}
				at = at.Add(gap)
			}
			if cut {
				tl.End, tl.Kind = window.End, metrics.KindCanceled
			} else {
				tl.End, tl.FinishReason = tl.Last.Add(100*time.Microsecond), "length"
			}
			rec.Record(tl)
			t = tl.End.Add(50 * time.Microsecond)
		}
	}
	return &part{
		Recording: rec.Recording(metrics.ScopeAll),
		Streams: &matrix.Streams{Samples: 3000, AvgDecoding: 990, AvgWaiting: 10, PeakDecoding: 1000,
			Ceiling: 1000, CeilingShare: 0.4, AllShare: 0.4, Launched: 3400, MeanWaitMs: 120},
		Health: loadgen.Health{CPU: 0.3, Lag: metrics.Distribution{Count: 3000, P50: 100 * time.Microsecond, P99: 2 * time.Millisecond}},
		Warmup: textDuration(benchWarmup), WarmupEnded: "tokens flowed from every stream for 3s",
	}
}

func benchReport(b *testing.B) reportRequest {
	b.Helper()
	benchPartOnce.Do(func() { benchPart = realisticPart(1) })
	return reportRequest{Index: 1, Seq: 3, Clock: clock{Offset: 12 * time.Microsecond, Error: 40 * time.Microsecond}, Part: benchPart.report()}
}

// BenchmarkShardReport measures what a follower's part of one cell costs
// the run: its size on the wire (bytes/report, the JSON a follower posts),
// the follower's encoding, the leader's decoding, the whole report over
// loopback HTTP (encode, send, decode, answer), and the leader's exact
// merge of the part into the cell (metrics.MergeRecordings of the leader's
// recording and the follower's). The part is realisticPart's: 1,000
// streams × 30 s of 100 tok/s.
func BenchmarkShardReport(b *testing.B) {
	in := benchReport(b)
	wire, err := json.Marshal(in)
	if err != nil {
		b.Fatal(err)
	}
	// A follower encodes its part (the histograms in V2) and then the
	// request around it: both are the encoding's cost.
	encode := func() reportRequest {
		r := in
		r.Part = benchPart.report()
		return r
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(encode()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(wire)), "bytes/report")
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out reportRequest
			if err := json.Unmarshal(wire, &out); err != nil {
				b.Fatal(err)
			}
			readPart(b, out.Part)
		}
	})
	b.Run("send", func(b *testing.B) {
		// The leader's side as ServeHTTP and the Runner take a report:
		// the body read, checked against its signature and decoded, the
		// part read, an empty answer signed.
		l := &Leader{Token: benchToken}
		l.init()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var got reportRequest
			if err := l.checkRequest(r, time.Now()); err != nil {
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
			body, err := bodyOf(w, r, maxReport)
			if err == nil {
				err = decode(r, body, &got)
			}
			if err == nil {
				var p part
				err = json.Unmarshal(got.Part, &p)
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			answer := []byte("{}")
			w.Header().Set("Content-Type", "application/json")
			signResponse(w.Header(), l.Token, r.URL.Path, r.Header.Get(headerNonce), answer)
			_, _ = w.Write(answer)
		}))
		defer srv.Close()
		hc := srv.Client()
		b.ReportAllocs()
		for b.Loop() {
			if err := post(context.Background(), hc, benchToken, l.run, srv.URL, pathReport, encode(), nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(wire)), "bytes/report")
	})
	b.Run("merge", func(b *testing.B) {
		own := realisticPart(2).Recording
		var in reportRequest
		if err := json.Unmarshal(wire, &in); err != nil {
			b.Fatal(err)
		}
		p := readPart(b, in.Part)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := metrics.MergeRecordings(own, p.Recording); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestRealisticPartRoundTrips: the benchmarks' part holds what a cell of
// 1,000 streams × 30 s of 100 tok/s holds, and travels whole: decoded, it
// merges with the leader's into a cell of both shards' tokens and values.
func TestRealisticPartRoundTrips(t *testing.T) {
	longtest.Skip(t)
	if testing.Short() {
		t.Skip("records 3.5 M gaps")
	}
	p := realisticPart(1)
	s := p.Recording.Summary
	if s.OutputTokens < 2_500_000 || s.OutputTokens > 3_100_000 {
		t.Fatalf("the part counts %d tokens in its window, not about 1,000 × 30 s × 97 tok/s", s.OutputTokens)
	}
	wire, err := json.Marshal(reportRequest{Index: 1, Seq: 1, Part: p.report()})
	if err != nil {
		t.Fatal(err)
	}
	var back reportRequest
	if err := json.Unmarshal(wire, &back); err != nil {
		t.Fatal(err)
	}
	own := realisticPart(2).Recording
	merged, err := metrics.MergeRecordings(own, readPart(t, back.Part).Recording)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := merged.Summary.OutputTokens, own.Summary.OutputTokens+s.OutputTokens; got != want {
		t.Errorf("merged %d tokens, want %d", got, want)
	}
	if got, want := merged.Histograms.ITL.Summary().Count, own.Histograms.ITL.Summary().Count+p.Recording.Histograms.ITL.Summary().Count; got != want {
		t.Errorf("merged %d gaps, want %d", got, want)
	}
	if merged.Histograms.ITL.Summary().Max != max(own.Histograms.ITL.Summary().Max, p.Recording.Histograms.ITL.Summary().Max) {
		t.Errorf("merged gap maximum %v is not the larger of the parts'", merged.Histograms.ITL.Summary().Max)
	}
}
