// Package childserver runs a server program as a child process, so that a
// client measured in llmload's benchmarks and soak test shares nothing
// with the server but the machine. [Start] runs the command and waits for
// the address the server prints; [Server.Stop] asks it to exit and waits.
package childserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"sync"
	"time"
)

// StartTimeout bounds the wait for a server's address.
const StartTimeout = 30 * time.Second

// StopTimeout is how long [Server.Stop] waits for a server to exit before
// it kills it.
const StopTimeout = 10 * time.Second

// Server is a server program running as a child process.
type Server struct {
	// Addr is the address the server printed, such as "127.0.0.1:40123".
	Addr string
	// PID is the child's process id.
	PID int

	cmd      *exec.Cmd
	out      *watcher
	exited   chan struct{} // closed when the child has exited; then waitErr is set
	waitErr  error
	stopOnce sync.Once
	stopErr  error
}

// Start starts cmd and waits until the server writes, on its standard
// output or error, a match of addr, whose first group is the address it
// listens on. What it writes still goes to cmd.Stdout and cmd.Stderr. On
// Linux the child gets SIGTERM if this process dies first, and a process
// group of its own (a Ctrl-C in the terminal reaches this process alone),
// unless cmd.SysProcAttr is set. Start gives up, and kills the child, when
// the child exits first, after StartTimeout, or when ctx ends.
func Start(ctx context.Context, cmd *exec.Cmd, addr *regexp.Regexp) (*Server, error) {
	out := &watcher{pattern: addr, found: make(chan string, 1)}
	cmd.Stdout = out.tee(cmd.Stdout)
	cmd.Stderr = out.tee(cmd.Stderr)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = procAttr()
	}
	cmd.WaitDelay = StopTimeout // Wait returns even if a grandchild holds the pipes
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	s := &Server{PID: cmd.Process.Pid, cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	timeout := time.NewTimer(StartTimeout)
	defer timeout.Stop()
	var err error
	select {
	case s.Addr = <-out.found:
		return s, nil
	case <-s.exited:
		err = fmt.Errorf("%s exited as it started: %v", cmd.Path, s.waitErr)
	case <-timeout.C:
		err = fmt.Errorf("%s printed no address within %v", cmd.Path, StartTimeout)
	case <-ctx.Done():
		err = fmt.Errorf("interrupted while starting %s: %w", cmd.Path, context.Cause(ctx))
	}
	_ = cmd.Process.Kill()
	<-s.exited
	if o := out.String(); o != "" {
		err = fmt.Errorf("%w; it wrote:\n%s", err, o)
	}
	return nil, err
}

// Done is closed when the server has exited, stopped or not.
func (s *Server) Done() <-chan struct{} { return s.exited }

// Err returns how the server exited (exec.Cmd.Wait's error), once Done
// is closed.
func (s *Server) Err() error {
	<-s.exited
	return s.waitErr
}

// Output returns the start of what the server wrote (its first 64 KiB).
func (s *Server) Output() string { return s.out.String() }

// Stop asks the server to exit (SIGTERM; on Windows it is killed), kills
// it if it has not within StopTimeout, and waits for it. It returns an
// error unless the server was running and exited cleanly. It may be called
// more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		select {
		case <-s.exited:
			s.stopErr = fmt.Errorf("exited before it was stopped: %v", s.waitErr)
			return
		default:
		}
		killed := terminate(s.cmd.Process)
		select {
		case <-s.exited:
		case <-time.After(StopTimeout):
			_ = s.cmd.Process.Kill()
			<-s.exited
			s.stopErr = fmt.Errorf("killed: it did not exit within %v of SIGTERM", StopTimeout)
			return
		}
		if s.waitErr != nil && !killed {
			s.stopErr = fmt.Errorf("did not exit cleanly: %v", s.waitErr)
		}
	})
	return s.stopErr
}

// keep is how much of a server's output a watcher keeps.
const keep = 64 << 10

// watcher reads a server's output for its address, keeping the start of it
// for error messages.
type watcher struct {
	pattern *regexp.Regexp
	found   chan string

	mu   sync.Mutex
	buf  bytes.Buffer
	sent bool
}

// tee returns a writer to the watcher and to w, if any.
func (w *watcher) tee(to io.Writer) io.Writer {
	if to == nil {
		return w
	}
	return io.MultiWriter(w, to)
}

func (w *watcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() < keep {
		w.buf.Write(p[:min(len(p), keep-w.buf.Len())])
	}
	if !w.sent {
		if m := w.pattern.FindSubmatch(w.buf.Bytes()); len(m) > 1 {
			w.sent = true
			w.found <- string(m[1])
		}
	}
	return len(p), nil
}

func (w *watcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
