//go:build !linux

package release

import "time"

// sleepUntil watches the clock until t, at most a few milliseconds away:
// this system has no finer sleep than the runtime's timer.
func sleepUntil(t time.Time) {
	for time.Now().Before(t) {
	}
}

// FineMargin is how long before a gate's time the launcher stops sleeping
// on the runtime's timer and watches the clock (see waitUntil).
const FineMargin = 1200 * time.Microsecond
