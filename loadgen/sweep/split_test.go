package sweep_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/loadgen/workload"
)

// splitTarget runs n requests that ask for the server's timings of a
// simulator that gets each request delay after it arrived, as over a slow
// network.
func splitTarget(t *testing.T, n int, delay time.Duration) sweep.Target {
	p := loadgentest.FastProfile()
	p.DecodeBase = []loadgentest.BatchCost{{Batch: 1, Seconds: 0.002}}
	p.PrefillPerToken = 2e-5
	h := loadgentest.NewHandler(p)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); h.Close() })
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: loadgen.NewTransport(8)}}
	t.Cleanup(c.CloseIdleConnections)
	return func(loadgen.Load) (*loadgen.Generator, error) {
		syn := &workload.Synthetic{Input: workload.Fixed(256), Output: workload.Fixed(8)}
		feed := workload.NewFeed(syn.Reader(), &workload.Builder{API: loadgen.Completions, Model: loadgentest.DefaultModel, IgnoreEOS: true,
			Extra: map[string]any{"include_metrics": true}})
		return &loadgen.Generator{Client: c, Source: feed.Source, Requests: n}, nil
	}
}

// A run's TTFT is split by the server's timings; when most of it was spent
// between the server and the client, the run is flagged as the network's
// (or the client's, when the client was short of CPU), and the table says
// so. Without the delay it is not.
func TestServerSplitFlagsTheNetwork(t *testing.T) {
	load := loadgen.Closed{Streams: 4}
	slow, err := sweep.Run(t.Context(), splitTarget(t, 40, 30*time.Millisecond), load, "slow", sweep.Objective{})
	require.NoError(t, err)
	sp := slow.Summary.Split
	assert.EqualValues(t, 40, sp.Requests)
	assert.GreaterOrEqual(t, sp.Rest.P50, 30*time.Millisecond, "the proxy's delay is outside the server")
	assert.Less(t, sp.Queue.P50+sp.Prefill.P50, 30*time.Millisecond)
	assert.InDelta(t, float64(sp.TTFT.Mean), float64(sp.Queue.Mean+sp.Prefill.Mean+sp.Rest.Mean), float64(time.Millisecond), "means add up")
	whose := "network"
	if slow.ClientLimited != "" {
		whose = "client" // a loaded machine kept the client from its timers
	}
	assert.Equal(t, whose, slow.OutsideServer)
	var b bytes.Buffer
	require.NoError(t, (&sweep.Results{Runs: []sweep.Result{slow}}).Write(&b, "table"))
	assert.Contains(t, b.String(), "Mean network and client (ms):")
	assert.Contains(t, b.String(), "of TTFT: the "+whose+"'s")
	// The block's TTFT of these requests is what its parts add up to.
	mean := func(label string) float64 {
		m := regexp.MustCompile(regexp.QuoteMeta(label) + `: +([0-9.]+)\n`).FindStringSubmatch(b.String())
		require.NotNil(t, m, "%s in %s", label, b.String())
		v, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		return v
	}
	assert.InDelta(t, mean("Mean TTFT of these (ms)"), mean("Mean server queue (ms)")+mean("Mean server prefill (ms)")+mean("Mean network and client (ms)"), 0.02)

	fast, err := sweep.Run(t.Context(), splitTarget(t, 40, 0), load, "fast", sweep.Objective{})
	require.NoError(t, err)
	require.Positive(t, fast.Summary.Split.Requests)
	if fast.ClientLimited == "" {
		assert.Empty(t, fast.OutsideServer, "rest p50 %v of TTFT p50 %v", fast.Summary.Split.Rest.P50, fast.Summary.Split.TTFT.P50)
	} else {
		// A loaded machine kept the client from its timers: the time
		// outside the server may be the client's, never the network's.
		assert.NotEqual(t, "network", fast.OutsideServer, "rest p50 %v of TTFT p50 %v, the client limited: %s", fast.Summary.Split.Rest.P50, fast.Summary.Split.TTFT.P50, fast.ClientLimited)
	}
}

// A results document written when a run kept its TTFT split and its
// latency from the scheduled arrival beside its summary reads with both in
// the summary.
func TestReadResultsMovesTheOldSplit(t *testing.T) {
	run, err := sweep.Run(t.Context(), splitTarget(t, 8, 0), loadgen.Closed{Streams: 2}, "old", sweep.Objective{})
	require.NoError(t, err)
	split := run.Summary.Split
	require.EqualValues(t, 8, split.Requests)
	var b bytes.Buffer
	require.NoError(t, (&sweep.Results{Runs: []sweep.Result{run}}).Write(&b, "json"))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	r0 := doc["runs"].([]any)[0].(map[string]any)
	sum := r0["summary"].(map[string]any)
	r0["server_split"] = sum["ttft_split"]
	r0["latency_from_due"] = map[string]any{"count": 3, "p50": 7000000}
	delete(sum, "ttft_split")
	delete(sum, "latency_from_due")
	old, err := json.Marshal(doc)
	require.NoError(t, err)
	require.NotContains(t, string(old), "ttft_split")

	back, err := sweep.ReadResults(bytes.NewReader(old))
	require.NoError(t, err)
	got := back.Runs[0].Summary
	assert.Equal(t, split, got.Split)
	assert.EqualValues(t, 3, got.LatencyFromDue.Count)
	assert.Equal(t, 7*time.Millisecond, got.LatencyFromDue.P50)
}
