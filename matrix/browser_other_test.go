//go:build !unix

package matrix

import "os/exec"

// killBrowserGroup leaves the command as it is: a cancelled command kills
// the browser's main process only.
func killBrowserGroup(*exec.Cmd) {}
