//go:build unix

package safefile

import "syscall"

// nonBlock opens a named pipe without waiting for its other end, and
// noFollow refuses a symbolic link at the path opened.
const (
	nonBlock = syscall.O_NONBLOCK
	noFollow = syscall.O_NOFOLLOW
)
