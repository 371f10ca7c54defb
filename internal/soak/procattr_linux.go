package main

import "syscall"

// childProcAttr puts the simulator in a process group of its own, so a
// Ctrl-C in the terminal reaches soak alone, which then stops the load
// before the server; and asks Linux to send it SIGTERM if soak dies first
// (Pdeathsig fires when the thread that started the child exits; Go's
// threads outlive their goroutines, so in practice that is when soak exits).
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
