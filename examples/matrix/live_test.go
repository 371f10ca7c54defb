package main

import (
	"bytes"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A scrape of -metrics-listen while the matrix runs parses with
// Prometheus' text parser and shows a cell's requests in flight, its
// tokens and its TTFT histogram, labelled with the cell.
func TestMetricsListen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	done := make(chan int, 1)
	var errOut bytes.Buffer
	go func() {
		var out bytes.Buffer
		done <- run(t.Context(), small(filepath.Join(dir, "r.json"), "-metrics-listen", addr), &out, &errOut)
	}()
	seen := map[string][3]float64{} // by cell: in flight, tokens, TTFTs, at most seen
	deadline := time.Now().Add(60 * time.Second)
	finished := false
	for !finished && time.Now().Before(deadline) {
		select {
		case code := <-done:
			require.Equal(t, 0, code, errOut.String())
			finished = true
		case <-time.After(50 * time.Millisecond):
		}
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		for i, name := range []string{"llmload_requests_in_flight", "llmload_output_tokens_total", "llmload_time_to_first_token_seconds"} {
			for _, m := range fams[name].GetMetric() {
				cell := label(m, "cell")
				v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
				s := seen[cell]
				s[i] = max(s[i], v)
				seen[cell] = s
			}
		}
	}
	require.True(t, finished, "the matrix ended")
	var live int
	for cell, s := range seen {
		assert.True(t, strings.Contains(cell, " × "), "a cell's label: %q", cell)
		if s[0] > 0 && s[1] > 0 && s[2] > 0 {
			live++
		}
	}
	assert.Positive(t, live, "a cell seen with requests in flight, tokens and TTFTs: %v", seen)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
