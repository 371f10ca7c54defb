//go:build !linux

package main

import "syscall"

// childProcAttr: elsewhere the simulator shares soak's process group, so a
// Ctrl-C in the terminal reaches both.
func childProcAttr() *syscall.SysProcAttr { return nil }
