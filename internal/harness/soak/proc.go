package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
)

var ownPID = os.Getpid()

// runtimeStats are the Go runtime's own figures of a process.
type runtimeStats struct {
	// HeapInuse is heap memory in spans in use: live and not yet swept
	// objects plus their spans' free slots (runtime.MemStats.HeapInuse).
	HeapInuse int64 `json:"heap_inuse_bytes"`
	// HeapLive is the heap the last garbage collection found live: unlike
	// HeapInuse, it does not rise and fall with the garbage between
	// collections, so it is the figure to watch for a leak.
	HeapLive int64 `json:"heap_live_bytes"`
	// Stacks is heap memory reserved for goroutine stacks.
	Stacks     int64 `json:"stack_bytes"`
	Goroutines int   `json:"goroutines"`
	// GCs counts the garbage collections so far.
	GCs int64 `json:"gcs"`
}

var runtimeMetrics = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/sched/goroutines:goroutines",
	"/gc/heap/live:bytes",
	"/gc/cycles/total:gc-cycles",
}

// readRuntime reads this process's runtime figures without stopping the
// world (runtime.ReadMemStats would, and with tens of thousands of
// goroutines that is not free).
func readRuntime() runtimeStats {
	s := make([]metrics.Sample, len(runtimeMetrics))
	for i, name := range runtimeMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	u := func(i int) int64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(s[i].Value.Uint64())
	}
	return runtimeStats{HeapInuse: u(0) + u(1), Stacks: u(2), Goroutines: int(u(3)), HeapLive: u(4), GCs: u(5)}
}

// ephemeralPorts returns Linux's range of local ports for outgoing
// connections; ok is false where it cannot be read.
func ephemeralPorts() (lo, hi int, ok bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	f := bytes.Fields(b)
	if len(f) != 2 {
		return 0, 0, false
	}
	lo, err1 := strconv.Atoi(string(f[0]))
	hi, err2 := strconv.Atoi(string(f[1]))
	if err1 != nil || err2 != nil || hi < lo {
		return 0, 0, false
	}
	return lo, hi, true
}

// writeHeapProfile writes this process's heap profile to file.
func writeHeapProfile(file string) error {
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("soak: heap profile: %w", err)
	}
	return f.Close()
}
