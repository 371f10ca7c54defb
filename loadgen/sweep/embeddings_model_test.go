package sweep_test

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/loadgen/workload"
	"github.com/llmload/llmload/metrics"
)

// The embeddings model's workload: requests of embedBatch inputs of
// embedInput tokens each.
const (
	embedBatch = 4
	embedInput = 32
	embedReq   = embedBatch * embedInput
)

// embedProfile is a simulated server whose pooling model makes a clear
// knee: a step costs 40 ms plus 200 µs a token, up to 1,024 tokens (8 of
// the workload's requests) a step: batches small enough that a window of
// a few seconds holds many of them. Its steps are long beside the timer
// lateness of a busy machine, which adds to every answer's latency.
func embedProfile() loadgentest.Profile {
	return loadgentest.Profile{Name: "embed", MaxNumBatchedTokens: 1024, PoolStep: 0.040, PoolPerToken: 200e-6, TruthBytes: -1}
}

// poolStep is the pooling model's step over tokens input tokens.
func poolStep(p loadgentest.Profile, tokens int) float64 {
	return p.PoolStep + p.PoolPerToken*float64(tokens)
}

// embedCapacity is the requests a second of the pooling model kept full:
// a step of as many requests as its token budget holds.
func embedCapacity(p loadgentest.Profile) float64 {
	k := p.MaxNumBatchedTokens / embedReq
	return float64(k) / poolStep(p, k*embedReq)
}

// embedLatency is the q-quantile latency, in seconds, of the pooling model
// receiving n requests evenly at rate a second: a replay of its steps,
// each taking every request waiting when it starts (within the budget)
// and starting when the last ends or, idle, at the next arrival.
func embedLatency(p loadgentest.Profile, rate, q float64, n int) float64 {
	perStep := p.MaxNumBatchedTokens / embedReq
	lat := make([]float64, 0, n)
	free := 0.0 // when the model is next free
	for i := 0; i < n; {
		arrival := float64(i) / rate
		start := math.Max(free, arrival)
		k := 0
		for i+k < n && k < perStep && float64(i+k)/rate <= start {
			k++
		}
		end := start + poolStep(p, k*embedReq)
		for j := i; j < i+k; j++ {
			lat = append(lat, end-float64(j)/rate)
		}
		i += k
		free = end
	}
	slices.Sort(lat)
	return lat[int(math.Ceil(q*float64(len(lat))))-1]
}

// embedHighestRate is the highest rate whose q-quantile latency is within
// slo, by bisection on the replay.
func embedHighestRate(p loadgentest.Profile, slo time.Duration, q float64, n int) float64 {
	lo, hi := 1.0, embedCapacity(p)
	for range 50 {
		mid := (lo + hi) / 2
		if embedLatency(p, mid, q, n) <= slo.Seconds() {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// embedTarget returns a Target against srv sending the embeddings
// workload, each run for window after warm-up, or n requests when n is
// set.
func embedTarget(srv *loadgentest.Server, window, warmup time.Duration, n int) sweep.Target {
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: loadgen.NewStreamTransport(256)}}
	seed := uint64(0)
	return func(loadgen.Load) (*loadgen.Generator, error) {
		seed++
		syn := &workload.Synthetic{Input: workload.Fixed(embedInput), Output: workload.Fixed(1), Sizing: workload.SimulatorSizing(false), Seed: seed}
		feed := workload.NewFeed(syn.Reader(), &workload.Builder{API: loadgen.Embeddings, Model: loadgentest.DefaultModel, Batch: embedBatch})
		g := &loadgen.Generator{Client: c, Source: feed.Source, Warmup: warmup, Duration: window, Requests: n}
		if n > 0 {
			g.Duration = 0
		}
		return g, nil
	}
}

// An embeddings sweep: the throughput run finds the pooling model's
// capacity, the synchronous run one step a request, each in requests and
// in input tokens a second, counted from the server's usage.
func TestEmbeddingsSweepFindsTheModelsThroughput(t *testing.T) {
	if !*modelRun {
		t.Skip("half a minute against the simulator: go test ./loadgen/sweep -run Model -model")
	}
	p := embedProfile()
	srv := loadgentest.NewServer(p)
	defer srv.Close()
	sw := &sweep.Sweep{Target: embedTarget(srv, 4*time.Second, 500*time.Millisecond, 0), Rates: 2, ThroughputStreams: 128, Open: loadgen.Open{Arrival: loadgen.Constant}}
	res, err := sw.Run(t.Context())
	require.NoError(t, err)
	runs := res.Runs
	require.Len(t, runs, 4)
	for _, r := range runs {
		t.Logf("%-22s %6.1f req/s  %8.0f in tok/s  latency p50 %v p90 %v", r.Label, r.RequestRate, r.InputTokensPerSec, r.Summary.Latency.P50, r.Summary.Latency.P90)
		assert.Zero(t, r.Summary.Failed, r.Label)
		assert.Zero(t, r.Summary.OutputTokens, "%s: no output", r.Label)
		assert.Equal(t, r.Summary.Completed*embedReq, r.Summary.InputTokens, "%s: the usage's input tokens, exactly", r.Label)
	}
	want := embedCapacity(p)
	through := runs[1]
	t.Logf("throughput run: capacity %.1f req/s; the model: %.1f req/s", through.Capacity, want)
	assert.InEpsilon(t, want, through.Capacity, 0.10, "the maximum request rate, within 10%% of the model's")
	assert.InEpsilon(t, want*embedReq, through.InputTokensPerSec, 0.10, "the maximum input token rate, within 10%% of the model's")

	// One request at a time: each takes a step of its own. The rate is
	// the client's as much as the server's (a busy machine's client waits
	// between requests), so the latency is judged, and the rate bounded.
	sync := runs[0]
	step := time.Duration(poolStep(p, embedReq) * float64(time.Second))
	t.Logf("synchronous run: %.1f req/s, latency p50 %v; the model: %.1f req/s, a step of %v", sync.RequestRate, sync.Summary.Latency.P50, 1/step.Seconds(), step)
	assert.InEpsilon(t, step.Seconds(), sync.Summary.Latency.P50.Seconds(), 0.10, "one request a step, as the model says")
	assert.LessOrEqual(t, sync.RequestRate, 1.02/step.Seconds(), "no faster than a step a request")
	for _, r := range runs[2:] {
		assert.InEpsilon(t, rateOf(r), r.RequestRate, 0.15, "the server keeps up with a rate below its maximum")
	}
}

// An embeddings SLO search on latency: its answer is within one step of
// the highest rate the pooling model's replay says keeps the 90th
// percentile of latency within the objective.
func TestEmbeddingsSearchFindsTheModelsHighestRate(t *testing.T) {
	if !*modelRun {
		t.Skip("half a minute against the simulator: go test ./loadgen/sweep -run Model -model")
	}
	p := embedProfile()
	srv := loadgentest.NewServer(p)
	defer srv.Close()
	const slo, q, n = 240 * time.Millisecond, 0.9, 100
	truth := embedHighestRate(p, slo, q, n)
	require.Greater(t, truth, 15.0, "the model's answer is well inside the range")
	require.Less(t, truth, embedCapacity(p)-5, "the model's answer is well inside the range")
	s := &sweep.Search{
		Target:    embedTarget(srv, 0, 500*time.Millisecond, n),
		Objective: sweep.Objective{SLO: metrics.SLO{Latency: slo}, Quantile: q},
		Step:      2, ThroughputStreams: 128, Open: loadgen.Open{Arrival: loadgen.Constant},
	}
	res, err := s.Run(t.Context())
	require.NoError(t, err)
	found, runs := res.Search, res.Runs
	for _, r := range runs {
		model := ""
		if rate := rateOf(r); rate > 0 {
			model = fmt.Sprintf("(the model: p90 %.1fms)", 1000*embedLatency(p, rate, q, n))
		}
		t.Logf("%-22s %6.1f req/s  latency p50 %v p90 %v %s  good %.0f%%  met %v", r.Label, r.RequestRate, r.Summary.Latency.P50, r.Summary.Latency.P90, model, r.GoodShare*100, r.Met)
	}
	t.Logf("found %.2f req/s (%s); the model: %.2f req/s", found.Rate, found.Reason, truth)
	assert.InDelta(t, truth, found.Rate, s.Step, "within one step of the model's highest rate")
	require.GreaterOrEqual(t, found.Below, 0)
	require.GreaterOrEqual(t, found.Above, 0)
	assert.True(t, runs[found.Below].Met)
	assert.False(t, runs[found.Above].Met)
	assert.LessOrEqual(t, found.High-found.Low, s.Step)
}
