package loadgen

import (
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/llmload/llmload/metrics"
)

// The client's self-health: how late a 10 ms timer fires in the client
// process, and how busy its CPUs are. A client that cannot keep up delays
// reading streams, so the server looks slower than it is.
const (
	// HealthTick is the period of the timer whose lateness is measured.
	HealthTick = 10 * time.Millisecond
	// MaxHealthyLag is the 99th-percentile timer lateness above which a
	// run is flagged as limited by the client.
	MaxHealthyLag = 5 * time.Millisecond
	// MaxHealthyCPU is the share of the available CPU above which a run is
	// flagged as limited by the client.
	MaxHealthyCPU = 0.9
)

// Health is the client's own view of whether it kept up during a window.
type Health struct {
	// Lag is the distribution of how late a HealthTick timer fired.
	Lag metrics.Distribution `json:"lag"`
	// CPU is the process's CPU time over the window ÷ (window × GOMAXPROCS),
	// 0–1; 0 when the platform does not say.
	CPU float64 `json:"cpu"`
	// Limited reports that the client, not the server, may have limited
	// the numbers; Reason says why.
	Limited bool   `json:"limited"`
	Reason  string `json:"reason,omitempty"`
}

type healthMonitor struct {
	mu      sync.Mutex
	lag     metrics.Histogram
	from    time.Time
	cpuFrom time.Duration
	done    chan struct{}
	wg      sync.WaitGroup
}

func (m *healthMonitor) start() {
	m.done = make(chan struct{})
	m.mark()
	m.wg.Go(func() {
		t := time.NewTimer(HealthTick)
		defer t.Stop()
		next := time.Now().Add(HealthTick)
		for {
			select {
			case <-m.done:
				return
			case now := <-t.C:
				lag := now.Sub(next)
				m.mu.Lock()
				m.lag.Record(max(lag, 0))
				m.mu.Unlock()
				next = next.Add(HealthTick)
				if lag > HealthTick {
					next = now.Add(HealthTick) // skip missed ticks rather than burst
				}
				t.Reset(time.Until(next))
			}
		}
	})
}

// mark starts the measured span afresh.
func (m *healthMonitor) mark() {
	m.mu.Lock()
	m.lag.Reset()
	m.from = time.Now()
	m.cpuFrom = processCPU()
	m.mu.Unlock()
}

// since returns the health from the last mark until now.
func (m *healthMonitor) since() Health {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := Health{Lag: m.lag.Summary()}
	if wall := time.Since(m.from); wall > 0 {
		if cpu := processCPU(); cpu > 0 {
			h.CPU = (cpu - m.cpuFrom).Seconds() / (wall.Seconds() * float64(runtime.GOMAXPROCS(0)))
		}
	}
	switch {
	case h.Lag.P99 > MaxHealthyLag:
		h.Limited, h.Reason = true, fmt.Sprintf("the client's timers fired up to %v late (p99), above %v", h.Lag.P99, MaxHealthyLag)
	case h.CPU > MaxHealthyCPU:
		h.Limited, h.Reason = true, fmt.Sprintf("the client used %.0f%% of its CPUs, above %.0f%%", 100*h.CPU, 100*MaxHealthyCPU)
	}
	return h
}

func (m *healthMonitor) stop() {
	close(m.done)
	m.wg.Wait()
}
