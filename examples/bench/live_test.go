package main

import (
	"net"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// A scrape of -metrics-listen while the run goes on parses with
// Prometheus' text parser and shows the run's requests in flight, tokens
// and TTFT histogram, labelled with the run.
func TestMetricsListen(t *testing.T) {
	addr := freeAddr(t)
	done := make(chan int, 1)
	var errOut string
	go func() {
		code, _, e := bench(t, append(quick, "-output-len", "200", "-concurrency", "4", "-duration", "2s", "-warmup", "0", "-metrics-listen", addr)...)
		errOut = e
		done <- code
	}()
	run := map[string]string{"cell": "concurrency 4", "shard": ""}
	var inFlight, tokens, ttft float64
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && (inFlight == 0 || tokens == 0 || ttft == 0) {
		time.Sleep(100 * time.Millisecond)
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue // not listening yet
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		inFlight = find(fams["llmload_requests_in_flight"], run)
		tokens = find(fams["llmload_output_tokens_total"], run)
		ttft = find(fams["llmload_time_to_first_token_seconds"], run)
	}
	assert.Positive(t, inFlight)
	assert.Positive(t, tokens)
	assert.Positive(t, ttft)
	require.Equal(t, 0, <-done, errOut)
	assert.Contains(t, errOut, "Serving the client's metrics at http://"+addr+"/metrics")
}

// find returns the value of the family's metric with the labels want (a
// histogram's sample count), or 0.
func find(f *dto.MetricFamily, want map[string]string) float64 {
next:
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue()
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue()
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return 0
}
