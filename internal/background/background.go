// Package background runs the work that goes on beside a run until it is
// told to stop: a goroutine that Stop waits for (the meters and samplers
// that read a server), or a function called every interval (the watches of
// a run's progress).
package background

import "time"

// A Task is one goroutine started by Start and ended by Stop. Its zero
// value is ready to start.
type Task struct {
	stop, done chan struct{}
}

// Start runs f in a goroutine of its own. f returns once stop is closed
// (by Stop) or the work it was given ends, such as its context. A task runs
// one f at a time: Start on a running task stops it first.
func (t *Task) Start(f func(stop <-chan struct{})) {
	t.Stop()
	stop, done := make(chan struct{}), make(chan struct{})
	t.stop, t.done = stop, done
	go func() {
		defer close(done)
		f(stop)
	}()
}

// Stop closes f's stop channel and waits for f to return. It does nothing
// on a task that is not running.
func (t *Task) Stop() {
	if t.stop == nil {
		return
	}
	close(t.stop)
	<-t.done
	t.stop, t.done = nil, nil
}

// Every calls f every interval until done is closed or f returns false,
// with the time of the tick; its first call is one interval from now.
func Every(done <-chan struct{}, interval time.Duration, f func(now time.Time) bool) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			if !f(now) {
				return
			}
		}
	}
}
