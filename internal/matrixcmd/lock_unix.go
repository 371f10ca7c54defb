//go:build unix

package matrixcmd

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on path, creating it, without waiting;
// the function returned releases it and removes the file.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
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
