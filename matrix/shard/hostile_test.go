package shard

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/logbuffer"
	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/internal/fleet"
)

// hostileToken is the fleet's secret in the hostile tests.
const hostileToken = "the-hostile-tests-fleet-secret"

// quickSpec is a short matrix of one context at the given concurrency.
func quickSpec(url string, concurrency ...int) matrix.Spec {
	return matrix.Spec{
		URL: url, Model: loadgentest.DefaultModel, API: loadgen.Completions,
		Contexts: []int{0}, Concurrency: concurrency, Prefill: []int{},
		Duration: time.Second, MaxTokens: 30000,
		WarmupRule: &matrix.WarmupRule{Min: 200 * time.Millisecond, Flow: 300 * time.Millisecond,
			Timeout: 15 * time.Second},
	}
}

// serveLeader serves a leader with Serve on a loopback port and returns
// its URL; the test closes it.
func serveLeader(t *testing.T, l *Leader) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = l.Serve(ln)
	}()
	t.Cleanup(func() {
		l.Close(context.Background())
		<-done
	})
	return "http://" + ln.Addr().String()
}

// follow runs a follower of url until the test ends.
func follow(t *testing.T, url, name string, hc *http.Client, log io.Writer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f := &Follower{Token: hostileToken, Leader: url, Name: name, HTTPClient: hc, Log: log}
		_ = f.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if hc != nil {
			hc.CloseIdleConnections()
		}
	})
}

// tamperer is a rogue follower's transport: it holds the fleet's secret,
// and rewrites its report of each cell before signing it again.
type tamperer struct {
	base   http.RoundTripper
	tamper func(seq int, in *reportRequest)
}

func (tp *tamperer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path != pathReport {
		return tp.base.RoundTrip(req)
	}
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	var in reportRequest
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	tp.tamper(in.Seq, &in)
	if b, err = json.Marshal(in); err != nil {
		return nil, err
	}
	out := req.Clone(req.Context())
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	signRequest(out, hostileToken, req.Header.Get(headerRun), b)
	return tp.base.RoundTrip(out)
}

// setPath sets a field of a report's part, by its JSON path.
func setPath(t *testing.T, part json.RawMessage, value any, path ...string) json.RawMessage {
	var m map[string]any
	require.NoError(t, json.Unmarshal(part, &m))
	at := m
	for _, k := range path[:len(path)-1] {
		at = at[k].(map[string]any)
	}
	at[path[len(path)-1]] = value
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

// TestRogueFollowerWithTheSecret: a follower that holds the fleet's
// secret and lies in its reports — 10^12 tokens, a negative count, an
// average of 1e308 streams, a clock 10^15 ns off, a histogram of an
// extreme range, a key given twice, a window that misses the leader's —
// is dropped from each cell it lied about, with the reason in the cell's
// notes; the run, the leader's part of those cells and the cell it
// reported honestly are intact.
func TestRogueFollowerWithTheSecret(t *testing.T) {
	longtest.Skip(t)
	extreme := hdrhistogram.New(1, 1<<62, 5)
	require.NoError(t, extreme.RecordValue(5000))
	extremeV2, err := extreme.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	require.NoError(t, err)
	lies := map[int]struct {
		tamper func(in *reportRequest)
		reason string
	}{
		1: {func(in *reportRequest) {
			in.Part = setPath(t, in.Part, 1_000_000_000_000, "recording", "summary", "output_tokens")
		}, "output_tokens is 1000000000000, more than 2 streams could count"},
		2: {func(in *reportRequest) { in.Part = setPath(t, in.Part, -5, "recording", "summary", "completed") }, "completed is -5, below 0"},
		3: {func(in *reportRequest) { in.Part = setPath(t, in.Part, 1e308, "recording", "summary", "avg_active") }, "avg_active is 1e+308"},
		4: {func(in *reportRequest) { in.Clock.Offset = 1e15 }, "beyond the 10m0s a shard may be off"},
		5: {func(in *reportRequest) {
			in.Part = setPath(t, in.Part, map[string]any{"v2": string(extremeV2)}, "recording", "histograms", "ttft")
		}, "geometry (1 to 4611686018427387904 at 5 digits)"},
		6: {func(in *reportRequest) {
			in.Part = json.RawMessage(strings.Replace(string(in.Part), `"summary":{`, `"summary":{"requests":1,`, 1))
		}, `the key "requests" is given twice`},
		// A clock that moved 5 s after the exchange (within the bound a
		// shard may be off): its window falls after the leader's 1 s one.
		7: {func(in *reportRequest) { in.Clock.Offset = -5 * time.Second }, "overlapped the others'"},
	}
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	spec := quickSpec(srv.URL+"/v1", 4, 5, 6, 7, 8, 9, 10, 11)
	log := &logbuffer.Buffer{}
	leader := &Leader{Token: hostileToken, Spec: spec, Followers: 1, JoinTimeout: 20 * time.Second, Log: log}
	url := serveLeader(t, leader)
	tp := &tamperer{base: http.DefaultTransport.(*http.Transport).Clone(), tamper: func(seq int, in *reportRequest) {
		if l, ok := lies[seq]; ok {
			l.tamper(in)
		}
	}}
	follow(t, url, "rogue", &http.Client{Transport: tp}, log)
	res, err := (&matrix.Runner{Spec: spec, Fleet: leader, Client: &loadgen.Client{HTTPClient: srv.Client()}}).Run(t.Context())
	require.NoError(t, err, "the run goes on: %s", log)
	require.Len(t, res.Cells, 8)
	for i, c := range res.Cells {
		seq := i + 1
		require.NotNil(t, c.Measurement, "cell %d (%d streams) is measured: %s %s\n%s", seq, c.Concurrency, c.Status, c.Reason, log)
		m := c.Measurement
		require.Len(t, m.Shards, 2)
		lie, lied := lies[seq]
		if !lied {
			assert.False(t, m.Partial, "the honest cell is whole: %v", m.Notes)
			assert.Empty(t, m.Shards[1].Lost)
			assert.Equal(t, m.Shards[0].OutputTokens+m.Shards[1].OutputTokens, m.OutputTokens)
			continue
		}
		assert.True(t, m.Partial, "cell %d", seq)
		assert.Contains(t, m.Shards[1].Lost, lie.reason, "cell %d", seq)
		assert.Contains(t, strings.Join(m.Notes, "\n"), "shard 1 (rogue) was lost", "cell %d", seq)
		assert.Empty(t, m.Shards[0].Lost, "the leader's part stays")
		assert.Equal(t, m.Shards[0].OutputTokens, m.OutputTokens, "the cell holds the leader's tokens alone")
		assert.Positive(t, m.OutputTokens)
		assert.Less(t, m.OutputTokensPerSec, 1e6, "no lie reaches the figures")
	}
}

// heapPeak samples the heap in use every 10 ms until stop, and returns
// the highest reading.
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var peak uint64
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// zeros is an endless body that counts what was read of it.
type zeros struct {
	left int64
	read *atomic.Int64
}

func (z *zeros) Read(p []byte) (int, error) {
	if z.left <= 0 {
		return 0, io.EOF
	}
	n := int64(len(p))
	n = min(n, z.left)
	clear(p[:n])
	z.left -= n
	z.read.Add(n)
	return int(n), nil
}

// TestLeaderUnderHugeBodies: six concurrent 300 MB bodies at the leader
// (three unsigned, three signed with the secret and lying about their
// body) cost it no more than the bound of one report each; the unsigned
// ones are refused before their body is read; a real follower joins
// meanwhile, and the cell is then measured on both shards.
func TestLeaderUnderHugeBodies(t *testing.T) {
	longtest.Skip(t)
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	spec := quickSpec(srv.URL+"/v1", 4)
	log := &logbuffer.Buffer{}
	leader := &Leader{Token: hostileToken, Spec: spec, Followers: 1, JoinTimeout: 20 * time.Second, Log: log}
	url := serveLeader(t, leader)
	leader.init() // its run id, read below, set before it is read
	run := leader.run

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	stop := make(chan struct{})
	peak := heapPeak(stop)
	const body = 300 << 20
	var wg sync.WaitGroup
	codes := make([]int, 6)
	sent := make([]atomic.Int64, 6)
	for i := range 6 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, url+pathReport, io.NopCloser(&zeros{left: body, read: &sent[i]}))
			req.ContentLength = -1 // chunked: the leader cannot refuse it by its length
			if i%2 == 1 {
				signRequest(req, hostileToken, run, []byte("a body other than the one sent"))
			}
			hc := &http.Client{Transport: &http.Transport{}}
			defer hc.CloseIdleConnections()
			resp, err := hc.Do(req)
			if err != nil {
				codes[i] = -1 // the leader closed the connection on the body
				return
			}
			codes[i] = resp.StatusCode
			resp.Body.Close()
		})
	}
	follow(t, url, "real", nil, log)
	// The cell runs once the bodies are answered: under the race detector
	// their reading has kept the follower from the CPU for over a second,
	// so that its window missed the leader's, which is a lost shard and
	// not what this test is about.
	wg.Wait()
	res, err := (&matrix.Runner{Spec: spec, Fleet: leader, Client: &loadgen.Client{HTTPClient: srv.Client()}}).Run(t.Context())
	close(stop)
	grew := float64(<-peak) - float64(before.HeapInuse)
	require.NoError(t, err)
	t.Logf("leader's heap in use grew at most %.1f MB under six 300 MB bodies; the client sent %v bytes of each; answers %v",
		grew/(1<<20), func() []int64 {
			out := make([]int64, 6)
			for i := range sent {
				out[i] = sent[i].Load()
			}
			return out
		}(), codes)
	for i := range 6 {
		if i%2 == 0 {
			assert.Contains(t, []int{http.StatusUnauthorized, -1}, codes[i], "an unsigned body is refused")
			assert.Less(t, sent[i].Load(), int64(64<<20), "refused before the body was read: what was sent sits in socket buffers")
		} else {
			assert.Contains(t, []int{http.StatusRequestEntityTooLarge, http.StatusBadRequest, -1}, codes[i])
		}
	}
	assert.Less(t, grew, float64(200<<20), "six bodies cost at most their bound each")
	c := res.Cells[0]
	require.NotNil(t, c.Measurement, "%s %s", c.Status, c.Reason)
	assert.False(t, c.Measurement.Partial, "%v", c.Measurement.Notes)
	require.Len(t, c.Measurement.Shards, 2)
	assert.Empty(t, c.Measurement.Shards[1].Lost)
	assert.Contains(t, log.String(), "refused POST /shard/report")
}

// TestUnsignedRequestsRefused: a follower without the secret, or with
// another, cannot join; a request signed for one path does not pass for
// another, nor twice; a join that names no run (an older follower's) is
// refused, saying so.
func TestUnsignedRequestsRefused(t *testing.T) {
	leader := &Leader{Token: hostileToken, Spec: quickSpec("http://127.0.0.1:1/v1", 2)}
	url := serveLeader(t, leader)
	for _, token := range []string{"", "short", "another-fleet's-long-secret"} {
		f := &Follower{Token: token, Leader: url, JoinTimeout: time.Second}
		err := f.Run(t.Context())
		require.Error(t, err)
		if len(token) < MinTokenLen {
			assert.ErrorIs(t, err, errToken)
			continue
		}
		assert.Contains(t, err.Error(), "401")
		assert.Contains(t, err.Error(), "not signed with this fleet's token")
	}
	// A signed join replayed, and a join's signature on a poll.
	var hello helloResponse
	require.NoError(t, post(t.Context(), http.DefaultClient, hostileToken, "", url, pathHello, helloRequest{Version: version}, &hello))
	b, _ := json.Marshal(joinRequest{Version: version, Name: "x"})
	req, _ := http.NewRequest(http.MethodPost, url+pathJoin, bytes.NewReader(b))
	signRequest(req, hostileToken, hello.Run, b)
	again := req.Clone(context.Background())
	again.Body = io.NopCloser(bytes.NewReader(b))
	other := req.Clone(context.Background())
	other.URL.Path = pathPoll
	other.Body = io.NopCloser(bytes.NewReader(b))
	for i, r := range []*http.Request{req, again, other} {
		resp, err := http.DefaultClient.Do(r)
		require.NoError(t, err)
		resp.Body.Close()
		want := []int{http.StatusOK, http.StatusUnauthorized, http.StatusUnauthorized}[i]
		assert.Equal(t, want, resp.StatusCode, "request %d", i)
	}
	err := post(t.Context(), http.DefaultClient, hostileToken, "", url, pathJoin, joinRequest{Version: version, Name: "old"}, nil)
	assert.ErrorContains(t, err, "401")
	assert.ErrorContains(t, err, "names no run of a leader (/shard/join): its follower is older than this leader")
	http.DefaultClient.CloseIdleConnections()
}

// TestRogueLeaderOrders: a follower refuses a leader's orders beyond its
// own bounds — a million streams, an hour-long silence — and leaves.
func TestRogueLeaderOrders(t *testing.T) {
	now := time.Now()
	share := func(edit func(*fleet.Share)) *fleet.Share {
		s := &fleet.Share{Seq: 1, Concurrency: 4, Streams: 2, MaxTokens: 10, Launch: now.Add(time.Second), Duration: time.Second}
		edit(s)
		return s
	}
	for _, c := range []struct {
		sh   *fleet.Share
		want string
	}{
		{share(func(s *fleet.Share) { s.Streams, s.Concurrency = 1_000_000, 1_000_000 }), "1000000 streams"},
		{share(func(s *fleet.Share) { s.WarmupTimeout = 8760 * time.Hour }), "a warm-up timeout of 8760h0m0s"},
		{share(func(s *fleet.Share) { s.Launch = now.Add(48 * time.Hour) }), "a launch at"},
		{share(func(s *fleet.Share) { s.Duration = 0 }), "an empty window"},
	} {
		err := checkShare(c.sh, now)
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
	}
	assert.NoError(t, checkShare(share(func(*fleet.Share) {}), now))
	spec := quickSpec("http://127.0.0.1:8000/v1", 2)
	err := checkJoin(&joinResponse{Index: 1, Spec: spec, Silence: textDuration(8760 * time.Hour)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a silence of 8760h0m0s")
	assert.NoError(t, checkJoin(&joinResponse{Index: 1, Spec: spec, Silence: textDuration(5 * time.Second)}))
}

// slowConnsEnv, when set to a leader's address, makes
// TestSlowConnectionsHelper the attacker of TestLeaderUnderSlowConnections
// in a process of its own (the open-file limit is a process's).
const slowConnsEnv = "LLMLOAD_TEST_SLOW_ATTACK"

// TestSlowConnectionsHelper opens LLMLOAD_TEST_SLOW_CONNS connections
// from 127.0.0.2 to the leader, each sending part of a request's headers,
// says how many it holds, and holds them until its input closes.
func TestSlowConnectionsHelper(t *testing.T) {
	addr := os.Getenv(slowConnsEnv)
	if addr == "" {
		t.Skip("the attacker of TestLeaderUnderSlowConnections")
	}
	n, _ := strconv.Atoi(os.Getenv("LLMLOAD_TEST_SLOW_CONNS"))
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			continue
		}
		conns = append(conns, c)
		_, _ = c.Write([]byte("POST /shard/join HTTP/1.1\r\nHost: leader\r\nX-Slow: "))
	}
	fmt.Printf("holding %d\n", len(conns))
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// TestLeaderUnderSlowConnections: thousands of connections that send part
// of a request's headers and wait, from another host (127.0.0.2), cost the
// leader no more than its bound of connections; a real follower joins and
// the cell is measured on both shards. LLMLOAD_TEST_SLOW_CONNS sets how
// many (2,000 by default; the attacker's open-file limit bounds it).
func TestLeaderUnderSlowConnections(t *testing.T) {
	longtest.Skip(t)
	if testing.Short() {
		t.Skip("starts an attacker process")
	}
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	spec := quickSpec(srv.URL+"/v1", 4)
	log := &logbuffer.Buffer{}
	leader := &Leader{Token: hostileToken, Spec: spec, Followers: 1, JoinTimeout: 60 * time.Second, Log: log}
	url := serveLeader(t, leader)
	n := os.Getenv("LLMLOAD_TEST_SLOW_CONNS")
	if n == "" {
		n = "2000"
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSlowConnectionsHelper$")
	cmd.Env = append(os.Environ(), slowConnsEnv+"="+strings.TrimPrefix(url, "http://"), "LLMLOAD_TEST_SLOW_CONNS="+n)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	held := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "holding ") {
				held <- sc.Text()
			}
		}
		close(held)
	}()
	var line string
	select {
	case line = <-held:
	case <-time.After(3 * time.Minute):
		t.Fatal("the attacker did not open its connections")
	}
	fds := func() int { e, _ := os.ReadDir("/proc/self/fd"); return len(e) }
	during := fds()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	follow(t, url, "real", nil, log)
	res, err := (&matrix.Runner{Spec: spec, Fleet: leader, Client: &loadgen.Client{HTTPClient: srv.Client()}}).Run(t.Context())
	require.NoError(t, err)
	t.Logf("attacker %s connections; the leader's process held %d open files, heap in use %.1f MB", strings.TrimPrefix(line, "holding "), during, float64(ms.HeapInuse)/(1<<20))
	assert.Less(t, during, maxConnsAHost+200, "the attacker's connections beyond its share are closed as they come")
	c := res.Cells[0]
	require.NotNil(t, c.Measurement, "%s %s", c.Status, c.Reason)
	assert.False(t, c.Measurement.Partial, "%v", c.Measurement.Notes)
	require.Len(t, c.Measurement.Shards, 2)
	assert.Empty(t, c.Measurement.Shards[1].Lost)
}

// recorder is an eavesdropper's copy of a follower's requests: it keeps
// each request's path, headers and body as they went.
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	path   string
	header http.Header
	body   []byte
}

func (rc *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, recorded{path: req.URL.Path, header: req.Header.Clone(), body: b})
	rc.mu.Unlock()
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(b))
	return rc.base.RoundTrip(out)
}

func (rc *recorder) CloseIdleConnections() {
	if c, ok := rc.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// last returns the last request recorded to path, and whether there is one.
func (rc *recorder) last(path string) (recorded, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for i := len(rc.reqs) - 1; i >= 0; i-- {
		if rc.reqs[i].path == path {
			return rc.reqs[i], true
		}
	}
	return recorded{}, false
}

// replay sends a recorded request to url as it was, and returns the
// leader's answer: its status and body.
func replay(t *testing.T, url string, r recorded) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+r.path, bytes.NewReader(r.body))
	require.NoError(t, err)
	req.Header = r.header.Clone()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestJoinReplayedToAnotherRun: an eavesdropper that recorded a
// follower's join and poll to one leader, replaying them within their
// time to a later leader of the same token, takes no shard of its run:
// each is refused (401) as signed for another leader's run, and the later
// leader has no follower. Replayed to their own leader, the nonce refuses
// them.
func TestJoinReplayedToAnotherRun(t *testing.T) {
	spec := quickSpec("http://127.0.0.1:1/v1", 2)
	first := &Leader{Token: hostileToken, Spec: spec}
	firstURL := serveLeader(t, first)
	rec := &recorder{base: &http.Transport{}}
	follow(t, firstURL, "honest", &http.Client{Transport: rec}, nil)
	deadline := time.Now().Add(10 * time.Second)
	var join, poll recorded
	for {
		var joined, polled bool
		join, joined = rec.last(pathJoin)
		poll, polled = rec.last(pathPoll)
		if joined && polled {
			break
		}
		require.True(t, time.Now().Before(deadline), "the follower neither joined nor polled")
		time.Sleep(20 * time.Millisecond)
	}

	log := &logbuffer.Buffer{}
	second := &Leader{Token: hostileToken, Spec: spec, Log: log}
	secondURL := serveLeader(t, second)
	for _, r := range []recorded{join, poll} {
		code, body := replay(t, secondURL, r)
		assert.Equal(t, http.StatusUnauthorized, code, "%s replayed to another run: %s", r.path, body)
		assert.Contains(t, body, "signed for another leader's run", r.path)
		assert.Contains(t, body, "recorded and replayed", r.path)
	}
	assert.NotContains(t, log.String(), "joined", "the later leader took no follower")
	assert.Contains(t, log.String(), "refused POST /shard/join")

	code, body := replay(t, firstURL, join)
	assert.Equal(t, http.StatusUnauthorized, code, body)
	assert.Contains(t, body, "its nonce is taken")
}

// TestFollowerOfAnOlderLeader: a leader that does not know /shard/hello
// (an older llmload's, which answers 404) is left at once, saying so.
func TestFollowerOfAnOlderLeader(t *testing.T) {
	older := httptest.NewServer(http.NotFoundHandler())
	defer older.Close()
	start := time.Now()
	err := (&Follower{Token: hostileToken, Leader: older.URL, JoinTimeout: 10 * time.Second}).Run(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not know /shard/hello: it is an older llmload than this follower")
	assert.Less(t, time.Since(start), 5*time.Second, "left at once, not retried")
}
