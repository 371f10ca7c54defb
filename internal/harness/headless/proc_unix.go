//go:build unix

package headless

import (
	"os/exec"
	"syscall"
)

// killGroup runs the browser in its own process group and makes a
// cancelled command kill the whole group, so that no renderer or GPU
// helper outlives a timed-out run.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
