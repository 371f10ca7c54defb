// Package procstat reads what the operating system counts for a running
// process: the CPU time it has used and its resident memory. llmload's
// client health, its benchmarks and its soak test use it to tell the
// client's share of a machine from that of a server running beside it.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// userHZ is USER_HZ, the unit of the CPU times in /proc/PID/stat: 100 on
// every Linux architecture Go supports.
const userHZ = 100

// SystemCPU returns the part of this process's CPU time spent in the
// kernel (its system calls and what they do), from getrusage.
func SystemCPU() (time.Duration, error) { return selfSystemCPU() }

// CPU returns the user plus system CPU time process pid has used; pid 0
// is this process. This process's comes from getrusage (microseconds);
// another's from /proc/PID/stat (Linux only, in 10 ms ticks).
func CPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return selfCPU()
	}
	b, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		return 0, err
	}
	// "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("procstat: cannot parse %s", procPath(pid, "stat"))
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3, state; utime and stime are fields 14 and 15
	if len(f) < 13 {
		return 0, fmt.Errorf("procstat: cannot parse %s", procPath(pid, "stat"))
	}
	ut, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	st, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("procstat: cannot parse %s", procPath(pid, "stat"))
	}
	return time.Duration(ut+st) * time.Second / userHZ, nil
}

// RSS returns the resident set size of process pid (0: this process) in
// bytes, from /proc/PID/status. Where there is no /proc it returns this
// process's peak resident set size from getrusage, and peak true.
func RSS(pid int) (rss int64, peak bool, err error) {
	b, err := os.ReadFile(procPath(pid, "status"))
	if err != nil {
		if pid == 0 {
			if m, err := maxRSS(); err == nil {
				return m, true, nil
			}
		}
		return 0, false, err
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := bytes.Fields(v) // "123456 kB"
			if len(f) == 2 && string(f[1]) == "kB" {
				if kb, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
					return kb << 10, false, nil
				}
			}
			return 0, false, fmt.Errorf("procstat: cannot parse %q in %s", bytes.TrimSpace(line), procPath(pid, "status"))
		}
	}
	return 0, false, fmt.Errorf("procstat: no VmRSS in %s", procPath(pid, "status"))
}

func procPath(pid int, file string) string {
	if pid == 0 {
		return "/proc/self/" + file
	}
	return "/proc/" + strconv.Itoa(pid) + "/" + file
}
