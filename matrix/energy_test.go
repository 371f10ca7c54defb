package matrix_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/report"
)

// energyTruth polls a simulator's ground truth of the energy its power
// model drew, every millisecond, and gives it at any time in between.
type energyTruth struct {
	mu sync.Mutex
	ts []time.Time
	js []float64
}

func (tr *energyTruth) poll(ctx context.Context, srv *loadgentest.Server) {
	for ctx.Err() == nil {
		before := time.Now()
		j := srv.Handler.Stats().Joules
		tr.mu.Lock()
		tr.ts, tr.js = append(tr.ts, before.Add(time.Since(before)/2)), append(tr.js, j)
		tr.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
}

func (tr *energyTruth) at(t time.Time) float64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	i := 1
	for i < len(tr.ts)-1 && tr.ts[i].Before(t) {
		i++
	}
	a, b := tr.ts[i-1], tr.ts[i]
	return tr.js[i-1] + (tr.js[i]-tr.js[i-1])*float64(t.Sub(a))/float64(b.Sub(a))
}

// Against the simulator's DCGM exporter, each cell's energy is within 1%
// of its power model's integral over the window, and every report shows
// tokens per joule.
func TestRunnerEnergy(t *testing.T) {
	const speed = 10
	p := knownProfile(speed)
	p.IdleWatts, p.BusyWatts, p.RunningWatts, p.GPUs = 20, 80, 10, 2
	srv := loadgentest.NewServer(p)
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	var truth energyTruth
	var wg sync.WaitGroup
	wg.Go(func() { truth.poll(ctx, srv) })
	defer func() { cancel(); wg.Wait() }()

	spec := matrix.Spec{
		URL: srv.URL + "/v1", Model: "bench", API: loadgen.Completions,
		Contexts: []int{0}, Concurrency: []int{1, 4}, Prefill: []int{},
		Duration: 10 * time.Second, MaxTokens: 2000,
		WarmupRule: &matrix.WarmupRule{Min: time.Second, Flow: time.Second, Timeout: 5 * time.Second},
	}
	var log bytes.Buffer
	r := &matrix.Runner{Spec: spec.AtSpeed(speed), Server: capacity.Server{Simulated: true, Speed: speed},
		Client: &loadgen.Client{HTTPClient: srv.Client()}, Log: &log,
		GPUMetrics: []string{srv.URL + "/dcgm/metrics"}, GPUHourlyCost: 2.5}
	res, err := r.Run(t.Context())
	require.NoError(t, err, log.String())

	for _, n := range []int{1, 4} {
		c := res.Cell(0, n)
		require.NotNil(t, c.Measurement, "1 × %d measured", n)
		e := c.Measurement.Energy
		require.NotNil(t, e, "cell × %d: %s", n, log.String())
		w := c.Measurement.Recording.Summary.Window
		want := truth.at(w.End) - truth.at(w.Start)
		t.Logf("%d streams: %.1f J measured, %.1f J the power model's integral (%+.2f%%), %d samples", n, e.Joules, want, 100*(e.Joules-want)/want, e.Samples)
		assert.InEpsilon(t, want, e.Joules, 0.01, "%d streams: within 1%% of the power model's integral", n)
		assert.Equal(t, 2, e.GPUs)
		assert.Equal(t, c.Measurement.OutputTokens, e.OutputTokens)
		assert.InDelta(t, float64(e.OutputTokens)/e.Joules, e.TokensPerJoule, 1e-12)
		assert.InDelta(t, 2*2.5*e.Seconds/3600/float64(e.OutputTokens)*1e6, e.DollarsPerMillionTokens, 1e-9)
	}

	// The reports speak in the simulated server's own time: its power is
	// the profile's, 20 + 80 + 10 W a stream (the wall clock's is speed ×
	// that), its energy a token's the same in either.
	var doc bytes.Buffer
	require.NoError(t, report.Write(&doc, report.JSON, res))
	var back matrix.Results
	require.NoError(t, json.Unmarshal(doc.Bytes(), &back))
	assert.Equal(t, res.Cell(0, 4).Measurement.Energy, back.Cell(0, 4).Measurement.Energy, "the JSON keeps the energy")
	assert.Contains(t, doc.String(), `"tokens_per_joule"`)
	var md bytes.Buffer
	require.NoError(t, report.Write(&md, report.Markdown, res))
	assert.Contains(t, md.String(), "| Tokens per joule | Joules per token | $ per million tokens |")
	for n, watts := range map[int]float64{1: 110, 4: 140} {
		e := res.Cell(0, n).Measurement.Energy
		assert.InEpsilon(t, speed*watts, e.MeanWatts, 0.03, "%d streams, in wall time (a stream idles between requests)", n)
		assert.Contains(t, md.String(), fmt.Sprintf("| %.1f W |", e.MeanWatts/speed), "%d streams: about %g W in the server's own time", n, watts)
	}
	for _, f := range []report.Format{report.Table, report.HTML, report.Markdown} {
		var b bytes.Buffer
		require.NoError(t, report.Write(&b, f, res))
		assert.Contains(t, b.String(), " tok/J", "%v", f)
	}
	var csv bytes.Buffer
	require.NoError(t, report.Write(&csv, report.CSV, res))
	head, _, _ := strings.Cut(csv.String(), "\n")
	assert.True(t, strings.HasSuffix(head, ",gpu_energy_j,gpu_mean_w,tokens_per_joule,joules_per_token,usd_per_million_tokens"), head)
}

func TestRunnerEnergyRefused(t *testing.T) {
	srv := loadgentest.NewServer(knownProfile(10))
	defer srv.Close()
	spec := matrix.Spec{URL: srv.URL + "/v1", Model: "bench", Contexts: []int{0}, Concurrency: []int{1}, Prefill: []int{}}
	for _, tc := range []struct {
		name string
		r    matrix.Runner
		want string
	}{
		{"a cost without exporters", matrix.Runner{GPUHourlyCost: 2}, "needs Runner.GPUMetrics"},
		{"a negative cost", matrix.Runner{GPUMetrics: []string{srv.URL + "/dcgm/metrics"}, GPUHourlyCost: -1}, "0 or more"},
		{"an exporter that is not one", matrix.Runner{GPUMetrics: []string{srv.URL + "/metrics"}}, "no GPU's DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			r.Spec, r.Client = spec, &loadgen.Client{HTTPClient: srv.Client()}
			_, err := r.Run(t.Context())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Zero(t, srv.Handler.Stats().Finished, "nothing was sent")
		})
	}
}
