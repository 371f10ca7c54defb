package loadgen_test

import (
	"testing"
)

// A stream read on a poller waits on a stack the collector halves: its
// request's goroutine is parked in few, small frames (well under a quarter
// of an 8 KiB stack, with the runtime's reserve), so what a stream holds is
// mostly its buffers, not its stack. Without that, each stream keeps an
// 8 KiB stack (about 17 KB in all, against 13 KB).
func TestPollStreamStackHalved(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector doubles every stack's reserve and grows the frames; the non-race run of this package measures it")
	}
	if testing.Short() {
		t.Skip("starts the simulator as a process of its own")
	}
	sim := startSimProcess(t, 1)
	m := measureStreamMemory(t, sim.URL+"/v1", 200, newPollTransport)
	t.Logf("a stream holds %.0f B of stack, %.0f B of heap (%.0f B live), in %.3f goroutines", m.stack, m.heap, m.live, m.goroutines)
	if m.stack > 6<<10 {
		t.Errorf("a stream on a poller holds %.0f B of goroutine stack; want at most 6 KiB (its goroutine's 4 KiB, and a share of the pollers')", m.stack)
	}
}
