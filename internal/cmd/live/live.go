// Package live exposes the client's own metrics in Prometheus' text format
// while a run goes on, for the commands' -metrics-listen: requests in
// flight and decoding, tokens, requests ended by outcome and error kind,
// and histograms of time to first token, time between tokens and
// end-to-end latency, each labelled with the cell or run ("cell") and the
// shard ("shard": "" for the leader or a run of one process). Grafana then
// shows the client beside the server's own dashboards (deploy/grafana).
// The gauges and the token counter are read from the generators at each
// scrape; the request counter and the histograms count requests as they
// end.
//
// Every name starts llmload_; the histograms are in seconds, as vLLM's:
//
//	llmload_requests_in_flight{cell,shard}            gauge
//	llmload_requests_decoding{cell,shard}             gauge: in flight with a first token
//	llmload_output_tokens_total{cell,shard}           counter
//	llmload_requests_total{cell,shard,outcome,error}  counter
//	llmload_time_to_first_token_seconds{cell,shard}   histogram
//	llmload_time_between_tokens_seconds{cell,shard}   histogram: each request's mean
//	llmload_e2e_request_latency_seconds{cell,shard}   histogram
package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llmload/llmload/internal/connlimit"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// Buckets of the latency histograms, in seconds: from 1 ms to 5 min.
var (
	ttftBuckets    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 320}
	tbtBuckets     = []float64{0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5}
	latencyBuckets = []float64{0.01, 0.05, 0.1, 0.3, 0.5, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480}
)

// Metrics holds a process's live metrics. Its methods are safe for
// concurrent use.
type Metrics struct {
	shard  string
	reg    *prometheus.Registry
	bounds connlimit.Bounds // of Serve's server

	requests *prometheus.CounterVec
	ttft     *prometheus.HistogramVec
	tbt      *prometheus.HistogramVec
	latency  *prometheus.HistogramVec

	mu      sync.Mutex
	tracked map[string]*tracked // by cell
}

// tracked is a generator whose progress a scrape reads: its in-flight
// requests and its tokens, with the tokens of the cell's earlier runs.
type tracked struct {
	progress func() loadgen.Progress
	tokens   int64 // of the cell's generators before this one
}

// New returns the metrics of a process; shard labels them (empty for the
// leader, or a run of one process).
func New(shard string) *Metrics {
	m := &Metrics{shard: shard, reg: prometheus.NewRegistry(), bounds: serveBounds, tracked: map[string]*tracked{}}
	labels := []string{"cell", "shard"}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmload_requests_total",
		Help: "Requests ended, by outcome (completed, failed, canceled) and error kind."}, append(labels, "outcome", "error"))
	m.ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "llmload_time_to_first_token_seconds",
		Help: "Time to first token as the client measured it, from the request being written.", Buckets: ttftBuckets}, labels)
	m.tbt = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "llmload_time_between_tokens_seconds",
		Help: "Each request's mean time between output tokens, as the client measured it.", Buckets: tbtBuckets}, labels)
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "llmload_e2e_request_latency_seconds",
		Help: "End-to-end latency of completed requests, from the request being written.", Buckets: latencyBuckets}, labels)
	m.reg.MustRegister(m.requests, m.ttft, m.tbt, m.latency, (*progressCollector)(m))
	return m
}

// Track makes a scrape read g's progress as cell's, until the cell's next
// Track: its requests in flight and decoding, and its tokens, added to
// those of the cell's earlier generators.
func (m *Metrics) Track(cell string, g *loadgen.Generator) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &tracked{progress: g.Progress}
	if old := m.tracked[cell]; old != nil {
		t.tokens = old.tokens + old.progress().Tokens
	}
	m.tracked[cell] = t
}

// Observe counts a finished request of cell: its outcome and error kind,
// and its times.
func (m *Metrics) Observe(cell string, tl *metrics.Timeline) {
	m.requests.WithLabelValues(cell, m.shard, tl.Outcome(), string(tl.Kind)).Inc()
	if d := tl.TTFT(); d > 0 {
		m.ttft.WithLabelValues(cell, m.shard).Observe(d.Seconds())
	}
	if d := tl.TimeBetweenTokens(); d > 0 {
		m.tbt.WithLabelValues(cell, m.shard).Observe(d.Seconds())
	}
	if tl.OK() {
		m.latency.WithLabelValues(cell, m.shard).Observe(tl.Latency().Seconds())
	}
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// serveBounds bound Serve's server, as a sharded run's leader's are
// bounded: a scraper, or anyone who reaches the port, holds a connection
// kept alive 30 s between scrapes (more than Prometheus' default interval
// of 15 s) and sends a request's headers in 5 s; the server holds 64
// connections, 16 from one address, and closes those beyond as they come.
var serveBounds = connlimit.Bounds{
	MaxConns: 64, MaxConnsAHost: 16,
	ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second,
	MaxHeaderBytes: 16 << 10,
}

// Serve serves the metrics at /metrics on addr until ctx ends, within
// bounds of time and of connections. It returns once it listens, with the
// address it listens on (addr may give port 0), or the error of
// listening; a failure after that is sent on errc.
func (m *Metrics) Serve(ctx context.Context, addr string) (string, <-chan error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("listening for the metrics' scrapes: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := m.bounds.Server(mux)
	errc := make(chan error, 1)
	go func() {
		if err := srv.Serve(m.bounds.Listener(ln)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
		close(errc)
	}()
	context.AfterFunc(ctx, func() {
		shut, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	})
	return ln.Addr().String(), errc, nil
}

// Start serves new metrics of shard at addr until ctx ends, for a
// command's -metrics-listen: it says where on log (nil: nowhere), and
// writes there a failure after it began to listen.
func Start(ctx context.Context, addr, shard string, log io.Writer) (*Metrics, error) {
	m := New(shard)
	at, errc, err := m.Serve(ctx, addr)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = io.Discard
	}
	fmt.Fprintf(log, "Serving the client's metrics at http://%s/metrics\n", at)
	go func() {
		if err := <-errc; err != nil {
			fmt.Fprintf(log, "the metrics' server stopped: %v\n", err)
		}
	}()
	return m, nil
}

var (
	inFlightDesc = prometheus.NewDesc("llmload_requests_in_flight", "Requests sent and not yet ended.", []string{"cell", "shard"}, nil)
	decodingDesc = prometheus.NewDesc("llmload_requests_decoding", "Requests in flight that have their first token.", []string{"cell", "shard"}, nil)
	tokensDesc   = prometheus.NewDesc("llmload_output_tokens_total", "Output tokens received, warm-up included.", []string{"cell", "shard"}, nil)
)

// progressCollector reads the tracked generators' progress at each scrape.
type progressCollector Metrics

func (c *progressCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- inFlightDesc
	ch <- decodingDesc
	ch <- tokensDesc
}

func (c *progressCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for cell, t := range c.tracked {
		p := t.progress()
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(p.InFlight), cell, c.shard)
		ch <- prometheus.MustNewConstMetric(decodingDesc, prometheus.GaugeValue, float64(p.WithToken), cell, c.shard)
		ch <- prometheus.MustNewConstMetric(tokensDesc, prometheus.CounterValue, float64(t.tokens+p.Tokens), cell, c.shard)
	}
}
