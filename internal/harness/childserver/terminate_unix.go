//go:build unix

package childserver

import (
	"os"
	"syscall"
)

// terminate sends p SIGTERM; it reports whether p had to be killed.
func terminate(p *os.Process) (killed bool) {
	if p.Signal(syscall.SIGTERM) != nil {
		_ = p.Kill()
		return true
	}
	return false
}
