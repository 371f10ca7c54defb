//go:build !linux

package childserver

import "syscall"

// procAttr: elsewhere the child shares the parent's process group, so a
// Ctrl-C in the terminal reaches both.
func procAttr() *syscall.SysProcAttr { return nil }
