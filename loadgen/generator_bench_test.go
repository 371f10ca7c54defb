package loadgen_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	rtmetrics "runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmload/llmload/internal/harness/childserver"
	"github.com/llmload/llmload/internal/procstat"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/metrics"
)

// The benchmarks below measure the Generator and the Client at the issue's
// reference load: 1,000 concurrent streams of 100 tokens/s each (the fast
// profile's 10 ms decode steps at speed 1), 100,000 tokens/s in all.
//
// Where only the client's share of the CPU or the memory is wanted, the
// simulator runs as a process of its own (examples/simserver, built by the
// benchmark), so the benchmark process holds the client alone. They skip when
// it cannot be built or started.
const (
	benchStreams   = 1000
	benchMaxTokens = 30000 // 300 s at 100 tokens/s: no stream ends during a run
)

// simProcess is the simulator running as a process of its own.
type simProcess struct {
	URL string // e.g. "http://127.0.0.1:40123"
	pid int
}

// startSimProcess builds examples/simserver and starts it with the fast
// profile at the given speed, and args, on a free loopback port. When this
// process may run on some of the machine's CPUs only (taskset -c 1 go test
// …), the simulator runs on the others, so that each has its own. It skips
// the benchmark (or test) when the simulator cannot be built or started,
// and stops the process when it ends.
func startSimProcess(b testing.TB, speed float64, args ...string) *simProcess {
	b.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		b.Skipf("no go command to build the simulator with: %v", err)
	}
	bin := filepath.Join(b.TempDir(), "simserver")
	build := exec.Command(goCmd, "build", "-o", bin, "github.com/llmload/llmload/examples/simserver")
	if out, err := build.CombinedOutput(); err != nil {
		b.Skipf("cannot build the simulator: %v\n%s", err, out)
	}
	args = append([]string{"-addr", "127.0.0.1:0", "-profile", "fast",
		"-speed", strconv.FormatFloat(speed, 'g', -1, 64)}, args...)
	cmd := exec.Command(bin, args...)
	if cpus := otherCPUs(); cpus != "" {
		if taskset, err := exec.LookPath("taskset"); err == nil {
			cmd = exec.Command(taskset, append([]string{"-c", cpus, bin}, args...)...)
			b.Logf("the simulator runs on CPUs %s", cpus)
		}
	}
	srv, err := childserver.Start(b.Context(), cmd, servingOn)
	if err != nil {
		b.Skipf("cannot start the simulator: %v", err)
	}
	b.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			b.Logf("the simulator: %v", err)
		}
	})
	return &simProcess{URL: "http://" + srv.Addr, pid: srv.PID}
}

// otherCPUs returns the online CPUs this process may not run on, as
// taskset's list ("0,2,3"), or "" when it may run on all of them or Linux's
// files do not say.
func otherCPUs() string {
	online, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return ""
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	var allowed []int
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			allowed = cpuList(v)
		}
	}
	if len(allowed) == 0 {
		return ""
	}
	var others []string
	for _, c := range cpuList(string(online)) {
		if !slices.Contains(allowed, c) {
			others = append(others, strconv.Itoa(c))
		}
	}
	return strings.Join(others, ",")
}

// cpuList reads Linux's list of CPUs ("0-3,6").
func cpuList(s string) []int {
	var cpus []int
	for part := range strings.SplitSeq(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		z, err2 := a, error(nil)
		if isRange {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil {
			return nil
		}
		for c := a; c <= z; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// truth returns the simulator's ground truth of request id (started with
// -truth-bytes).
func (p *simProcess) truth(ctx context.Context, id string) (loadgentest.RequestTruth, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/debug/truth?id="+url.QueryEscape(id), nil)
	if err != nil {
		return loadgentest.RequestTruth{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return loadgentest.RequestTruth{}, err
	}
	defer resp.Body.Close()
	var out struct {
		Requests []loadgentest.RequestTruth `json:"requests"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return loadgentest.RequestTruth{}, fmt.Errorf("the truth of %s: %s: %w", id, resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK || len(out.Requests) != 1 {
		return loadgentest.RequestTruth{}, fmt.Errorf("the truth of %s: %s", id, resp.Status)
	}
	return out.Requests[0], nil
}

// servingOn finds the address in the log of simserver and of the blast
// server.
var servingOn = regexp.MustCompile(`on http://(\S+)`)

// cpu returns the simulator's user + system CPU time so far, from
// /proc/PID/stat (10 ms resolution); ok is false without /proc.
func (p *simProcess) cpu() (d time.Duration, ok bool) {
	d, err := procstat.CPU(p.pid)
	return d, err == nil
}

// heapAllocs returns the number of heap allocations the process has made so
// far, without stopping the world.
func heapAllocs() uint64 {
	s := []rtmetrics.Sample{{Name: "/gc/heap/allocs:objects"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64()
}

// meter takes readings at both ends of a measurement window.
type meter struct {
	serverCPU func() (time.Duration, bool) // nil when the server is in this process

	cpu, srv  [2]time.Duration
	sys       [2]time.Duration
	srvOK     bool
	allocs    [2]uint64
	closed    chan struct{}
	closeOnce sync.Once
}

func newMeter(serverCPU func() (time.Duration, bool)) *meter {
	return &meter{serverCPU: serverCPU, closed: make(chan struct{})}
}

func (m *meter) read(i int) {
	m.cpu[i] = cpuTime()
	m.sys[i], _ = procstat.SystemCPU()
	m.allocs[i] = heapAllocs()
	if m.serverCPU != nil {
		var ok bool
		m.srv[i], ok = m.serverCPU()
		m.srvOK = ok && (i == 0 || m.srvOK)
	}
}

// open is a Generator's OnWindow: it reads the meters now and again when the
// window ends.
func (m *meter) open(w metrics.Window) {
	m.read(0)
	time.AfterFunc(time.Until(w.End), func() {
		m.read(1)
		m.closeOnce.Do(func() { close(m.closed) })
	})
}

// wait waits for the reading at the window's end; it reports false when the
// window never opened.
func (m *meter) wait(opened bool) bool {
	if !opened {
		return false
	}
	<-m.closed
	return true
}

// BenchmarkGeneratorTokensPerCPU runs a closed loop of 1,000 streams, each one
// long request, against the fast profile at speed 1 (10 ms decode steps, 100
// tokens/s a stream), warms up for 1 s and measures a 3 s window.
//
// sim=process runs the simulator as a separate process: tokens/cpu-s is per
// CPU-second of the client alone (getrusage(RUSAGE_SELF) of the benchmark
// process), tokens/server-cpu-s per CPU-second of the simulator (from
// /proc), and client-cores and server-cores are the CPUs each kept busy;
// transport= compares transports (see BenchmarkGeneratorMemoryPerStream). sim=in-process serves from this
// process: tokens/process-cpu-s then counts client and server together, and
// tokens/chunk above 1 shows the server merging tokens because its writers
// lag. allocs/token counts the process's heap allocations in the window per
// token (the client's alone with sim=process). lag-p99-ms is the client's
// own timer lag (Run.Health): above a few ms the client was starved of CPU.
//
//	go test -run '^$' -bench 'GeneratorTokensPerCPU' -benchtime 1x -count 3 ./loadgen
func BenchmarkGeneratorTokensPerCPU(b *testing.B) {
	b.Run("sim=process", func(b *testing.B) {
		sim := startSimProcess(b, 1)
		for _, tr := range benchTransports {
			b.Run("transport="+tr.name, func(b *testing.B) {
				benchTokensPerCPU(b, sim.URL+"/v1", tr.new(benchStreams), sim.cpu, nil)
			})
		}
	})
	b.Run("sim=in-process", func(b *testing.B) {
		srv := loadgentest.NewServer(loadgentest.FastProfile())
		defer srv.Close()
		benchTokensPerCPU(b, srv.URL+"/v1", loadgen.NewTransport(benchStreams), nil, srv.Handler)
	})
}

func benchTokensPerCPU(b *testing.B, baseURL string, tr http.RoundTripper, serverCPU func() (time.Duration, bool), inProcess *loadgentest.Handler) {
	hc := &http.Client{Transport: tr}
	defer hc.CloseIdleConnections()
	c := &loadgen.Client{BaseURL: baseURL, HTTPClient: hc}
	req := completion(benchMaxTokens)

	var (
		tokens              int
		window, cpu, server time.Duration
		allocs              uint64
		serverOK            = serverCPU != nil
		written, chunks     int64
		lagP99              time.Duration
	)
	for b.Loop() {
		m := newMeter(serverCPU)
		var st0 loadgentest.Stats
		opened := false
		g := &loadgen.Generator{
			Client: c, Source: loadgen.Repeat(req), Load: loadgen.Closed{Streams: benchStreams},
			Warmup: time.Second, Duration: 3 * time.Second,
			OnWindow: func(w metrics.Window) {
				opened = true
				if inProcess != nil {
					st0 = inProcess.Stats()
				}
				m.open(w)
			},
		}
		run, err := g.Run(b.Context())
		if err != nil {
			b.Fatalf("run: %v (stopped: %s)", err, run.Stopped)
		}
		if !m.wait(opened) {
			b.Fatal("the window never opened")
		}
		if inProcess != nil {
			st1 := inProcess.Stats()
			written += st1.WrittenTokens - st0.WrittenTokens
			chunks += st1.Chunks - st0.Chunks
		}
		s := run.Summary
		if s.Failed > 0 || run.Launched != benchStreams {
			b.Fatalf("%d requests failed (%v), %d launched; want none failed, %d launched", s.Failed, s.Errors, run.Launched, benchStreams)
		}
		tokens += s.OutputTokens
		window += s.Window.Duration()
		cpu += m.cpu[1] - m.cpu[0]
		server += m.srv[1] - m.srv[0]
		serverOK = serverOK && m.srvOK
		allocs += m.allocs[1] - m.allocs[0]
		lagP99 = max(lagP99, run.Health.Lag.P99)
	}
	b.ReportMetric(float64(tokens)/window.Seconds(), "tokens/s")
	if inProcess != nil {
		b.ReportMetric(float64(tokens)/cpu.Seconds(), "tokens/process-cpu-s")
		b.ReportMetric(float64(allocs)/float64(tokens), "process-allocs/token")
		b.ReportMetric(float64(written)/float64(chunks), "tokens/chunk")
	} else {
		b.ReportMetric(float64(tokens)/cpu.Seconds(), "tokens/cpu-s")
		b.ReportMetric(float64(allocs)/float64(tokens), "allocs/token")
		b.ReportMetric(cpu.Seconds()/window.Seconds(), "client-cores")
		if serverOK {
			b.ReportMetric(float64(tokens)/server.Seconds(), "tokens/server-cpu-s")
			b.ReportMetric(server.Seconds()/window.Seconds(), "server-cores")
		}
	}
	b.ReportMetric(float64(lagP99.Microseconds())/1000, "lag-p99-ms")
}

// BenchmarkGeneratorMemoryPerStream measures the client's memory per active
// stream: the simulator runs as a separate process (fast profile, speed 1),
// a closed loop of N streams each sends one long request, and once every
// stream has its first token and has streamed for another second, the
// process's heap and stacks in use (HeapInuse + StackInuse, after GCs) are
// compared with a baseline and divided by N: B/stream. heap-B/stream and
// stack-B/stream are its two parts; live-B/stream is the heap the live
// objects take (the heap in use also holds the free space of partly used
// spans), the steadiest of the figures; goroutines/stream is 3 with
// net/http: the worker, and the readLoop and writeLoop of its connection.
//
// The heap's baseline is taken once the run has ended, its connections are
// closed and their goroutines gone: it still holds the run's recorder, so
// the recorder's fixed histograms (13 of about 188 KB) are not charged to
// the streams. For all of them to exist while the streams are measured, the
// first request of worker 0 is a short one; its second is the stream. The
// stacks' and goroutines' baseline is taken before the run (the runtime
// keeps the stacks of ended goroutines for reuse). The run's other fixed
// cost, the health monitor's histogram of about 188 KB, is charged: 0.2 KiB
// a stream at N = 1,000, 1.9 KiB at N = 100. transport= compares
// NewTransport (net/http, http-1k) with net/http's default 4 KiB buffers
// (http-4k) and StreamTransport (stream), which runs no goroutines of its
// own: goroutines/stream is then 1.
//
//	go test -run '^$' -bench 'GeneratorMemoryPerStream' -benchtime 1x -count 3 ./loadgen
func BenchmarkGeneratorMemoryPerStream(b *testing.B) {
	sim := startSimProcess(b, 1)
	for _, n := range []int{100, benchStreams} {
		for _, tr := range benchTransports {
			b.Run(fmt.Sprintf("streams=%d/transport=%s", n, tr.name), func(b *testing.B) {
				benchMemoryPerStream(b, sim.URL+"/v1", n, tr.new)
			})
		}
	}
}

// benchTransport is a transport the benchmarks compare.
type benchTransport struct {
	name string
	new  func(conns int) http.RoundTripper
}

// benchTransports are the transports compared: NewTransport's net/http
// transport with its 1 KiB buffers each way, the same with net/http's
// default 4 KiB buffers, and StreamTransport, reading each body on its
// request's goroutine (stream) and on its pollers (stream-poll).
var benchTransports = []benchTransport{
	{"http-1k", func(n int) http.RoundTripper { return loadgen.NewTransport(n) }},
	{"http-4k", func(n int) http.RoundTripper {
		t := loadgen.NewTransport(n)
		t.ReadBufferSize, t.WriteBufferSize = 4<<10, 4<<10
		return t
	}},
	{"stream", func(n int) http.RoundTripper { return loadgen.NewStreamTransport(n) }},
	{"stream-poll", newPollTransport},
}

func newPollTransport(n int) http.RoundTripper {
	t := loadgen.NewStreamTransport(n)
	t.Poll = true
	return t
}

// memInUse is the memory the process holds, after a GC.
type memInUse struct {
	heap, live, stack uint64
	goroutines        int
}

func readMemInUse() memInUse {
	// Several cycles: each frees what the last one's finalizers let go, and
	// halves the stacks that use less than a quarter of their size, as the
	// GCs of a long run would.
	for range 4 {
		runtime.GC()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	live := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(live)
	return memInUse{heap: ms.HeapInuse, live: live[0].Value.Uint64(), stack: ms.StackInuse, goroutines: runtime.NumGoroutine()}
}

func benchMemoryPerStream(b *testing.B, baseURL string, n int, newTransport func(conns int) http.RoundTripper) {
	var sum streamMemory
	for b.Loop() {
		m := measureStreamMemory(b, baseURL, n, newTransport)
		sum.heap += m.heap
		sum.live += m.live
		sum.stack += m.stack
		sum.goroutines += m.goroutines
	}
	per := float64(b.N)
	b.ReportMetric((sum.heap+sum.stack)/per, "B/stream")
	b.ReportMetric(sum.heap/per, "heap-B/stream")
	b.ReportMetric(sum.live/per, "live-B/stream")
	b.ReportMetric(sum.stack/per, "stack-B/stream")
	b.ReportMetric(sum.goroutines/per, "goroutines/stream")
}

// streamMemory is what one active stream holds, on average: heap (of it,
// live after a collection) and goroutine stacks, in bytes, and goroutines.
type streamMemory struct {
	heap, live, stack, goroutines float64
}

// measureStreamMemory runs n streams of a long completion against baseURL,
// each on a connection of its own, and returns what each holds once every
// stream has its first token and has run for a second more.
func measureStreamMemory(tb testing.TB, baseURL string, n int, newTransport func(conns int) http.RoundTripper) streamMemory {
	long, short := completion(benchMaxTokens), completion(20) // 19 gaps: more than a timeline buffers
	source := func(worker, seq int) *loadgen.Request {
		if worker == 0 && seq == 0 {
			return short
		}
		return long
	}
	before := readMemInUse()
	hc := &http.Client{Transport: newTransport(n)}
	c := &loadgen.Client{BaseURL: baseURL, HTTPClient: hc}
	g := &loadgen.Generator{Client: c, Source: source, Load: loadgen.Closed{Streams: n}, Duration: time.Hour}

	ctx, cancel := context.WithCancel(tb.Context())
	type result struct {
		run *loadgen.Run
		err error
	}
	done := make(chan result, 1)
	go func() {
		run, err := g.Run(ctx) // cancelled below, once measured
		done <- result{run, err}
	}()
	deadline := time.Now().Add(time.Minute)
	for p := g.Progress(); p.WithToken < n || p.Recorded < 1; p = g.Progress() {
		select {
		case res := <-done:
			cancel()
			tb.Fatalf("the run ended before every stream had its first token: %v", res.err)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			tb.Fatalf("after a minute only %d of %d streams have their first token", p.WithToken, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// About 100 chunks a stream more: buffers and stacks at their working
	// size.
	for from := g.Progress().Tokens; g.Progress().Tokens-from < int64(100*n); {
		if time.Now().After(deadline) {
			cancel()
			<-done
			tb.Fatalf("after a minute only %d tokens of %d streams", g.Progress().Tokens-from, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	during := readMemInUse()
	p := g.Progress()
	cancel()
	res := <-done
	hc.CloseIdleConnections()
	waitGoroutines(before.goroutines) // the baseline must not hold these connections
	after := readMemInUse()
	runtime.KeepAlive(res.run.Recorder)
	if p.WithToken != n || p.Failed > 0 || !errors.Is(res.err, context.Canceled) {
		tb.Fatalf("%d of %d streams active, %d failed, run ended by %v; want all active, none failed, ended by the cancellation", p.WithToken, n, p.Failed, res.err)
	}
	per := float64(n)
	return streamMemory{
		heap:       (float64(during.heap) - float64(after.heap)) / per,
		live:       (float64(during.live) - float64(after.live)) / per,
		stack:      (float64(during.stack) - float64(before.stack)) / per,
		goroutines: float64(during.goroutines-before.goroutines) / per,
	}
}

// waitGoroutines waits, for at most 5 s, until no more than n goroutines
// are left: those of closed connections end shortly after.
func waitGoroutines(n int) {
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > n && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkClientTimestampError compares the time the client stamps on each
// chunk (Response.ChunkTimes) with the time the server wrote it (the
// simulator's ground truth, Truth.Request(Response.ID).Chunks), at N streams
// and a decode step of step (fast profile, speed 1): 10 ms steps are 100
// tokens/s a stream, 50 ms steps 20. Client and server run in this process
// and read the same clock; the server stamps a chunk after its write to the
// connection returns, so a difference can be slightly negative.
//
// Every stream is one request of 4 s of tokens, all sent at once. Chunks
// written before every stream had its first chunk, plus 100 ms, are left out:
// that is the connection storm of the start, not streaming. Client chunks
// and server chunks are matched by index: every chunk the server records is
// one SSE event and the client stamps every event that carries tokens, so
// the two lists line up one to one even when the server merges the tokens of
// lagging steps into one chunk (tokens/chunk above 1); the benchmark checks
// that the chunk and token counts agree. It reports quantiles of client −
// server in microseconds, and cpu-cores, the CPUs the process (client and
// server) kept busy: at GOMAXPROCS the machine was saturated, and the
// difference is mostly time spent waiting for a CPU. transport= compares
// net/http's transport with StreamTransport, which on Linux stamps chunks
// with the kernel's receive time.
//
// sim=process runs the simulator as a process of its own (with -truth-bytes,
// its truth read from /debug/truth), at 100 and 1,000 streams of 10 ms
// steps: cpu-cores is then the client's alone and server-cores the
// simulator's. Started under taskset (taskset -c 1 go test …), the benchmark
// runs the simulator on the CPUs it leaves, so that client and server each
// have their own, as on a real deployment.
//
//	go test -run '^$' -bench 'ClientTimestampError' -benchtime 1x -count 3 ./loadgen
//	taskset -c 1 go test -run '^$' -bench 'ClientTimestampError/sim=process' -benchtime 1x -count 3 ./loadgen
func BenchmarkClientTimestampError(b *testing.B) {
	for _, tc := range []struct {
		n    int
		step time.Duration
	}{{10, 10 * time.Millisecond}, {100, 10 * time.Millisecond}, {benchStreams, 10 * time.Millisecond}, {benchStreams, 50 * time.Millisecond}} {
		for _, tr := range benchTransports {
			if tr.name == "http-4k" {
				continue
			}
			b.Run(fmt.Sprintf("streams=%d/step=%v/transport=%s", tc.n, tc.step, tr.name), func(b *testing.B) {
				p := loadgentest.FastProfile()
				p.DecodeBase = []loadgentest.BatchCost{{Batch: 1, Seconds: tc.step.Seconds()}}
				p.TruthBytes = 256 << 20 // every chunk of every request: 16 B each
				srv := loadgentest.NewServer(p)
				defer srv.Close()
				truth := func(_ context.Context, id string) (loadgentest.RequestTruth, error) {
					t, ok := srv.Truth().Request(id)
					if !ok {
						return t, fmt.Errorf("no ground truth for id %q", id)
					}
					return t, nil
				}
				benchTimestampError(b, srv.URL, tc.n, tc.step, tr.new, truth, nil)
			})
		}
	}
	b.Run("sim=process", func(b *testing.B) {
		sim := startSimProcess(b, 1, "-truth-bytes", strconv.Itoa(256<<20))
		for _, n := range []int{100, benchStreams} {
			for _, tr := range benchTransports {
				if tr.name == "http-4k" {
					continue
				}
				b.Run(fmt.Sprintf("streams=%d/step=10ms/transport=%s", n, tr.name), func(b *testing.B) {
					benchTimestampError(b, sim.URL, n, 10*time.Millisecond, tr.new, sim.truth, sim.cpu)
				})
				if tr.name == "stream-poll" { // and without its gather
					b.Run(fmt.Sprintf("streams=%d/step=10ms/transport=%s-nogather", n, tr.name), func(b *testing.B) {
						defer loadgen.SetPollGatherForTest(loadgen.SetPollGatherForTest(-1))
						benchTimestampError(b, sim.URL, n, 10*time.Millisecond, tr.new, sim.truth, sim.cpu)
					})
				}
			}
		}
	})
}

// benchTimestampError runs n streams of one request of 4 s of step-apart
// tokens against baseURL, whose server's record of each request truth
// returns, and reports the error of the client's chunk times against it.
// serverCPU, when the server is another process, reads its CPU time.
func benchTimestampError(b *testing.B, baseURL string, n int, step time.Duration, newTransport func(conns int) http.RoundTripper,
	truth func(ctx context.Context, id string) (loadgentest.RequestTruth, error), serverCPU func() (time.Duration, bool)) {
	hc := &http.Client{Transport: newTransport(n)}
	defer hc.CloseIdleConnections()
	c := &loadgen.Client{BaseURL: baseURL + "/v1", HTTPClient: hc}
	req := completion(int(4 * time.Second / step)) // 4 s a request

	var diffs []time.Duration
	var written, chunks int64
	var cpu, wall, server time.Duration
	serverOK := serverCPU != nil
	for b.Loop() {
		var srv0 time.Duration
		if serverOK {
			srv0, serverOK = serverCPU()
		}
		cpu0, start := cpuTime(), time.Now()
		resps := make([]*loadgen.Response, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { resps[i], errs[i] = c.Do(b.Context(), req) })
		}
		wg.Wait()
		cpu += cpuTime() - cpu0
		wall += time.Since(start)
		if serverOK {
			var srv1 time.Duration
			srv1, serverOK = serverCPU()
			server += srv1 - srv0
		}

		truths := make([]loadgentest.RequestTruth, n)
		var from time.Time // when every stream had its first chunk
		for i, r := range resps {
			if errs[i] != nil {
				b.Fatalf("request %d: %v", i, errs[i])
			}
			t, err := truth(b.Context(), r.ID)
			switch {
			case err != nil:
				b.Fatalf("request %d: %v", i, err)
			case t.ChunksDropped > 0 || len(t.Chunks) != len(r.ChunkTimes) || t.OutputTokens != r.Tokens:
				b.Fatalf("request %s: server wrote %d chunks (%d recorded) of %d tokens, client counted %d chunks of %d tokens",
					r.ID, t.ChunkCount, len(t.Chunks), t.OutputTokens, len(r.ChunkTimes), r.Tokens)
			case len(t.Chunks) == 0:
				b.Fatalf("request %s: no chunks", r.ID)
			}
			truths[i] = t
			written += int64(t.OutputTokens)
			chunks += int64(t.ChunkCount)
			if first := t.Chunks[0].Time; first.After(from) {
				from = first
			}
		}
		from = from.Add(100 * time.Millisecond)
		for i, r := range resps {
			for k, ch := range truths[i].Chunks {
				if !ch.Time.Before(from) {
					diffs = append(diffs, r.ChunkTimes[k].Sub(ch.Time))
				}
			}
		}
	}
	if len(diffs) == 0 {
		b.Fatal("no chunks after the start")
	}
	slices.Sort(diffs)
	q := func(f float64) float64 {
		return float64(diffs[int(f*float64(len(diffs)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(q(0.01), "p1-µs")
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(q(0.999), "p99.9-µs")
	b.ReportMetric(float64(written)/float64(chunks), "tokens/chunk")
	b.ReportMetric(float64(len(diffs))/float64(b.N), "chunks")
	b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cpu-cores")
	if serverOK {
		b.ReportMetric(server.Seconds()/wall.Seconds(), "server-cores")
	}
}

// BenchmarkClientSyscalls counts the system calls the client makes per
// token, and the CPU it spends per token, at 64, 256 and 1,000 streams of
// 100 tokens/s (the simulator in its own process, fast profile, speed 1, a
// closed loop of long requests; 1 s of warm-up, a 3 s window), on
// StreamTransport reading each body on its request's goroutine (stream) and
// on its pollers (stream-poll), side by side; gather=auto is the pollers'
// own gather (see StreamTransport.Poll), gather=off has them read at once.
// The system calls are those of every thread of the benchmark process in
// the window, counted by `perf stat -e raw_syscalls:sys_enter -p` (it
// skips without perf): syscalls/token in all, and recvmsg, epoll
// (epoll_wait and epoll_pwait), futex and nanosleep a token. cpu-µs/token
// is the client's user + system CPU per token (getrusage, so the whole
// process, in the window), sys-µs/token the system part of it. With
// LLMLOAD_PERF_ALL=1 and -v, it also logs the count of every kind of
// system call (those above 0.001 a token).
//
//	go test -run '^$' -bench 'ClientSyscalls' -benchtime 1x -count 3 ./loadgen
func BenchmarkClientSyscalls(b *testing.B) {
	if _, err := exec.LookPath("perf"); err != nil {
		b.Skipf("no perf to count system calls with: %v", err)
	}
	sim := startSimProcess(b, 1)
	for _, n := range []int{64, 256, benchStreams} {
		b.Run(fmt.Sprintf("streams=%d/transport=stream", n), func(b *testing.B) {
			benchSyscalls(b, sim.URL+"/v1", n, benchTransports[2].new)
		})
		for _, gather := range []struct {
			name string
			d    time.Duration
		}{{"auto", 0}, {"off", -1}} {
			b.Run(fmt.Sprintf("streams=%d/transport=stream-poll/gather=%s", n, gather.name), func(b *testing.B) {
				defer loadgen.SetPollGatherForTest(loadgen.SetPollGatherForTest(gather.d))
				benchSyscalls(b, sim.URL+"/v1", n, newPollTransport)
			})
		}
	}
}

// syscallEvents are the events benchSyscalls counts, the total first.
var syscallEvents = []string{
	"raw_syscalls:sys_enter", "syscalls:sys_enter_recvmsg", "syscalls:sys_enter_epoll_wait",
	"syscalls:sys_enter_epoll_pwait", "syscalls:sys_enter_futex", "syscalls:sys_enter_nanosleep",
}

// perfCount counts syscallEvents in this process until stop is called.
type perfCount struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

func startPerfCount() (*perfCount, error) {
	pc := &perfCount{}
	events := strings.Join(syscallEvents, ",")
	if os.Getenv("LLMLOAD_PERF_ALL") != "" {
		events += ",syscalls:sys_enter_*"
	}
	pc.cmd = exec.Command("perf", "stat", "-x", ",", "-e", events, "-p", strconv.Itoa(os.Getpid()))
	pc.cmd.Stderr = &pc.out
	if err := pc.cmd.Start(); err != nil {
		return nil, err
	}
	return pc, nil
}

// stop ends the count and returns it, by event.
func (pc *perfCount) stop() (map[string]float64, error) {
	pc.cmd.Process.Signal(os.Interrupt)
	pc.cmd.Wait()
	counts := map[string]float64{}
	for line := range strings.Lines(pc.out.String()) {
		f := strings.Split(strings.TrimSpace(line), ",")
		if len(f) < 3 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			counts[f[2]] = v
		}
	}
	if _, ok := counts[syscallEvents[0]]; !ok {
		return nil, fmt.Errorf("perf counted nothing: %s", pc.out.String())
	}
	return counts, nil
}

func benchSyscalls(b *testing.B, baseURL string, n int, newTransport func(int) http.RoundTripper) {
	hc := &http.Client{Transport: newTransport(n)}
	defer hc.CloseIdleConnections()
	c := &loadgen.Client{BaseURL: baseURL, HTTPClient: hc}
	req := completion(benchMaxTokens)
	var (
		tokens      int
		window, cpu time.Duration
		counts      = map[string]float64{}
		lagP99      time.Duration
		sysT        time.Duration
	)
	for b.Loop() {
		m := newMeter(nil)
		var (
			pc      *perfCount
			perfErr error
			counted = make(chan map[string]float64, 1)
		)
		opened := false
		g := &loadgen.Generator{
			Client: c, Source: loadgen.Repeat(req), Load: loadgen.Closed{Streams: n},
			Warmup: time.Second, Duration: 3 * time.Second,
			OnWindow: func(w metrics.Window) {
				opened = true
				pc, perfErr = startPerfCount()
				m.open(w)
				time.AfterFunc(time.Until(w.End), func() {
					if pc == nil {
						counted <- nil
						return
					}
					got, err := pc.stop()
					if err != nil {
						perfErr = err
					}
					counted <- got
				})
			},
		}
		run, err := g.Run(b.Context())
		if err != nil {
			b.Fatalf("run: %v (stopped: %s)", err, run.Stopped)
		}
		if !m.wait(opened) {
			b.Fatal("the window never opened")
		}
		got := <-counted
		if perfErr != nil {
			b.Skipf("cannot count system calls: %v", perfErr)
		}
		s := run.Summary
		if s.Failed > 0 || run.Launched != n {
			b.Fatalf("%d requests failed (%v), %d launched; want none failed, %d launched", s.Failed, s.Errors, run.Launched, n)
		}
		for k, v := range got {
			counts[k] += v
		}
		tokens += s.OutputTokens
		window += s.Window.Duration()
		cpu += m.cpu[1] - m.cpu[0]
		sysT += m.sys[1] - m.sys[0]
		lagP99 = max(lagP99, run.Health.Lag.P99)
	}
	per := func(event string) float64 { return counts[event] / float64(tokens) }
	if os.Getenv("LLMLOAD_PERF_ALL") != "" {
		for k, v := range counts {
			if v/float64(tokens) >= 0.001 {
				b.Logf("%-40s %.4f/token", k, v/float64(tokens))
			}
		}
	}
	b.ReportMetric(float64(tokens)/window.Seconds(), "tokens/s")
	b.ReportMetric(per("raw_syscalls:sys_enter"), "syscalls/token")
	b.ReportMetric(per("syscalls:sys_enter_recvmsg"), "recvmsg/token")
	b.ReportMetric(per("syscalls:sys_enter_epoll_wait")+per("syscalls:sys_enter_epoll_pwait"), "epoll/token")
	b.ReportMetric(per("syscalls:sys_enter_futex"), "futex/token")
	b.ReportMetric(per("syscalls:sys_enter_nanosleep"), "nanosleep/token")
	b.ReportMetric(float64(cpu.Microseconds())/float64(tokens), "cpu-µs/token")
	b.ReportMetric(float64(sysT.Microseconds())/float64(tokens), "sys-µs/token")
	b.ReportMetric(cpu.Seconds()/window.Seconds(), "client-cores")
	b.ReportMetric(float64(lagP99.Microseconds())/1000, "lag-p99-ms")
}
