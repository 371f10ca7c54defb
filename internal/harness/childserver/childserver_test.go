package childserver_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/internal/harness/childserver"
	"github.com/llmload/llmload/internal/harness/logbuffer"
)

// modeEnv, set, makes the test binary a child server of that mode.
const modeEnv = "CHILDSERVER_TEST_MODE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(modeEnv); mode != "" {
		os.Exit(serve(mode))
	}
	goleak.VerifyTestMain(m)
}

// serve is the child: "serve" answers HTTP until SIGTERM and exits 0;
// "crash" exits 2 after its first request; "exit" exits 3 at once, having
// said so; "silent" prints nothing and waits to be killed.
func serve(mode string) int {
	switch mode {
	case "exit":
		fmt.Fprintln(os.Stderr, "no port for me")
		return 3
	case "silent":
		time.Sleep(time.Hour)
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	crashed := make(chan struct{})
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer := "pid " + fmt.Sprint(os.Getpid())
		w.Header().Set("Content-Length", fmt.Sprint(len(answer)))
		io.WriteString(w, answer)
		if mode == "crash" {
			http.NewResponseController(w).Flush() // the whole answer is out
			close(crashed)
		}
	}))
	fmt.Fprintf(os.Stdout, "some chatter\nserving on http://%s\n", ln.Addr())
	select {
	case <-ctx.Done():
		return 0
	case <-crashed:
		return 2
	}
}

var servingOn = regexp.MustCompile(`serving on http://(\S+)`)

func child(mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), modeEnv+"="+mode)
	return cmd
}

func get(t *testing.T, addr string) string {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://" + addr + "/")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// TestStartAndStop: Start returns once the child has printed its address,
// which serves; Stop ends it cleanly, and again does nothing.
func TestStartAndStop(t *testing.T) {
	s, err := childserver.Start(t.Context(), child("serve"), servingOn)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprint("pid ", s.PID), get(t, s.Addr))
	assert.Contains(t, s.Output(), "some chatter")
	require.NoError(t, s.Stop())
	select {
	case <-s.Done():
	default:
		t.Fatal("Stop returned before the child exited")
	}
	assert.NoError(t, s.Err())
	assert.NoError(t, s.Stop(), "a second Stop")
	if runtime.GOOS != "windows" {
		p, err := os.FindProcess(s.PID)
		require.NoError(t, err)
		assert.Error(t, p.Signal(syscall.Signal(0)), "the child is gone")
	}
}

// TestOutputStillReachesTheCaller: what the child writes goes to the
// writers the command had too.
func TestOutputStillReachesTheCaller(t *testing.T) {
	var out logbuffer.Buffer
	cmd := child("serve")
	cmd.Stdout = &out
	s, err := childserver.Start(t.Context(), cmd, servingOn)
	require.NoError(t, err)
	require.NoError(t, s.Stop())
	assert.Contains(t, out.String(), "serving on http://"+s.Addr)
}

// TestExitBeforeStop: a child that exits of itself is Done, and Stop says
// it exited before it was stopped.
func TestExitBeforeStop(t *testing.T) {
	s, err := childserver.Start(t.Context(), child("crash"), servingOn)
	require.NoError(t, err)
	get(t, s.Addr)
	<-s.Done()
	var exit *exec.ExitError
	require.ErrorAs(t, s.Err(), &exit)
	assert.Equal(t, 2, exit.ExitCode())
	err = s.Stop()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited before it was stopped")
}

// TestStartFails: a child that exits without an address, or says nothing
// until the caller gives up, is an error that shows what it wrote, and
// leaves no process behind.
func TestStartFails(t *testing.T) {
	_, err := childserver.Start(t.Context(), child("exit"), servingOn)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited as it started")
	assert.Contains(t, err.Error(), "exit status 3")
	assert.Contains(t, err.Error(), "no port for me")

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	cmd := child("silent")
	_, err = childserver.Start(ctx, cmd, servingOn)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.NotNil(t, cmd.ProcessState, "the child was waited for")
}
