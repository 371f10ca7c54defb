package dcgm

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/simtokens"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/metrics"
)

// truth polls the simulator's ground truth of its energy every
// millisecond, and gives it at any time in between by interpolation.
type truth struct {
	mu sync.Mutex
	ts []time.Time
	js []float64
}

func (tr *truth) poll(ctx context.Context, srv *loadgentest.Server) {
	for ctx.Err() == nil {
		before := time.Now()
		j := srv.Handler.Stats().Joules
		mid := before.Add(time.Since(before) / 2)
		tr.mu.Lock()
		tr.ts, tr.js = append(tr.ts, mid), append(tr.js, j)
		tr.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
}

// past reports whether the ground truth was read after t.
func (tr *truth) past(t time.Time) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.ts) > 0 && tr.ts[len(tr.ts)-1].After(t)
}

func (tr *truth) at(t time.Time) float64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return linear(tr.ts, tr.js, t)
}

// load keeps streams requests running against srv until ctx ends, each
// of a random length, so that the power changes all the time.
func load(ctx context.Context, t *testing.T, srv *loadgentest.Server, streams int) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := range streams {
		wg.Go(func() {
			for k := 0; ctx.Err() == nil; k++ {
				body := fmt.Sprintf(`{"model":%q,"prompt":%q,"max_tokens":%d,"stream":true}`,
					loadgentest.DefaultModel, simtokens.Prompt(50, fmt.Sprint(i, k)), 20+37*((i+k)%7))
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/completions", strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				resp, err := srv.Client().Do(req)
				if err != nil {
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				time.Sleep(time.Duration(i*7) * time.Millisecond) // the GPUs idle now and then
			}
		})
	}
	return &wg
}

// Against the simulator's exporter, the energy of a window is within 1%
// of its power model's integral over it.
func TestMeterAgainstSimulator(t *testing.T) {
	p := loadgentest.FastProfile()
	p.Speed = 10
	p.IdleWatts, p.BusyWatts, p.RunningWatts, p.MaxWatts, p.GPUs = 20, 60, 15, 0, 4
	srv := loadgentest.NewServer(p)
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	var tr truth
	var polling sync.WaitGroup
	polling.Go(func() { tr.poll(ctx, srv) })
	wg := load(ctx, t, srv, 3)
	defer func() { cancel(); wg.Wait(); polling.Wait() }()

	m := New(srv.Client(), []string{srv.URL + "/dcgm/metrics"}, 100*time.Millisecond)
	m.Start(ctx)
	defer m.Close()
	for range 3 {
		w := metrics.Window{Start: time.Now().Add(150 * time.Millisecond)}
		w.End = w.Start.Add(time.Second)
		m.Mark(w)
		// The window over, and the ground truth read past its end.
		time.Sleep(time.Until(w.End))
		for deadline := time.Now().Add(5 * time.Second); !tr.past(w.End) && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		e, err := m.Energy(ctx, w, 1000, 3)
		require.NoError(t, err)
		want := tr.at(w.End) - tr.at(w.Start)
		t.Logf("measured %.1f J, the power model's integral %.1f J (%+.2f%%), %d samples, %.0f W", e.Joules, want, 100*(e.Joules-want)/want, e.Samples, e.MeanWatts)
		assert.InEpsilon(t, want, e.Joules, 0.01, "within 1%% of the power model's integral")
		assert.Equal(t, 4, e.GPUs)
		assert.False(t, e.Integrated)
		assert.InDelta(t, 1000/e.Joules, e.TokensPerJoule, 1e-12)
		assert.InDelta(t, 4*3*1.0/3600/1000*1e6, e.DollarsPerMillionTokens, 1e-9, "4 GPUs at $3 an hour for a second, 1,000 tokens")
		assert.Equal(t, 4*11060.0, e.MemoryMiB)
		assert.GreaterOrEqual(t, e.Samples, 5)
	}
}

// exporter serves bodies in turn, the last one from then on.
func exporter(t *testing.T, status int, bodies ...string) *httptest.Server {
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		b := bodies[0]
		if len(bodies) > 1 {
			bodies = bodies[1:]
		}
		mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestMeterReadFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"not found", http.StatusNotFound, "no", "404 Not Found; check -gpu-metrics"},
		{"not the exporter", http.StatusOK, "vllm:num_requests_running 3\n", "no GPU's DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION or DCGM_FI_DEV_POWER_USAGE"},
		{"malformed", http.StatusOK, "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\" 12\n", "parse the exporter's metrics"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := exporter(t, tc.status, tc.body)
			m := New(srv.Client(), []string{srv.URL + "/metrics"}, time.Second)
			err := m.Read(t.Context())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			_, err = m.Energy(t.Context(), metrics.Window{Start: time.Now().Add(-time.Second), End: time.Now()}, 1, 0)
			assert.Error(t, err, "no reading, no energy")
		})
	}
}

// Two exporters (two nodes of one server), one of them with no energy
// counter: summed, the second's power integrated.
func TestMeterTwoExporters(t *testing.T) {
	series := func(name string, uuids []string, v float64) string {
		var b strings.Builder
		for i, u := range uuids {
			fmt.Fprintf(&b, "%s{gpu=\"%d\",UUID=%q,Hostname=\"n\"} %g\n", name, i, u, v)
		}
		return b.String()
	}
	var bodies []string
	for k := range 200 {
		bodies = append(bodies, series("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", []string{"GPU-a", "GPU-b"}, 1e9+float64(k)*50*1000)+
			series("DCGM_FI_DEV_POWER_USAGE", []string{"GPU-a", "GPU-b"}, 999))
	}
	a := exporter(t, http.StatusOK, bodies...)
	b := exporter(t, http.StatusOK, series("DCGM_FI_DEV_POWER_USAGE", []string{"GPU-c"}, 300))
	m := New(nil, []string{a.URL, b.URL}, time.Hour)
	var start time.Time
	for k := range 5 {
		require.NoError(t, m.Read(t.Context()))
		if k == 0 {
			start = time.Now()
		}
	}
	e, err := m.Energy(t.Context(), metrics.Window{Start: start, End: time.Now()}, 100, 0)
	require.NoError(t, err)
	assert.Equal(t, 3, e.GPUs)
	assert.True(t, e.Integrated)
	// The counters each grew 50 J a reading, four or five of them in the
	// window (its edges fall between readings); the third GPU drew 300 W.
	counted := e.Joules - 300*e.Seconds
	assert.Greater(t, counted, 2*3*50.0)
	assert.Less(t, counted, 2*6*50.0)
}
