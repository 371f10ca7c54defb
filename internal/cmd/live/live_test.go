package live

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/internal/simtokens"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/metrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scrape gets url and parses it with Prometheus' own text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// value returns the value of the family's metric whose labels include
// want, and whether there is one.
func value(f *dto.MetricFamily, want map[string]string) (float64, bool) {
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// A scrape while a run goes on shows its requests in flight, its tokens
// and its histograms, labelled with the cell and the shard; after the run,
// the requests by outcome add up to the run's.
func TestScrapeDuringRun(t *testing.T) {
	p := loadgentest.FastProfile()
	p.DecodeBase = []loadgentest.BatchCost{{Batch: 1, Seconds: 0.005}}
	srv := loadgentest.NewServer(p)
	defer srv.Close()
	client := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: loadgen.NewTransport(16)}}
	defer client.CloseIdleConnections()

	m := New("2")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, errc, err := m.Serve(ctx, "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + addr + "/metrics"

	req := &loadgen.Request{API: loadgen.Completions, Model: "bench", Prompt: simtokens.Prompt(32, "live"), MaxTokens: 40, IgnoreEOS: true}
	g := &loadgen.Generator{Client: client, Load: loadgen.Closed{Streams: 8}, Duration: 1500 * time.Millisecond, Source: loadgen.Repeat(req),
		OnRequest: func(_ *loadgen.Request, tl *metrics.Timeline) { m.Observe("4K × 8", tl) }}
	m.Track("4K × 8", g)
	done := make(chan *loadgen.Run)
	go func() {
		run, _ := g.Run(ctx)
		done <- run
	}()
	cell := map[string]string{"cell": "4K × 8", "shard": "2"}
	var inFlight, tokens, ttft float64
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		fams := scrape(t, url)
		inFlight, _ = value(fams["llmload_requests_in_flight"], cell)
		tokens, _ = value(fams["llmload_output_tokens_total"], cell)
		ttft, _ = value(fams["llmload_time_to_first_token_seconds"], cell)
		if inFlight > 0 && tokens > 0 && ttft > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	assert.Positive(t, inFlight, "requests in flight, mid-run")
	assert.Positive(t, tokens, "tokens so far")
	assert.Positive(t, ttft, "TTFTs observed")
	run := <-done

	fams := scrape(t, url)
	completed, _ := value(fams["llmload_requests_total"], map[string]string{"cell": "4K × 8", "outcome": "completed", "error": ""})
	canceled, _ := value(fams["llmload_requests_total"], map[string]string{"cell": "4K × 8", "outcome": "canceled", "error": "canceled"})
	all := run.Recorder.Recording(metrics.ScopeAll).Summary
	assert.EqualValues(t, all.Completed+all.CompletedOutside, completed)
	assert.EqualValues(t, all.Canceled, canceled)
	tokens, _ = value(fams["llmload_output_tokens_total"], cell)
	assert.EqualValues(t, g.Progress().Tokens, tokens)
	inFlight, _ = value(fams["llmload_requests_in_flight"], cell)
	assert.Zero(t, inFlight, "after the run")
	lat, ok := value(fams["llmload_e2e_request_latency_seconds"], cell)
	assert.True(t, ok)
	assert.EqualValues(t, completed, lat)
	assert.Equal(t, dto.MetricType_HISTOGRAM, fams["llmload_time_between_tokens_seconds"].GetType())

	cancel()
	select {
	case err := <-errc:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not stop with its context")
	}
}

func TestServeRefusesABusyAddress(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	m := New("")
	addr, errc, err := m.Serve(ctx, "127.0.0.1:0")
	require.NoError(t, err)
	_, _, err = New("").Serve(ctx, addr)
	assert.ErrorContains(t, err, "listening for the metrics' scrapes")
	cancel()
	<-errc
}

// scrapeOn sends a scrape on c and reads its answer; c stays open.
func scrapeOn(c net.Conn, r *bufio.Reader) error {
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: llmload\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answered %s", resp.Status)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// closedWithin reports whether the server closes c within d, and when.
func closedWithin(c net.Conn, r *bufio.Reader, d time.Duration) (bool, time.Duration) {
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(d))
	_, err := r.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout()), time.Since(start)
}

// TestServeBoundsConnections: the metrics' server closes a connection
// kept alive and idle once its idle timeout has passed, and, while it
// holds its most connections, closes a new one as it comes, serving new
// ones again once some are gone. (The timeout and the cap are the test's,
// short and small; Serve's own are serveBounds.)
func TestServeBoundsConnections(t *testing.T) {
	const idle, most = 400 * time.Millisecond, 4
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	m := New("")
	m.bounds.IdleTimeout, m.bounds.MaxConns, m.bounds.MaxConnsAHost = idle, most, most
	addr, errc, err := m.Serve(ctx, "127.0.0.1:0")
	require.NoError(t, err)
	defer func() {
		cancel()
		<-errc
	}()
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}

	conns := make([]net.Conn, most)
	readers := make([]*bufio.Reader, most)
	var firstUsed time.Time
	for i := range conns {
		conns[i], readers[i] = dial()
		require.NoError(t, scrapeOn(conns[i], readers[i]), "connection %d", i)
		if i == 0 {
			firstUsed = time.Now()
		}
	}
	over, overR := dial()
	_ = over.SetDeadline(time.Now().Add(5 * time.Second))
	assert.Error(t, scrapeOn(over, overR), "a connection beyond the cap is closed as it comes")
	closed, _ := closedWithin(over, overR, 5*time.Second)
	assert.True(t, closed, "the connection beyond the cap is closed")

	for i := range conns {
		closed, after := closedWithin(conns[i], readers[i], idle+5*time.Second)
		assert.True(t, closed, "idle connection %d is closed", i)
		t.Logf("idle connection %d closed after %v of waiting", i, after)
	}
	assert.GreaterOrEqual(t, time.Since(firstUsed), idle*9/10, "closed once idle for the timeout, not before")
	// The cap counts the connections held: with the idle ones gone, a new
	// one is served (the server's count drops as it closes them).
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, r := dial()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		err := scrapeOn(c, r)
		c.Close()
		if err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "no connection served after the idle ones were closed: %v", err)
		time.Sleep(20 * time.Millisecond)
	}
}

// The Grafana dashboard in deploy/grafana asks only for metrics this
// package serves (and vLLM's), and each of this package's metrics is on it.
func TestDashboardNamesTheMetrics(t *testing.T) {
	b, err := os.ReadFile("../../../deploy/grafana/llmload.json")
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	require.NoError(t, json.Unmarshal(b, &dash))
	m := New("")
	t0 := time.Now()
	m.Observe("c", &metrics.Timeline{Sent: t0, First: t0.Add(time.Millisecond), Last: t0.Add(2 * time.Millisecond),
		End: t0.Add(2 * time.Millisecond), Chunks: 2, Tokens: 2, Done: true})
	served := map[string]bool{}
	mfs, err := m.reg.Gather()
	require.NoError(t, err)
	for _, f := range mfs {
		served[f.GetName()] = true
	}
	for _, d := range []*prometheus.Desc{inFlightDesc, decodingDesc, tokensDesc} {
		served[regexp.MustCompile(`fqName: "([^"]+)"`).FindStringSubmatch(d.String())[1]] = true
	}
	used := map[string]bool{}
	name := regexp.MustCompile(`llmload_[a-z0-9_]+`)
	for _, p := range dash.Panels {
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			for _, n := range name.FindAllString(tg.Expr, -1) {
				n = strings.TrimSuffix(n, "_bucket")
				assert.True(t, served[n], "%s: %s is not served", p.Title, n)
				used[n] = true
			}
		}
	}
	for n := range served {
		assert.True(t, used[n], "%s is on no panel", n)
	}
}
