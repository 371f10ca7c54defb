package loadgen

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmload/llmload/internal/procstat"
	"github.com/llmload/llmload/metrics"
)

// The thresholds of the client's health; Health's doc gives them.
const (
	healthTick    = 20 * time.Millisecond // the period of the timer whose lateness is measured
	maxHealthyLag = 5 * time.Millisecond  // the 99th-percentile lateness above which a run is limited
	maxHealthyCPU = 0.9                   // the share of the CPUs above which a run is limited
)

// Health is the client's own view of whether it kept up during a window:
// how late a 20 ms timer fired in the client's process, and how busy its
// CPUs were. A client that cannot keep up reads streams late, and the
// server looks slower than it is. The run is Limited when the timer's
// 99th-percentile lateness is above 5 ms or the CPU share above 90%.
type Health struct {
	// Lag is the distribution of how late the 20 ms timer fired. (Each
	// firing wakes the Go scheduler, some six to ten system calls, so the
	// period is no shorter.)
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
		t := time.NewTimer(healthTick)
		defer t.Stop()
		next := time.Now().Add(healthTick)
		for {
			select {
			case <-m.done:
				return
			case now := <-t.C:
				lag := now.Sub(next)
				m.mu.Lock()
				m.lag.Record(max(lag, 0))
				m.mu.Unlock()
				next = next.Add(healthTick)
				if lag > healthTick {
					next = now.Add(healthTick) // skip missed ticks rather than burst
				}
				t.Reset(time.Until(next))
			}
		}
	})
}

// mark starts the measured span afresh.
func (m *healthMonitor) mark() {
	m.mu.Lock()
	m.lag = metrics.Histogram{}
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
	case h.Lag.P99 > maxHealthyLag:
		h.Limited, h.Reason = true, fmt.Sprintf("the client's timers fired up to %v late (p99), above %v", h.Lag.P99, maxHealthyLag)
	case h.CPU > maxHealthyCPU:
		h.Limited, h.Reason = true, fmt.Sprintf("the client used %.0f%% of its CPUs, above %.0f%%", 100*h.CPU, 100*maxHealthyCPU)
	}
	return h
}

func (m *healthMonitor) stop() {
	close(m.done)
	m.wg.Wait()
}

// processCPU returns this process's CPU time so far, or 0 where the
// platform does not say.
func processCPU() time.Duration {
	d, _ := procstat.CPU(0)
	return d
}

// A readMode is how a response body was read: see [Run].ReadMode.
type readMode int

const (
	readPolled    readMode = iota // on the shared pollers of a StreamTransport with Poll
	readGoroutine                 // by the request's goroutine, from a StreamTransport's connection
	readNetHTTP                   // by the request's goroutine, from another transport's body (net/http's)
	readModes
)

// readModeNames are the words of [Run].ReadMode, by readMode.
var readModeNames = [readModes]string{"shared pollers", "a goroutine per stream", "net/http"}

// readCounts counts the bodies a Client has read, by readMode.
type readCounts [readModes]atomic.Int64

// snapshot returns the counts now.
func (rc *readCounts) snapshot() [readModes]int64 {
	var n [readModes]int64
	for m := range n {
		n[m] = rc[m].Load()
	}
	return n
}

// readModeSince names the ways of reading that were used since from was
// taken: "shared pollers", "a goroutine per stream" or "net/http", or
// several joined by " and "; "" where no body was read.
func readModeSince(from, to [readModes]int64) string {
	var used []string
	for m := range from {
		if to[m] > from[m] {
			used = append(used, readModeNames[m])
		}
	}
	return strings.Join(used, " and ")
}
