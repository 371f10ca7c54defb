package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"time"
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

// readRSS returns the current resident set size of process pid (0: this
// process) from /proc/PID/status. Where there is no /proc it returns this
// process's peak RSS from getrusage, and peak true.
func readRSS(pid int) (rss int64, peak bool, err error) {
	b, err := os.ReadFile(procPath(pid, "status"))
	if err != nil {
		if pid == 0 {
			if m, ok := maxRSS(); ok {
				return m, true, nil
			}
		}
		return 0, false, err
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := bytes.Fields(v) // "123456 kB"
			if len(f) == 2 && string(f[1]) == "kB" {
				kb, err := strconv.ParseInt(string(f[0]), 10, 64)
				if err == nil {
					return kb << 10, false, nil
				}
			}
			return 0, false, fmt.Errorf("soak: cannot parse %q in %s", bytes.TrimSpace(line), procPath(pid, "status"))
		}
	}
	return 0, false, fmt.Errorf("soak: no VmRSS in %s", procPath(pid, "status"))
}

// clockTicks is USER_HZ, the unit of the CPU times in /proc/PID/stat: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// readCPU returns the user plus system CPU time process pid (0: this
// process) has used, from /proc/PID/stat, or for this process from
// getrusage where there is no /proc.
func readCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		if pid == 0 {
			if d, ok := selfCPU(); ok {
				return d, nil
			}
		}
		return 0, err
	}
	// "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("soak: cannot parse %s", procPath(pid, "stat"))
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3, state; utime and stime are fields 14 and 15
	if len(f) < 13 {
		return 0, fmt.Errorf("soak: cannot parse %s", procPath(pid, "stat"))
	}
	ut, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	st, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("soak: cannot parse %s", procPath(pid, "stat"))
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

func procPath(pid int, file string) string {
	if pid == 0 {
		return "/proc/self/" + file
	}
	return "/proc/" + strconv.Itoa(pid) + "/" + file
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
