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

	"github.com/llmload/llmload/internal/harness/longtest"
)

// A scrape of -metrics-listen while the matrix runs parses with
// Prometheus' text parser and shows a cell's requests in flight, its
// tokens and its TTFT histogram, labelled with the cell.
func TestMetricsListen(t *testing.T) {
	longtest.Skip(t)
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

// scrapeCells scrapes url and returns, by cell and shard, the requests in
// flight, tokens and TTFTs; nil when nothing answers.
func scrapeCells(t *testing.T, url string) map[[2]string][3]float64 {
	resp, err := http.Get(url)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	out := map[[2]string][3]float64{}
	for i, name := range []string{"llmload_requests_in_flight", "llmload_output_tokens_total", "llmload_time_to_first_token_seconds"} {
		for _, m := range fams[name].GetMetric() {
			k := [2]string{label(m, "cell"), label(m, "shard")}
			v := out[k]
			v[i] = m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
			out[k] = v
		}
	}
	return out
}

// Every shard of a sharded run serves its own metrics: scraped while the
// cell runs, the leader's and the follower's each show the cell's requests
// in flight, tokens and TTFTs (counted as requests end: of 40 tokens, a
// token each 10 ms), labelled with the cell and the shard.
func TestMetricsListenSharded(t *testing.T) {
	longtest.Skip(t)
	if testing.Short() {
		t.Skip("builds and runs the command in two processes")
	}
	bin := buildMatrix(t)
	srv := newPacedServer(t)
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		return ln.Addr().String()
	}
	leaderAt, followerAt := free(), free()
	leader := startShard(t, bin, append(leaderArgs(srv.URL+"/v1", filepath.Join(t.TempDir(), "r.json"), 2, "6", 3*time.Second), "-max-tokens", "40", "-metrics-listen", leaderAt)...)
	f1 := startShard(t, bin, "-join", joinURL(t, leader), "-name", "f1", "-fleet-token-env", fleetTokenEnv, "-metrics-listen", followerAt)

	want := map[string][2]string{"leader": {"0 × 6", ""}, "follower": {"0 × 6", "f1"}}
	seen := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for len(seen) < 2 && time.Now().Before(deadline) && leader.wait(t, 100*time.Millisecond) == -1 {
		for who, at := range map[string]string{"leader": leaderAt, "follower": followerAt} {
			got := scrapeCells(t, "http://"+at+"/metrics")
			if v, ok := got[want[who]]; ok && v[0] > 0 && v[1] > 0 && v[2] > 0 {
				seen[who] = true
			}
		}
	}
	assert.True(t, seen["leader"], "the leader's scrape showed the cell live: %s", leader.log.String())
	assert.True(t, seen["follower"], "the follower's scrape showed its share live: %s", f1.log.String())
	require.Equal(t, 0, leader.wait(t, 90*time.Second), leader.log.String())
	assert.Equal(t, 0, f1.wait(t, 10*time.Second), f1.log.String())
}
