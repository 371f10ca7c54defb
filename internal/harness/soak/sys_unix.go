//go:build unix

package main

import (
	"fmt"
	"syscall"
)

// raiseFileLimit raises the soft limit on open files to the hard limit and
// returns both. (Go raises it at start-up too, but puts the old soft limit
// back for child processes; setting it here makes the simulator child
// inherit the raised one.)
func raiseFileLimit() (soft, hard uint64, err error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, fmt.Errorf("read the open-file limit: %w", err)
	}
	if lim.Cur != lim.Max {
		raised := lim
		raised.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			lim = raised
		} // else (macOS refuses an unlimited hard limit) keep the soft one
	}
	return uint64(lim.Cur), uint64(lim.Max), nil
}
