//go:build !linux

package loadgen

import "time"

// waitFine watches the clock for d, at most about a millisecond: this
// system has no finer sleep than the runtime's timer.
func waitFine(d time.Duration) {
	for t := time.Now().Add(d); time.Now().Before(t); {
	}
}
