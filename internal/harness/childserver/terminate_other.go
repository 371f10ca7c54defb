//go:build !unix

package childserver

import "os"

// terminate kills p, where there is no SIGTERM to send.
func terminate(p *os.Process) (killed bool) {
	_ = p.Kill()
	return true
}
