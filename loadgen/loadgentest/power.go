package loadgentest

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// powerMeter integrates the profile's power model over the wall clock:
// the ground truth of the energy counter /dcgm/metrics publishes.
type powerMeter struct {
	p Profile

	mu      sync.Mutex
	since   time.Time // when watts last changed
	watts   float64
	joules  float64 // drawn before since
	running int
}

func newPowerMeter(p Profile, now time.Time) *powerMeter {
	return &powerMeter{p: p, since: now, watts: p.watts(0)}
}

// set records that running requests run from now on.
func (m *powerMeter) set(now time.Time, running int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if running == m.running {
		return
	}
	if now.After(m.since) {
		m.joules += m.watts * now.Sub(m.since).Seconds()
		m.since = now
	}
	m.running, m.watts = running, m.p.watts(running)
}

// read returns the energy drawn until now, the draw at now and the
// requests running.
func (m *powerMeter) read(now time.Time) (joules, watts float64, running int) {
	if m == nil {
		return 0, 0, 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.joules
	if now.After(m.since) {
		j += m.watts * now.Sub(m.since).Seconds()
	}
	return j, m.watts, m.running
}

// simFBUsedMiB is what each simulated GPU's framebuffer holds: the
// weights and a KV cache allocated at start, as vLLM does, so it does not
// change while the server runs.
const simFBUsedMiB = 11060

// serveDCGM serves the GPUs' power, energy, utilization and memory in
// the Prometheus text format, with the metric names, units and labels of
// NVIDIA's DCGM exporter (dcgm-exporter): the power model's draw and its
// integral since the server started, split evenly over Profile.GPUs, each
// value stamped with the millisecond it was read at.
func (h *Handler) serveDCGM(w http.ResponseWriter, r *http.Request) {
	if h.power == nil {
		http.Error(w, "the simulated server's profile has no power model (IdleWatts, BusyWatts, RunningWatts)", http.StatusNotFound)
		return
	}
	// Each value is stamped with the millisecond it was read at, which the
	// text format allows (the DCGM exporter leaves it to the scraper).
	at := time.Now().Truncate(time.Millisecond)
	joules, watts, running := h.power.read(at)
	stamp := strconv.FormatInt(at.UnixMilli(), 10)
	n := h.p.GPUs
	util := 0.0
	if running > 0 {
		util = 100
	}
	var b bytes.Buffer
	metric := func(name, typ, help string, v float64, format byte, prec int) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		for i := range n {
			fmt.Fprintf(&b, "%s{gpu=\"%d\",UUID=\"GPU-%s-%04d\",device=\"nvidia%d\",modelName=\"llmload simulated GPU\",Hostname=\"loadgentest\"} %s %s\n",
				name, i, h.idBase, i, i, strconv.FormatFloat(v, format, prec, 64), stamp)
		}
	}
	metric("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", watts/float64(n), 'f', 3)
	metric("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).", joules*1000/float64(n), 'f', 0)
	metric("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", util, 'f', 0)
	metric("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", simFBUsedMiB, 'f', 0)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(b.Bytes())
}
