package childserver

import "syscall"

// procAttr puts the child in a process group of its own, so a Ctrl-C in
// the terminal reaches the parent alone, which then stops what it runs
// before the server; and asks Linux to send the child SIGTERM if the
// parent dies first (Pdeathsig fires when the thread that started the
// child exits; Go's threads outlive their goroutines, so in practice that
// is when the parent exits).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
