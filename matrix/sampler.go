package matrix

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/llmload/llmload/internal/background"
	"github.com/llmload/llmload/internal/promtext"
	"github.com/llmload/llmload/internal/redact"
	"github.com/llmload/llmload/internal/seriesview"
	"github.com/llmload/llmload/metrics"
)

// gauges is one reading of a server's /metrics: the figures a cell needs.
// A field is negative when the server does not publish it.
type gauges struct {
	Time        time.Time
	Running     float64
	Waiting     float64
	KVUsage     float64 // 0–1
	Preemptions float64 // a counter
}

// The metric names read: vLLM's, SGLang's, llama.cpp's (with --metrics),
// TGI's.
var (
	runningNames     = []string{"vllm:num_requests_running", "sglang:num_running_reqs", "llamacpp:requests_processing", "tgi_batch_current_size"}
	waitingNames     = []string{"vllm:num_requests_waiting", "sglang:num_queue_reqs", "llamacpp:requests_deferred", "tgi_queue_size"}
	kvUsageNames     = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"}
	preemptionsNames = []string{"vllm:num_preemptions_total", "vllm:num_preemptions"}
)

// parseGauges reads a Prometheus text exposition (see gaugesOf).
func parseGauges(r io.Reader) (gauges, error) {
	families, err := promtext.Parse(r)
	if err != nil {
		return gauges{Running: -1, Waiting: -1, KVUsage: -1, Preemptions: -1}, fmt.Errorf("matrix: parse /metrics: %w", err)
	}
	return gaugesOf(families), nil
}

// gaugesOf picks the figures a cell needs from a reading of /metrics.
// Metrics with several series (per model, per engine) are summed; the KV
// cache's usage is their mean.
func gaugesOf(families promtext.Families) gauges {
	pick := func(names []string, usage bool) float64 {
		for _, n := range names {
			if f, ok := families[n]; ok {
				v := promtext.Sum(f)
				if usage && len(f.GetMetric()) > 1 {
					v /= float64(len(f.GetMetric()))
				}
				return v
			}
		}
		return -1
	}
	return gauges{
		Running:     pick(runningNames, false),
		Waiting:     pick(waitingNames, false),
		KVUsage:     pick(kvUsageNames, true),
		Preemptions: pick(preemptionsNames, false),
	}
}

// sampler reads a server's /metrics about once a second in the background
// and keeps the latest reading and, for a window MarkWindow gives, a summary.
type sampler struct {
	client *http.Client
	url    string
	every  time.Duration

	mu       sync.Mutex
	last     gauges
	ok       bool  // the server has answered with metrics
	err      error // the last failure
	marking  bool
	from     time.Time // the start of the marked span
	until    time.Time // its end
	count    int
	sumRun   float64
	peakRun  float64
	maxWait  float64
	sumWait  float64
	waited   int // samples with a request waiting
	noWait   bool
	preFirst float64
	preLast  float64
	maxKV    float64
	keeping  bool
	kept     []gauges // the readings since Keep, for a cell's time series

	task background.Task // the sampling, from Start to Close
}

// newSampler returns a sampler of baseURL's /metrics ("/v1" is dropped),
// not yet started.
func newSampler(client *http.Client, baseURL string, every time.Duration) *sampler {
	if client == nil {
		client = http.DefaultClient
	}
	base := strings.TrimSuffix(strings.TrimRight(baseURL, "/"), "/v1")
	return &sampler{client: client, url: base + "/metrics", every: every}
}

// Start begins sampling; Close ends it.
func (s *sampler) Start(ctx context.Context) {
	s.task.Start(func(stop <-chan struct{}) {
		t := time.NewTicker(s.every)
		defer t.Stop()
		for {
			s.sample(ctx)
			select {
			case <-t.C:
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
		}
	})
}

// Close stops sampling and waits for the sampler to end.
func (s *sampler) Close() { s.task.Stop() }

// sampleTimeout bounds one reading of /metrics.
const sampleTimeout = 5 * time.Second

// Sample reads /metrics once now, within sampleTimeout.
func (s *sampler) Sample(ctx context.Context) (gauges, error) {
	families, err := promtext.Get(ctx, s.client, s.url, redact.URL(s.url), sampleTimeout)
	if err != nil {
		return gauges{}, fmt.Errorf("matrix: %w", err)
	}
	g := gaugesOf(families)
	g.Time = time.Now()
	return g, nil
}

func (s *sampler) sample(ctx context.Context) {
	g, err := s.Sample(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || g.Running < 0 {
		if err == nil {
			err = fmt.Errorf("matrix: %s has no running-requests gauge", s.url)
		}
		s.err = err
		return
	}
	s.last, s.ok, s.err = g, true, nil
	if s.keeping {
		if len(s.kept) == maxKept {
			// Thin to every other reading: the span stays, its
			// resolution halves.
			for i := range maxKept / 2 {
				s.kept[i] = s.kept[2*i+1]
			}
			s.kept = s.kept[:maxKept/2]
		}
		s.kept = append(s.kept, g)
	}
	if !s.marking || !g.Time.Before(s.until) || g.Time.Before(s.from) {
		return
	}
	s.count++
	s.sumRun += g.Running
	s.peakRun = max(s.peakRun, g.Running)
	s.maxWait = max(s.maxWait, g.Waiting)
	if g.Waiting < 0 {
		s.noWait = true
	} else {
		s.sumWait += g.Waiting
		if g.Waiting >= 1 {
			s.waited++
		}
	}
	s.maxKV = max(s.maxKV, g.KVUsage)
	if g.Preemptions >= 0 {
		if s.count == 1 {
			s.preFirst = g.Preemptions
		}
		s.preLast = g.Preemptions
	}
}

// Latest returns the latest reading and whether there is one.
func (s *sampler) Latest() (gauges, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, s.ok
}

// Failing reports whether the latest reading failed: the server has no
// /metrics, publishes no running count, or did not answer in time.
func (s *sampler) Failing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err != nil
}

// maxKept bounds the readings kept for a cell's time series: 18 hours at
// one a second.
const maxKept = 1 << 16

// Keep starts keeping every reading afresh, until Kept.
func (s *sampler) Keep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keeping, s.kept = true, nil
}

// Kept stops keeping readings and returns those kept since Keep, oldest
// first.
func (s *sampler) Kept() []gauges {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.kept
	s.keeping, s.kept = false, nil
	return kept
}

// MarkWindow starts a summary afresh of the samples taken in w, whose
// start may be still to come.
func (s *sampler) MarkWindow(w metrics.Window) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marking, s.from, s.until = true, w.Start, w.End
	s.count, s.sumRun, s.peakRun, s.maxWait, s.preFirst, s.preLast, s.maxKV = 0, 0, 0, 0, 0, 0, 0
	s.sumWait, s.waited, s.noWait = 0, 0, false
}

// Summary ends the summary begun by MarkWindow and returns it, or nil when no
// sample was taken.
func (s *sampler) Summary() *serverSamples {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marking = false
	if s.count == 0 {
		return nil
	}
	out := &serverSamples{
		Count:       s.count,
		AvgRunning:  s.sumRun / float64(s.count),
		PeakRunning: s.peakRun,
		MaxWaiting:  max(s.maxWait, 0),
		Preemptions: s.preLast - s.preFirst,
		MaxKVUsage:  s.maxKV,
		NoWaiting:   s.noWait,
	}
	if !s.noWait {
		out.AvgWaiting = s.sumWait / float64(s.count)
		out.WaitingShare = float64(s.waited) / float64(s.count)
	}
	return out
}

// addServer sets a series' server columns from the readings of its span:
// the mean of the readings in each bucket, or the last one before it
// where none was taken in it, and the preemptions counted in it. A column
// the server does not publish stays empty.
func addServer(s *metrics.Series, readings []gauges) {
	n := seriesview.Len(s)
	if n == 0 || s.Every <= 0 || len(readings) == 0 {
		return
	}
	type column struct {
		out       *[]float64
		value     func(g gauges) float64
		sum, last []float64
		count     []int
	}
	cols := []*column{
		{out: &s.ServerRunning, value: func(g gauges) float64 { return g.Running }},
		{out: &s.ServerWaiting, value: func(g gauges) float64 { return g.Waiting }},
		{out: &s.ServerKVUsage, value: func(g gauges) float64 { return g.KVUsage }},
	}
	preempt := make([]float64, n)
	hasPreempt := false
	for _, c := range cols {
		c.sum, c.count = make([]float64, n), make([]int, n)
	}
	prev := -1.0
	for _, g := range readings {
		i := int(g.Time.Sub(s.Start) / s.Every)
		if g.Preemptions >= 0 {
			if prev >= 0 && i >= 0 && i < n && g.Preemptions > prev {
				preempt[i] += g.Preemptions - prev
			}
			prev, hasPreempt = g.Preemptions, true
		}
		for _, c := range cols {
			v := c.value(g)
			if v < 0 {
				continue
			}
			if c.last == nil {
				c.last = []float64{v}
			}
			switch {
			case i < 0:
				c.last[0] = v // before the series: the value it starts with
			case i < n:
				c.sum[i] += v
				c.count[i]++
			}
		}
	}
	for _, c := range cols {
		if c.last == nil {
			continue // the server does not publish it
		}
		// Before the first reading in the series, the last one before it
		// (or, for none, the first one taken).
		out := make([]float64, n)
		held := c.last[0]
		for i := range n {
			if c.count[i] > 0 {
				held = c.sum[i] / float64(c.count[i])
			}
			out[i] = math.Round(held*1000) / 1000
		}
		*c.out = out
	}
	if hasPreempt {
		s.ServerPreemptions = preempt
	}
}
