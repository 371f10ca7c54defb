package sweep_test

import (
	"flag"
	"math"
	"net/http"
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

var modelRun = flag.Bool("model", false, "run the sweep and the SLO search against the simulator and compare them with its step model (about a minute)")

// The model's workload: prompts of modelPrompt tokens, outputs of
// modelOutput, on the completions API (no template).
const (
	modelPrompt = 32
	modelOutput = 20
)

// modelProfile is a simulated server whose costs make a clear knee: a
// decode step costs 4 ms plus 0.5 ms a request in the batch, a prompt 20 µs
// a token, up to 64 requests at once, and nothing depends on context.
func modelProfile() loadgentest.Profile {
	return loadgentest.Profile{
		Name: "model", MaxNumSeqs: 64, MaxNumBatchedTokens: 8192, BlockSize: 16,
		MaxModelLen: 4096, KVCacheTokens: 64 * 4096,
		PrefillPerToken: 20e-6,
		DecodeBase:      []loadgentest.BatchCost{{Batch: 1, Seconds: 0.0045}, {Batch: 64, Seconds: 0.036}},
		TruthBytes:      -1,
	}
}

// predictedThroughput is the output tokens a second the step model gives
// a server kept full: it runs MaxNumSeqs requests in waves, each a step
// that prefills all their prompts and samples their first tokens, then
// modelOutput − 1 decode steps of the full batch.
func predictedThroughput(p loadgentest.Profile) float64 {
	b := p.MaxNumSeqs
	wave := time.Duration(b) * p.PrefillTime(modelPrompt)
	for k := 1; k < modelOutput; k++ {
		ctx := modelPrompt + k
		wave += p.DecodeStepTime(b, b*ctx, ctx)
	}
	return float64(b*modelOutput) / wave.Seconds()
}

// stepAt returns the mean step time, in seconds, of the server receiving
// requests evenly at rate a second: the fixed point of s = decode(B − n) +
// n·prefill, where n = rate·s requests are admitted each step and B =
// rate·modelOutput·s run (each takes modelOutput steps). A fractional batch
// costs between its neighbours.
func stepAt(p loadgentest.Profile, rate float64) float64 {
	decode := func(batch float64) float64 {
		lo := int(math.Floor(batch))
		f := batch - float64(lo)
		ctx := modelPrompt + modelOutput/2
		at := func(n int) float64 { return p.DecodeStepTime(n, n*ctx, ctx).Seconds() }
		return at(lo)*(1-f) + at(lo+1)*f
	}
	prefill := p.PrefillTime(modelPrompt).Seconds()
	s := decode(1)
	for range 200 {
		n := rate * s
		s = decode(max(rate*modelOutput*s-n, 0)) + n*prefill
	}
	return s
}

// highestRate is the highest rate whose time per output token, the step
// time, is within tpot, found by bisection on the model.
func highestRate(p loadgentest.Profile, tpot time.Duration) float64 {
	lo, hi := 0.0, 1000.0
	for range 60 {
		mid := (lo + hi) / 2
		if s := stepAt(p, mid); s > 0 && s <= tpot.Seconds() && rateFits(p, mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// rateFits reports that the steady batch fits the server.
func rateFits(p loadgentest.Profile, rate float64) bool {
	return rate*modelOutput*stepAt(p, rate) < float64(p.MaxNumSeqs)
}

// modelTarget returns a Target against srv sending the model's workload,
// each run for window after warm-up, or n requests when n is set.
func modelTarget(srv *loadgentest.Server, window, warmup time.Duration, n int) sweep.Target {
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: loadgen.NewStreamTransport(256)}}
	seed := uint64(0)
	return func(loadgen.Load) (*loadgen.Generator, error) {
		seed++
		syn := &workload.Synthetic{Input: workload.Fixed(modelPrompt), Output: workload.Fixed(modelOutput), Sizing: workload.SimulatorSizing(false), Seed: seed}
		feed := workload.NewFeed(syn.Reader(), &workload.Builder{API: loadgen.Completions, Model: loadgentest.DefaultModel, IgnoreEOS: true})
		g := &loadgen.Generator{Client: c, Source: feed.Source, Warmup: warmup, Duration: window, Requests: n}
		if n > 0 {
			g.Duration = 0
		}
		return g, nil
	}
}

// The sweep's throughput run finds the throughput the step model predicts
// for a full server, and its rates lie evenly between the synchronous
// run's and the throughput run's.
func TestSweepFindsTheModelsThroughput(t *testing.T) {
	if !*modelRun {
		t.Skip("a minute against the simulator: go test ./loadgen/sweep -run Model -model")
	}
	p := modelProfile()
	srv := loadgentest.NewServer(p)
	defer srv.Close()
	sw := &sweep.Sweep{Target: modelTarget(srv, 3*time.Second, time.Second, 0), Rates: 2, ThroughputStreams: 128, Open: loadgen.Open{Arrival: loadgen.Constant}}
	res, err := sw.Run(t.Context())
	require.NoError(t, err)
	runs := res.Runs
	require.Len(t, runs, 4)

	want := predictedThroughput(p)
	through := runs[1]
	t.Logf("throughput run: %.0f tok/s, capacity %.1f req/s (%.1f completed a second); the step model: %.0f tok/s, %.1f req/s",
		through.OutputTokensPerSec, through.Capacity, through.RequestRate, want, want/modelOutput)
	assert.InEpsilon(t, want, through.OutputTokensPerSec, 0.10, "the maximum throughput, within 10%% of the model's")
	assert.InEpsilon(t, want/modelOutput, through.Capacity, 0.10, "the maximum request rate, within 10%% of the model's")

	sync := runs[0]
	wantSync := 1 / (p.PrefillTime(modelPrompt).Seconds() + stepSum(p, 1))
	t.Logf("synchronous run: %.1f req/s; the step model: %.1f req/s", sync.RequestRate, wantSync)
	assert.InEpsilon(t, wantSync, sync.RequestRate, 0.10, "one request at a time, as the model says")
	lo, hi := sync.Capacity, through.Capacity
	for i, r := range runs[2:] {
		want := lo + (hi-lo)*float64(i+1)/3
		assert.Equal(t, loadgen.Constant, r.Load.(loadgen.Open).Arrival)
		assert.InEpsilon(t, want, rateOf(r), 1e-9)
		assert.InEpsilon(t, want, r.RequestRate, 0.15, "the server keeps up with a rate below its maximum")
	}
}

// stepSum is the time of the decode steps of one request decoding alone.
func stepSum(p loadgentest.Profile, batch int) float64 {
	var s time.Duration
	for k := 1; k < modelOutput; k++ {
		ctx := modelPrompt + k
		s += p.DecodeStepTime(batch, batch*ctx, ctx)
	}
	return s.Seconds()
}

// The SLO search's answer is within one step of the highest rate the step
// model says keeps time per output token within the objective.
func TestSearchFindsTheModelsHighestRate(t *testing.T) {
	if !*modelRun {
		t.Skip("a minute against the simulator: go test ./loadgen/sweep -run Model -model")
	}
	p := modelProfile()
	srv := loadgentest.NewServer(p)
	defer srv.Close()
	const tpot = 8 * time.Millisecond
	truth := highestRate(p, tpot)
	require.Greater(t, truth, 20.0, "the model's answer is well inside the range")
	s := &sweep.Search{
		Target:    modelTarget(srv, 0, 500*time.Millisecond, 150),
		Objective: sweep.Objective{SLO: metrics.SLO{TPOT: tpot}, Quantile: 0.9},
		Step:      4, ThroughputStreams: 128, Open: loadgen.Open{Arrival: loadgen.Constant},
	}
	res, err := s.Run(t.Context())
	require.NoError(t, err)
	found, runs := res.Search, res.Runs
	for _, r := range runs {
		t.Logf("%-22s %6.1f req/s  TPOT p50 %v p90 %v  good %.0f%%  met %v", r.Label, r.RequestRate, r.Summary.TPOT.P50, r.Summary.TPOT.P90, r.GoodShare*100, r.Met)
	}
	t.Logf("found %.2f req/s (%s); the step model: %.2f req/s", found.Rate, found.Reason, truth)
	assert.InDelta(t, truth, found.Rate, s.Step, "within one step of the model's highest rate")
	require.GreaterOrEqual(t, found.Below, 0)
	require.GreaterOrEqual(t, found.Above, 0)
	assert.True(t, runs[found.Below].Met)
	assert.False(t, runs[found.Above].Met)
	assert.LessOrEqual(t, found.High-found.Low, s.Step)
	assert.InEpsilon(t, found.Rate, rateOf(runs[found.Below]), 1e-9)
	assert.InEpsilon(t, found.High, rateOf(runs[found.Above]), 1e-9)
}
