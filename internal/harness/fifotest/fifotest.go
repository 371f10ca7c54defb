// Package fifotest makes named pipes for the tests of code that must
// refuse one at once rather than block in open(2), and runs that code
// under a deadline, so that a regression fails its test instead of
// hanging it.
package fifotest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Deadline is how long the code under test may take to refuse a pipe:
// generous, for a loaded machine; a blocked open(2) never returns.
const Deadline = 10 * time.Second

// New makes a named pipe called name in dir and returns its path.
func New(t testing.TB, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatalf("mkfifo %s: %v", path, err)
	}
	return path
}

// Within returns do's result when do returns within [Deadline]. If it
// has not, t fails: the pipe is opened and closed, which releases an
// open(2) blocked on it (the code under test then reads an empty input
// or writes to nobody), and Within waits for do to end, so that no
// goroutine is left behind.
func Within[T any](t testing.TB, pipe string, do func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- do() }()
	select {
	case v := <-done:
		return v
	case <-time.After(Deadline):
	}
	t.Errorf("still blocked on the named pipe %s after %v", pipe, Deadline)
	for {
		// Read-write: neither end waits for the other.
		if f, err := os.OpenFile(pipe, os.O_RDWR, 0); err == nil {
			f.Close()
		}
		select {
		case v := <-done:
			t.FailNow()
			return v
		case <-time.After(100 * time.Millisecond):
		}
	}
}
