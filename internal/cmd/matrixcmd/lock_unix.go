//go:build unix

package matrixcmd

import (
	"os"
	"syscall"

	"github.com/llmload/llmload/internal/safefile"
)

// lockFile takes an exclusive lock on path, creating it, without waiting;
// the function returned releases it and removes the file. A symbolic
// link or a named pipe at path is refused, as any output is.
func lockFile(path string) (func(), error) {
	f, err := safefile.Append(path)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		os.Remove(path)
		f.Close()
	}, nil
}
