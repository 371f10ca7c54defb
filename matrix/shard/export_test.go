package shard

import "time"

// SetClock makes a follower read its clock from now when it measures its
// offset to the leader, as a follower on a machine whose clock is off
// would.
func SetClock(f *Follower, now func() time.Time) { f.now = now }

// WindowStart returns the start of cell seq's window, on the leader's
// clock, once the leader has set it and while that cell is in progress.
func WindowStart(l *Leader, seq int) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cell == nil || l.cell.seq() != seq || l.cell.window.IsZero() {
		return time.Time{}, false
	}
	return l.cell.window, true
}
