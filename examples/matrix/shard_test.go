package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/logbuffer"
	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
)

// pacedServer is a simulated server that sends every stream a token every
// 10 ms, however many streams it holds (100 tok/s a stream), and notes the
// client process behind each request: the process that holds the other
// end of its connection.
type pacedServer struct {
	*httptest.Server
	handler *loadgentest.Handler

	mu     sync.Mutex
	pids   []int       // the processes that may be clients
	ports  map[int]int // a client port, its process (0 when not found)
	owners map[int]int // a process, its streams
	closed int         // connections closed before they could be traced
}

func newPacedServer(t *testing.T) *pacedServer {
	t.Helper()
	s := &pacedServer{handler: loadgentest.NewHandler(loadgentest.FastProfile()), ports: map[int]int{}, owners: map[int]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/completions") {
			// The body read whole, the server watches the connection:
			// the request's context ends when its client closes it.
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			s.note(r)
		}
		s.handler.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		s.handler.Close()
		s.Server.Close()
	})
	return s
}

// watch makes the processes candidates for clients.
func (s *pacedServer) watch(pids ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pids = append(s.pids, pids...)
}

// note finds the process at the other end of a request's connection, once
// per connection. A connection its client closed before it could be traced
// (a request cancelled at the end of a window) is not counted: a closed
// socket has no owner to find.
func (s *pacedServer) note(r *http.Request) {
	_, p, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return
	}
	port, _ := strconv.Atoi(p)
	local, _ := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	if local == nil {
		return
	}
	server := local.Port
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, seen := s.ports[port]; seen {
		return
	}
	pid := 0
	for try := 0; try < 10; try++ {
		if pid = socketOwner(port, server, s.pids); pid != 0 || r.Context().Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.ports[port] = pid
	if pid == 0 && r.Context().Err() != nil {
		s.closed++
		return
	}
	s.owners[pid]++
}

// clients returns the processes that sent requests, by their streams'
// connections.
func (s *pacedServer) clients() map[int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]int{}
	for pid, n := range s.owners {
		out[pid] = n
	}
	return out
}

// socketOwner returns which of pids holds the TCP socket from local port
// port to remote port server, from /proc (Linux), or 0. The remote port
// tells it from an older socket of the same local port to another peer,
// and a socket in TIME_WAIT, owned by nobody, has inode 0.
func socketOwner(port, server int, pids []int) int {
	inode := ""
	portOf := func(addr string) int {
		i := strings.LastIndexByte(addr, ':')
		if i < 0 {
			return -1
		}
		p, err := strconv.ParseInt(addr[i+1:], 16, 32)
		if err != nil {
			return -1
		}
		return int(p)
	}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[9] == "0" {
				continue
			}
			if portOf(f[1]) == port && portOf(f[2]) == server {
				inode = f[9]
			}
		}
	}
	if inode == "" {
		return 0
	}
	want := "socket:[" + inode + "]"
	for _, pid := range pids {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && l == want {
				return pid
			}
		}
	}
	return 0
}

// The fleet's secret every process of the tests' sharded runs is given.
const (
	fleetTokenEnv = "LLMLOAD_TEST_FLEET_TOKEN"
	fleetToken    = "the-tests-fleet-secret"
)

// shardProc is one process of a sharded run.
type shardProc struct {
	cmd  *exec.Cmd
	log  *logbuffer.Buffer
	out  *logbuffer.Buffer // its standard output
	done chan error
}

// startShard starts the command with args; its stderr is kept.
func startShard(t *testing.T, bin string, args ...string) *shardProc {
	t.Helper()
	p := &shardProc{cmd: exec.Command(bin, args...), log: &logbuffer.Buffer{}, out: &logbuffer.Buffer{}, done: make(chan error, 1)}
	p.cmd.Env = append(os.Environ(), fleetTokenEnv+"="+fleetToken)
	p.cmd.Stderr = p.log
	p.cmd.Stdout = p.out
	require.NoError(t, p.cmd.Start())
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		p.done <- nil
	})
	return p
}

// wait waits for the process to exit, at most d, and returns its exit
// status (-1 when it did not exit).
func (p *shardProc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		if err == nil {
			return 0
		}
		if e, ok := err.(*exec.ExitError); ok {
			return e.ExitCode()
		}
		t.Errorf("%v", err)
		return -1
	case <-time.After(d):
		return -1
	}
}

// until waits until the process's log matches re, at most d.
func (p *shardProc) until(t *testing.T, d time.Duration, re string) []string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if m := rx.FindStringSubmatch(p.log.String()); m != nil {
			return m
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %q in %v of its log:\n%s", re, d, p.log.String())
	return nil
}

// leaderArgs runs a short matrix of context 0 at the given concurrency
// against url, leading a run of n shards.
func leaderArgs(url, results string, n int, concurrency string, window time.Duration) []string {
	return []string{"-url", url, "-api", "completions", "-contexts", "0", "-concurrency", concurrency, "-prefill", "",
		"-duration", window.String(), "-max-tokens", "30000", "-warmup-min", "300ms", "-warmup-flow", "700ms",
		"-results", results, "-format", "json", "-shards", strconv.Itoa(n), "-listen", "127.0.0.1:0",
		"-fleet-token-env", fleetTokenEnv}
}

// joinURL reads the leader's address from its log.
func joinURL(t *testing.T, leader *shardProc) string {
	return leader.until(t, 20*time.Second, `followers join (http://\S+)`)[1]
}

// TestShardedRunAcrossProcesses: three processes, a leader and two
// followers, measure cells of 3 and 30 streams against a server that sends
// a token every 10 ms to each: the merged total is 100 tok/s a stream
// within 3%, the median time between tokens 10 ms within 0.3 ms, the
// server saw streams from all three processes, and every shard's share is
// in the cell.
func TestShardedRunAcrossProcesses(t *testing.T) {
	longtest.Skip(t)
	if testing.Short() {
		t.Skip("builds and runs the command in three processes")
	}
	bin := buildMatrix(t)
	srv := newPacedServer(t)
	results := filepath.Join(t.TempDir(), "r.json")
	leader := startShard(t, bin, leaderArgs(srv.URL+"/v1", results, 3, "3,30", 4*time.Second)...)
	srv.watch(leader.cmd.Process.Pid)
	url := joinURL(t, leader)
	f1 := startShard(t, bin, "-join", url, "-name", "f1", "-fleet-token-env", fleetTokenEnv)
	srv.watch(f1.cmd.Process.Pid)
	f2 := startShard(t, bin, "-join", url, "-name", "f2", "-fleet-token-env", fleetTokenEnv)
	srv.watch(f2.cmd.Process.Pid)

	require.Equal(t, 0, leader.wait(t, 90*time.Second), leader.log.String())
	assert.Equal(t, 0, f1.wait(t, 10*time.Second), "a follower exits when the run is over: %s", f1.log.String())
	assert.Equal(t, 0, f2.wait(t, 10*time.Second), f2.log.String())
	assert.Contains(t, f1.log.String(), "the leader's run is over")

	res, err := matrix.LoadFile(results)
	require.NoError(t, err)
	require.True(t, res.Complete)
	for _, c := range res.Cells {
		require.NotNil(t, c.Measurement, "%d: %s %s", c.Concurrency, c.Status, c.Reason)
		assert.Equal(t, matrix.Valid, c.Status, c.Reason)
		assert.InEpsilon(t, 100*float64(c.Concurrency), c.Measurement.OutputTokensPerSec, 0.03, "%d streams over 3 processes", c.Concurrency)
		assert.InDelta(t, 10, c.Measurement.TBT.P50, 0.3, "%d streams", c.Concurrency)
		require.Len(t, c.Measurement.Shards, 3)
		tokens := 0
		names := []string{}
		for i, s := range c.Measurement.Shards {
			assert.Equal(t, split(c.Concurrency, 3)[i], s.Streams)
			assert.Empty(t, s.Lost)
			tokens += s.OutputTokens
			names = append(names, s.Name)
		}
		assert.ElementsMatch(t, []string{c.Measurement.Shards[0].Name, "f1", "f2"}, names)
		assert.Equal(t, c.Measurement.OutputTokens, tokens)
		require.NotNil(t, c.Measurement.Recording, "the cell carries its histograms")
		assert.EqualValues(t, c.Measurement.Recording.Summary.TBT.Count, c.Measurement.Recording.Histograms.TBT.Summary().Count)
	}
	clients := srv.clients()
	// /proc/net/tcp is not read as one snapshot: with many sockets
	// changing, a line can be missed, so a connection now and then goes
	// untraced. Most must be traced, and every process seen.
	traced := 0
	for pid, n := range clients {
		if pid != 0 {
			traced += n
		}
	}
	t.Logf("the streams' connections by the process at their other end (0: not traced): %v", clients)
	assert.LessOrEqual(t, 10*clients[0], traced, "the streams' connections traced to a process: %v", clients)
	for _, p := range []*shardProc{leader, f1, f2} {
		assert.Positive(t, clients[p.cmd.Process.Pid], "the server saw streams from process %d: %v", p.cmd.Process.Pid, clients)
	}
}

// TestShardedRunFaults: a follower killed in the middle of a cell is
// dropped from it, and the cell says which shard it lost; the next cell
// runs on the shards left; Ctrl-C on the leader stops every shard and keeps
// the finished cells.
func TestShardedRunFaults(t *testing.T) {
	longtest.Skip(t)
	if testing.Short() {
		t.Skip("builds and runs the command in three processes")
	}
	bin := buildMatrix(t)
	srv := newPacedServer(t)
	results := filepath.Join(t.TempDir(), "r.json")
	leader := startShard(t, bin, leaderArgs(srv.URL+"/v1", results, 3, "4,6,8", 3*time.Second)...)
	url := joinURL(t, leader)
	f1 := startShard(t, bin, "-join", url, "-name", "f1", "-fleet-token-env", fleetTokenEnv)
	f2 := startShard(t, bin, "-join", url, "-name", "f2", "-fleet-token-env", fleetTokenEnv)

	// Into the first cell's window (half a second of its 4 streams'
	// tokens), then kill f2.
	leader.until(t, 30*time.Second, `cell 1 of 3`)
	srv.intoWindow(t, f2, 1, 200)
	require.NoError(t, f2.cmd.Process.Kill())
	// Into the third cell's window (half a second of its 8 streams'
	// tokens), then stop the leader as Kubernetes stops a pod: SIGTERM,
	// which the command takes as Ctrl-C.
	leader.until(t, 60*time.Second, `cell 3 of 3`)
	srv.intoWindow(t, f1, 3, 400)
	require.NoError(t, leader.cmd.Process.Signal(syscall.SIGTERM))

	assert.Equal(t, 1, leader.wait(t, 20*time.Second), "an interrupted run exits 1: %s", leader.log.String())
	assert.Equal(t, 0, f1.wait(t, 10*time.Second), "the follower stops when the leader does: %s", f1.log.String())

	res, err := matrix.LoadFile(results)
	require.NoError(t, err)
	printed, err := matrix.ReadResults(strings.NewReader(leader.out.String()))
	require.NoError(t, err, "the results on the leader's standard output: %q", leader.out.String())
	assert.Len(t, printed.Cells, len(res.Cells), "stdout holds the cells the file holds")
	assert.NotNil(t, printed.Cell(0, 6).Measurement)
	assert.False(t, res.Complete)
	first := res.Cell(0, 4)
	require.NotNil(t, first.Measurement, leader.log.String())
	assert.True(t, first.Measurement.Partial, "the cell that lost a shard is partial")
	require.Len(t, first.Measurement.Shards, 3)
	var lost matrix.Shard
	for _, s := range first.Measurement.Shards {
		if s.Name == "f2" {
			lost = s
		}
	}
	assert.Contains(t, lost.Lost, "no word from it", leader.log.String())
	assert.Contains(t, strings.Join(first.Measurement.Notes, "\n"), fmt.Sprintf("shard %d (f2) was lost", lost.Index))

	second := res.Cell(0, 6)
	require.NotNil(t, second.Measurement, leader.log.String())
	assert.False(t, second.Measurement.Partial)
	require.Len(t, second.Measurement.Shards, 2, "the next cell runs on the shards left")
	assert.InEpsilon(t, 600, second.Measurement.OutputTokensPerSec, 0.03)

	third := res.Cell(0, 8)
	require.NotNil(t, third.Measurement, "the interrupted cell keeps what it measured: %s", leader.log.String())
	assert.True(t, third.Measurement.Partial)
}

// intoWindow waits until the follower p logs when cell's window opens,
// then until the server has written tokens output tokens since it opened.
func (s *pacedServer) intoWindow(t *testing.T, p *shardProc, cell int, tokens int64) {
	t.Helper()
	in, err := time.ParseDuration(p.until(t, 60*time.Second, fmt.Sprintf(`cell %d: the window opens in (\S+)`, cell))[1])
	require.NoError(t, err)
	opens := time.Now().Add(in) // the line was written before now: the window is open by then
	deadline := time.Now().Add(60 * time.Second)
	base := int64(-1)
	for {
		if now := time.Now(); !now.Before(opens) {
			written := s.handler.Stats().WrittenTokens
			if base < 0 {
				base = written
			}
			if written-base >= tokens {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tokens in 60 s of cell %d's window", tokens, cell)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFollowerStopsWhenTheLeaderDies: a follower whose leader is killed
// stops its streams and exits with an error, without hanging.
func TestFollowerStopsWhenTheLeaderDies(t *testing.T) {
	longtest.Skip(t)
	if testing.Short() {
		t.Skip("builds and runs the command in two processes")
	}
	bin := buildMatrix(t)
	srv := newPacedServer(t)
	leader := startShard(t, bin, leaderArgs(srv.URL+"/v1", filepath.Join(t.TempDir(), "r.json"), 2, "4", 30*time.Second)...)
	url := joinURL(t, leader)
	f := startShard(t, bin, "-join", url, "-name", "f1", "-fleet-token-env", fleetTokenEnv)
	// Inside its window: half a second of its 4 streams' tokens.
	srv.intoWindow(t, f, 1, 200)
	require.NoError(t, leader.cmd.Process.Kill())
	killed := time.Now()
	assert.Equal(t, 1, f.wait(t, 20*time.Second), f.log.String())
	assert.Less(t, time.Since(killed), 10*time.Second, "the follower gives up after its silence (5 s)")
	assert.Contains(t, f.log.String(), "the leader is gone")
}

// split is the split the leader makes of n streams over shards: as even
// as possible, the first shards one more.
func split(n, shards int) []int {
	out := make([]int, shards)
	for i := range out {
		out[i] = n / shards
		if i < n%shards {
			out[i]++
		}
	}
	return out
}
