package workload_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/rxstamp"
	"github.com/llmload/llmload/loadgen/loadgentest"
)

// The test binary runs two helpers of TestReplayOnTime in processes of
// their own, named by helperEnv: the simulated server, so that the replay
// measures the client and not the client and its server sharing one
// runtime, and a probe of the machine's own delay.
const (
	helperEnv       = "LLMLOAD_WORKLOAD_TEST_HELPER"
	helperSimulator = "simulator"
	helperProbe     = "probe"
)

// helper is a helper process: it runs until its standard input is closed.
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startHelper starts the helper named mode and returns it with the first
// line it printed.
func startHelper(t *testing.T, mode string) (*helper, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	h := &helper{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	line, err := h.out.ReadString('\n')
	if err != nil {
		h.stop()
		require.NoError(t, err, "the %s helper started", mode)
	}
	return h, strings.TrimSpace(line)
}

// stop closes the helper's input and returns what it printed last.
func (h *helper) stop() string {
	h.stdin.Close()
	rest, _ := io.ReadAll(h.out)
	_ = h.cmd.Wait()
	return strings.TrimSpace(string(rest))
}

// untilStdinCloses returns a flag set when the process's standard input
// reaches its end: the test that started it is done with it.
func untilStdinCloses() *atomic.Bool {
	var done atomic.Bool
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		done.Store(true)
	}()
	return &done
}

// serveSimulator is the simulator helper: a fast simulated server that
// records each streaming request's arrival (see recorder) and gives them
// as JSON at /arrivals. It prints its URL. It serves with rxstamp.Serve,
// which times each request's first bytes by the kernel's receive
// timestamp.
func serveSimulator() {
	p := loadgentest.FastProfile()
	p.Speed = 10
	h := loadgentest.NewHandler(p)
	defer h.Close()
	rc := &recorder{next: h}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /arrivals", func(w http.ResponseWriter, _ *http.Request) {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		out := make([]wireArrival, len(rc.got))
		for i, a := range rc.got {
			out[i] = wireArrival{At: a.at.UnixNano(), Stamped: a.stamped, Handled: a.handled.UnixNano(), MaxTokens: a.maxTokens, Prompt: a.prompt}
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	mux.Handle("/", rc)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("http://%s\n", l.Addr())
	go func() { _ = rxstamp.Serve(l, mux) }()
	done := untilStdinCloses()
	for !done.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	l.Close()
}

// wireArrival is an arrival as the simulator helper gives it.
type wireArrival struct {
	At        int64 // Unix nanoseconds
	Stamped   bool
	Handled   int64 // Unix nanoseconds
	MaxTokens int
	Prompt    string
}

// arrivals fetches the simulator helper's arrivals, sorted by time.
func arrivals(t *testing.T, url string) []arrival {
	t.Helper()
	resp, err := http.Get(url + "/arrivals")
	require.NoError(t, err)
	defer resp.Body.Close()
	var ws []wireArrival
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&ws))
	got := make([]arrival, len(ws))
	for i, w := range ws {
		got[i] = arrival{at: time.Unix(0, w.At), stamped: w.Stamped, handled: time.Unix(0, w.Handled), maxTokens: w.MaxTokens, prompt: w.Prompt}
	}
	slices.SortFunc(got, func(a, b arrival) int { return a.at.Compare(b.at) })
	return got
}

// probeMachine is the probe helper: on a thread of its own, with nothing
// else running in its process, it sleeps in the kernel to deadlines a
// millisecond apart and notes how late it wakes each time, until its
// input closes; then it prints the delays' 99th percentile, maximum and
// count in nanoseconds, and on a line each, every deadline and wake-up in
// Unix nanoseconds. It is what the machine gives any thread that wakes on
// time beside the test: a request due while no thread could run is late
// by that much, whoever sends it.
func probeMachine() {
	runtime.LockOSThread()
	fmt.Println("probing")
	done := untilStdinCloses()
	var wakes []wake
	next := time.Now()
	for !done.Load() {
		next = next.Add(time.Millisecond)
		sleepUntil(next)
		w := wake{deadline: next, woke: time.Now()}
		wakes = append(wakes, w)
		if w.woke.Sub(next) > time.Millisecond { // sleep a whole millisecond again
			next = w.woke
		}
	}
	d := summarize(wakes)
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, int64(d.p99), int64(d.max), d.count)
	for _, w := range wakes {
		fmt.Fprintln(out, w.deadline.UnixNano(), w.woke.UnixNano())
	}
	_ = out.Flush()
}

// wake is one of the probe's wake-ups.
type wake struct{ deadline, woke time.Time }

// machineDelay is how late the machine woke a sleeping thread.
type machineDelay struct {
	p99, max time.Duration
	count    int
	wakes    []wake // in order, on the wall clock
}

// summarize returns the 99th percentile and the maximum of how late each
// of wakes was.
func summarize(wakes []wake) machineDelay {
	if len(wakes) == 0 {
		return machineDelay{}
	}
	lates := make([]time.Duration, len(wakes))
	for i, w := range wakes {
		lates[i] = w.woke.Sub(w.deadline)
	}
	slices.Sort(lates)
	return machineDelay{p99: p99(lates), max: lates[len(lates)-1], count: len(lates), wakes: wakes}
}

// at returns how long after due the probe's thread, wanting to run then
// or soon after, got to run: from due, or its next deadline if later, to
// its first wake-up after due. ok is false where the probe did not wake
// after due.
func (d machineDelay) at(due time.Time) (time.Duration, bool) {
	k, _ := slices.BinarySearchFunc(d.wakes, due, func(w wake, t time.Time) int { return w.woke.Compare(t) })
	if k == len(d.wakes) {
		return 0, false
	}
	w := d.wakes[k]
	from := due
	if w.deadline.After(due) {
		from = w.deadline
	}
	return max(w.woke.Sub(from), 0), true
}

// probeDelay starts measuring the machine's own delay in a probe helper
// (see probeMachine) until the returned function is called.
func probeDelay(t *testing.T) func() machineDelay {
	t.Helper()
	h, _ := startHelper(t, helperProbe)
	return func() machineDelay {
		var d machineDelay
		var p99, mx int64
		r := strings.NewReader(h.stop())
		if _, err := fmt.Fscanln(r, &p99, &mx, &d.count); err != nil {
			return machineDelay{}
		}
		d.p99, d.max = time.Duration(p99), time.Duration(mx)
		for {
			var dl, woke int64
			if _, err := fmt.Fscanln(r, &dl, &woke); err != nil {
				break
			}
			d.wakes = append(d.wakes, wake{deadline: time.Unix(0, dl), woke: time.Unix(0, woke)})
		}
		return d
	}
}
