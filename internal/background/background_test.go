package background

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestStopWaitsForTheGoroutine(t *testing.T) {
	var task Task
	var ticks, ended atomic.Int32
	started := make(chan struct{})
	task.Start(func(stop <-chan struct{}) {
		defer ended.Add(1)
		close(started)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				ticks.Add(1)
			case <-stop:
				return
			}
		}
	})
	<-started
	task.Stop()
	if ended.Load() != 1 {
		t.Fatalf("Stop returned before the goroutine ended")
	}
	n := ticks.Load()
	time.Sleep(5 * time.Millisecond)
	if ticks.Load() != n {
		t.Fatalf("the goroutine ticked after Stop returned")
	}
	task.Stop() // stopping again does nothing
}

func TestStopBeforeStartDoesNothing(t *testing.T) {
	var task Task
	task.Stop()
}

func TestStartAgainStopsTheFirst(t *testing.T) {
	var task Task
	var running atomic.Int32
	run := func(stop <-chan struct{}) {
		if running.Add(1) != 1 {
			t.Errorf("two goroutines of one task ran at once")
		}
		<-stop
		running.Add(-1)
	}
	task.Start(run)
	task.Start(run)
	task.Stop()
	if running.Load() != 0 {
		t.Fatalf("%d goroutines still running after Stop", running.Load())
	}
}

func TestAGoroutineThatEndsOnItsOwn(t *testing.T) {
	var task Task
	task.Start(func(<-chan struct{}) {})
	task.Stop() // the goroutine has ended or ends: Stop returns either way
}

func TestEveryUntilFalse(t *testing.T) {
	calls := 0
	Every(make(chan struct{}), time.Millisecond, func(time.Time) bool {
		calls++
		return calls < 3
	})
	if calls != 3 {
		t.Fatalf("f was called %d times, want 3: Every goes on until f returns false", calls)
	}
}

func TestEveryUntilDone(t *testing.T) {
	done := make(chan struct{})
	close(done)
	Every(done, time.Hour, func(time.Time) bool {
		t.Fatal("f called after done was closed")
		return false
	})
}
