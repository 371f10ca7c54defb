package shard

import "time"

// SetClock makes a follower read its clock from now when it measures its
// offset to the leader, as a follower on a machine whose clock is off
// would.
func SetClock(f *Follower, now func() time.Time) { f.now = now }
