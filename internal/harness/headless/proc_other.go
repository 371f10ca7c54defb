//go:build !unix

package headless

import "os/exec"

// killGroup leaves the command as it is: a cancelled command kills the
// browser's main process only.
func killGroup(*exec.Cmd) {}
