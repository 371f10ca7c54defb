package loadgentest

import (
	"io"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/simtokens"
)

// dcgm reads the server's /dcgm/metrics: each family's series by GPU
// UUID, and the time it was read.
func dcgm(t *testing.T, srv *Server) (map[string]map[string]float64, map[string]*dto.MetricFamily) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + "/dcgm/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	out := map[string]map[string]float64{}
	for name, f := range families {
		out[name] = map[string]float64{}
		for _, m := range f.GetMetric() {
			uuid := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "UUID" {
					uuid = l.GetValue()
				}
			}
			v := m.GetGauge().GetValue()
			if m.Counter != nil {
				v = m.GetCounter().GetValue()
			}
			out[name][uuid] = v
		}
	}
	return out, families
}

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

func TestDCGMExporter(t *testing.T) {
	p := FastProfile()
	p.Speed = 10
	p.IdleWatts, p.BusyWatts, p.RunningWatts, p.MaxWatts, p.GPUs = 10, 90, 5, 0, 2
	srv := NewServer(p)
	defer srv.Close()

	idle, families := dcgm(t, srv)
	for name, typ := range map[string]string{
		"DCGM_FI_DEV_POWER_USAGE":              "GAUGE",
		"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "COUNTER",
		"DCGM_FI_DEV_GPU_UTIL":                 "GAUGE",
		"DCGM_FI_DEV_FB_USED":                  "GAUGE",
	} {
		f, ok := families[name]
		require.True(t, ok, name)
		assert.Equal(t, typ, f.GetType().String(), name)
		require.Len(t, f.GetMetric(), 2, "%s: one series a GPU", name)
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		assert.ElementsMatch(t, []string{"gpu", "UUID", "device", "modelName", "Hostname"}, labels, name)
		assert.InDelta(t, time.Now().UnixMilli(), f.GetMetric()[0].GetTimestampMs(), 1000, "%s: stamped with when it was read", name)
	}
	// Idle, each of the two GPUs draws half of 10 W at 10× speed.
	for uuid, w := range idle["DCGM_FI_DEV_POWER_USAGE"] {
		assert.InDelta(t, 50, w, 1e-9, uuid)
		assert.Zero(t, idle["DCGM_FI_DEV_GPU_UTIL"][uuid], uuid)
	}

	// The counter is the power model's integral: in millijoules, it
	// grows by the draw times the time between two readings, and it is
	// Stats' ground truth at the moment it was read.
	before := srv.Handler.Stats().Joules
	first := sum(idle["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]) / 1000
	assert.LessOrEqual(t, first, before+1e-6)
	// Until the ground truth has 20 J more: 200 ms at 100 W.
	waiting := time.Now()
	waitFor(t, 10*time.Second, "20 J drawn", func() bool { return srv.Handler.Stats().Joules >= before+20 })
	waited := time.Since(waiting)
	start := time.Now()
	again, _ := dcgm(t, srv)
	after := srv.Handler.Stats().Joules
	second := sum(again["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]) / 1000
	assert.InDelta(t, after, second, 100*(time.Since(start).Seconds()+0.001)+0.001, "the counter read is the ground truth, as of the millisecond it is stamped with")
	assert.Greater(t, second-first, 100*waited.Seconds()*0.99, "100 W for the %v waited at least", waited)

	// One request running: 10 + 90 + 5 W, at 10×, over two GPUs.
	resp, err := post(t.Context(), srv, "/v1/completions", completion(simtokens.Prompt(10, "p"), 2000, true), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	buf := make([]byte, 256)
	_, err = resp.Body.Read(buf)
	require.NoError(t, err)
	busy, _ := dcgm(t, srv)
	for uuid, w := range busy["DCGM_FI_DEV_POWER_USAGE"] {
		assert.InDelta(t, 525, w, 1e-9, uuid)
		assert.Equal(t, 100.0, busy["DCGM_FI_DEV_GPU_UTIL"][uuid], uuid)
	}
	io.Copy(io.Discard, resp.Body)
}

func TestDCGMWithoutPowerModel(t *testing.T) {
	p := FastProfile()
	p.IdleWatts, p.BusyWatts, p.RunningWatts = 0, 0, 0
	srv := NewServer(p)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/dcgm/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Zero(t, srv.Handler.Stats().Joules)
}

func TestPowerModelCap(t *testing.T) {
	p := SeedProfile().withDefaults()
	assert.InDelta(t, 15, p.watts(0), 1e-9)
	assert.InDelta(t, 103, p.watts(1), 1e-9)
	assert.InDelta(t, 170, p.watts(100), 1e-9, "capped at MaxWatts")
	p.Speed = 20
	assert.InDelta(t, 20*103, p.watts(1), 1e-9, "Speed times the draw")
}
