package matrix_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/report"
	"github.com/llmload/llmload/metrics"
)

// splitCheck gathers, per cell, each request's TTFT and its split as the
// hook a Runner's OnCell sets on each cell's generator sees them.
type splitCheck struct {
	mu    sync.Mutex
	diffs map[int][]time.Duration // by streams: |TTFT − (queue + prefill + rest)|
	split map[int]int             // by streams: the requests with the server's timings
}

// onCell hooks each request of the cell of streams.
func (sc *splitCheck) onCell(_, streams int, g *loadgen.Generator) {
	g.OnRequest = func(_ *loadgen.Request, tl *metrics.Timeline) { sc.onRequest(streams, tl) }
}

func (sc *splitCheck) onRequest(streams int, tl *metrics.Timeline) {
	q, p, rest, ok := tl.Split()
	if !ok {
		return
	}
	d := tl.TTFT() - (q + p + max(rest, 0))
	sc.mu.Lock()
	sc.diffs[streams] = append(sc.diffs[streams], max(d, -d))
	sc.split[streams]++
	sc.mu.Unlock()
}

// The matrix asks the simulator (a vLLM) for its own timings of every
// request, and each cell's TTFT splits into the server's queue, its
// prefill and the rest, at 1, 16 and 256 streams: per request the three
// add up to the client's TTFT within 1 ms at p50, the cell's means add up
// too, every request with the server's timings is in the cell's split,
// and every report shows it.
func TestCellsSplitTTFT(t *testing.T) {
	const speed = 10
	p := knownProfile(speed)
	p.MaxNumSeqs = 64 // 256 streams queue
	srv := loadgentest.NewServer(p)
	defer srv.Close()
	spec := matrix.Spec{
		URL: srv.URL + "/v1", Model: "bench", API: loadgen.Completions,
		Contexts: []int{0}, Concurrency: []int{1, 16, 256}, Prefill: []int{},
		Duration: 5 * time.Second, MaxTokens: 200,
		WarmupRule: &matrix.WarmupRule{Min: time.Second, Flow: time.Second, Timeout: 5 * time.Second},
	}
	sc := &splitCheck{diffs: map[int][]time.Duration{}, split: map[int]int{}}
	var log bytes.Buffer
	r := &matrix.Runner{Spec: spec.AtSpeed(speed), Server: capacity.Server{Simulated: true, Speed: speed},
		Client: &loadgen.Client{HTTPClient: srv.Client()}, Log: &log, OnCell: sc.onCell}
	res, err := r.Run(t.Context())
	require.NoError(t, err, log.String())

	for _, n := range []int{1, 16, 256} {
		c := res.Cell(0, n)
		require.NotNil(t, c.Measurement, "%d: %s %s", n, c.Status, c.Reason)
		m := c.Measurement
		sp := m.Recording.Summary.Split
		require.Positive(t, sp.Requests, "%d streams: the simulator reports its timings", n)
		assert.Equal(t, sc.split[n], int(sp.Requests), "%d streams: every request with the server's timings is in the split", n)
		assert.Equal(t, int(sp.Requests), m.SplitRequests)

		diffs := slices.Clone(sc.diffs[n])
		slices.Sort(diffs)
		assert.LessOrEqual(t, diffs[len(diffs)/2], time.Millisecond, "%d streams: queue + prefill + rest = TTFT at p50", n)
		assert.InDelta(t, float64(sp.TTFT.Mean), float64(sp.Queue.Mean+sp.Prefill.Mean+sp.Rest.Mean), float64(time.Millisecond),
			"%d streams: the means add up", n)
		assert.InDelta(t, float64(sp.Rest.P50)/1e6, m.Rest.P50, 1e-9, "the measurement's figures are the split's, in ms")
		assert.InDelta(t, float64(sp.Queue.P99)/1e6, m.ServerQueue.P99, 1e-9)
		t.Logf("%d streams: %d split; TTFT p50 %v = queue %v + prefill %v + rest %v; flag %q",
			n, sp.Requests, sp.TTFT.P50, sp.Queue.P50, sp.Prefill.P50, sp.Rest.P50, m.OutsideServer)
	}

	for f, want := range map[report.Format][]string{
		report.Table:    {"TTFT by the server's own timings", "Server queue", "Network and client"},
		report.Markdown: {"| Server queue | Server prefill | Network and client |"},
		report.CSV:      {"server_queue_ms,server_prefill_ms,rest_ms"},
		report.HTML:     {"TTFT by the server&#39;s timings of"},
		report.JSON:     {`"server_queue_ms"`, `"ttft_split"`, `"split_queue"`},
	} {
		var b bytes.Buffer
		require.NoError(t, report.Write(&b, f, res))
		for _, s := range want {
			assert.Contains(t, b.String(), s, "%s", f)
		}
	}
}

// A cell whose TTFT is mostly spent between the server and the client (a
// proxy that holds each request 40 ms before the simulator sees it) is
// flagged as the network's, or the client's when the client was short of
// CPU, with a note that says how much; every report says so.
func TestCellFlagsTimeOutsideTheServer(t *testing.T) {
	longtest.Skip(t)
	sim := loadgentest.NewServer(knownProfile(1))
	defer sim.Close()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/completions") {
			time.Sleep(40 * time.Millisecond)
		}
		sim.Handler.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	spec := matrix.Spec{
		URL: proxy.URL + "/v1", Model: "bench", API: loadgen.Completions,
		Contexts: []int{0}, Concurrency: []int{2}, Prefill: []int{},
		Duration: 2 * time.Second, MaxTokens: 20,
		WarmupRule: &matrix.WarmupRule{Min: 300 * time.Millisecond, Flow: 300 * time.Millisecond, Timeout: 5 * time.Second},
	}
	var log bytes.Buffer
	r := &matrix.Runner{Spec: spec, Client: &loadgen.Client{HTTPClient: proxy.Client()}, Log: &log}
	res, err := r.Run(t.Context())
	require.NoError(t, err, log.String())
	c := res.Cell(0, 2)
	require.NotNil(t, c.Measurement, "%s %s", c.Status, c.Reason)
	m := c.Measurement
	require.Positive(t, m.SplitRequests)
	assert.GreaterOrEqual(t, m.Rest.P50, 40.0, "the proxy's hold is outside the server")
	whose := "network"
	if m.ClientLimited {
		whose = "client"
	}
	assert.Equal(t, whose, m.OutsideServer)
	assert.True(t, slices.ContainsFunc(m.Notes, func(s string) bool {
		return strings.Contains(s, "of the mean TTFT was spent outside the server") && strings.Contains(s, "the "+whose+"'s")
	}), "%q", m.Notes)
	for _, f := range []report.Format{report.Table, report.Markdown, report.CSV, report.HTML, report.JSON} {
		var b bytes.Buffer
		require.NoError(t, report.Write(&b, f, res))
		assert.Contains(t, b.String(), whose, "%s", f)
		if f != report.CSV && f != report.JSON {
			assert.Contains(t, b.String(), "outside the server", "%s", f)
		}
	}
}
