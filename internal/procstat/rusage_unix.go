//go:build unix

package procstat

import (
	"fmt"
	"runtime"
	"syscall"
	"time"
)

// selfCPU returns this process's user plus system CPU time from getrusage.
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("procstat: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// selfSystemCPU returns this process's system CPU time from getrusage.
func selfSystemCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("procstat: getrusage: %w", err)
	}
	return time.Duration(ru.Stime.Nano()), nil
}

// maxRSS returns this process's peak resident set size from getrusage.
func maxRSS() (int64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("procstat: getrusage: %w", err)
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss), nil // bytes
	}
	return int64(ru.Maxrss) << 10, nil // kilobytes
}
