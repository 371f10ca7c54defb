package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/metrics"
)

// pollTokenEvent is the test servers' i-th one-word chunk.
func pollTokenEvent(i int) string {
	return fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w%d \"}}]}\n\n", i)
}

// pollFinishEvents end the test servers' streams: the finish and [DONE].
const pollFinishEvents = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"

// pollTestServer streams n one-word chunks, gap apart, then the finish and
// [DONE]; with stall set it sends one chunk and then nothing. It counts its
// connections.
func pollTestServer(t *testing.T, n int, gap time.Duration, stall bool) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for i := range n {
			io.WriteString(w, pollTokenEvent(i))
			f.Flush()
			if stall {
				<-r.Context().Done()
				return
			}
			time.Sleep(gap)
		}
		io.WriteString(w, pollFinishEvents)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func pollClient(url string) *Client {
	return &Client{BaseURL: url + "/v1", HTTPClient: &http.Client{Transport: &StreamTransport{Poll: true}}}
}

// TestPollerReadsTheStream: with Poll, a stream is read on a poller (it is
// registered while it streams, and the poller lets it go at its end), its
// tokens and text are all there, each chunk has its own time, and its
// connection is reused, as a net.Conn again, by the next request.
func TestPollerReadsTheStream(t *testing.T) {
	srv, conns := pollTestServer(t, 20, 5*time.Millisecond, false)
	c := pollClient(srv.URL)
	defer c.CloseIdleConnections()
	for round := range 2 {
		seen, stop := make(chan int64, 1), make(chan struct{})
		go func() { // the most streams on the pollers while the request runs
			most := int64(0)
			for {
				most = max(most, pollStreams.Load())
				select {
				case <-stop:
					seen <- most
					return
				case <-time.After(time.Millisecond):
				}
			}
		}()
		resp, err := c.Do(t.Context(), &Request{Model: "m", Prompt: "p", MaxTokens: 20})
		close(stop)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if got := <-seen; got != 1 {
			t.Errorf("round %d: at most %d streams on the pollers while it streamed, want 1", round, got)
		}
		if resp.Tokens != 20 || len(resp.ChunkTimes) != 20 || resp.Text[:6] != "w0 w1 " || resp.FinishReason != "stop" {
			t.Errorf("round %d: %d tokens, %d chunk times, text %q, finish %q", round, resp.Tokens, len(resp.ChunkTimes), resp.Text, resp.FinishReason)
		}
		// A client kept from its CPU for longer than the server's 5 ms reads
		// two chunks at once, and both take the arrival of the later one; a
		// loaded machine may do that a few times, but most chunks have times
		// of their own.
		merged := 0
		for i := 1; i < len(resp.ChunkTimes); i++ {
			if d := resp.ChunkTimes[i].Sub(resp.ChunkTimes[i-1]); d < 2*time.Millisecond {
				merged++
			}
		}
		if merged > len(resp.ChunkTimes)/4 {
			t.Errorf("round %d: %d of %d chunks less than 2 ms after the one before, want about 5 ms", round, merged, len(resp.ChunkTimes)-1)
		}
	}
	if n := pollStreams.Load(); n != 0 {
		t.Errorf("%d streams left on the pollers", n)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for two requests in turn, want 1", n)
	}
}

// TestPollerNeverReadsAnEmptySocket: the poller reads a socket only when
// epoll says it is readable, once a wake, so no read finds it empty, with
// one stream or hundreds.
func TestPollerNeverReadsAnEmptySocket(t *testing.T) {
	before := pollEmptyReads.Load()
	TestPollerReadsTheStream(t)
	TestPollerManyStreams(t)
	if n := pollEmptyReads.Load() - before; n != 0 {
		t.Errorf("%d reads found their socket empty", n)
	}
}

// TestPollerCancellation: a stream read on a poller ends within a second
// of its context, and of its stall deadline, with what it had measured.
func TestPollerCancellation(t *testing.T) {
	srv, _ := pollTestServer(t, 8, 0, true)
	c := pollClient(srv.URL)
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(200*time.Millisecond, cancel)
	var tl metrics.Timeline
	start := time.Now()
	err := c.Measure(ctx, &Request{Model: "m", Prompt: "p", MaxTokens: 8}, &tl, nil)
	if d := time.Since(start); d > 1200*time.Millisecond {
		t.Errorf("cancelled after 200 ms, returned after %v", d)
	}
	if KindOf(err) != metrics.KindCanceled || tl.Tokens != 1 {
		t.Errorf("cancelled: %v (kind %s), %d tokens; want canceled, 1 token", err, KindOf(err), tl.Tokens)
	}

	c = pollClient(srv.URL)
	c.StallTimeout = 300 * time.Millisecond
	defer c.CloseIdleConnections()
	start = time.Now()
	tl = metrics.Timeline{}
	err = c.Measure(t.Context(), &Request{Model: "m", Prompt: "p", MaxTokens: 8}, &tl, nil)
	if d := time.Since(start); d > 1300*time.Millisecond {
		t.Errorf("a 300 ms stall deadline ended the request after %v", d)
	}
	if !errors.Is(err, errStall) || tl.Tokens != 1 {
		t.Errorf("stalled: %v, %d tokens; want errStall, 1 token", err, tl.Tokens)
	}
	if n := pollStreams.Load(); n != 0 {
		t.Errorf("%d streams left on the pollers", n)
	}
}

// TestPollerManyStreams: 200 streams at once, on the pollers, all complete.
func TestPollerManyStreams(t *testing.T) {
	srv, _ := pollTestServer(t, 30, 3*time.Millisecond, false)
	c := &Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: &StreamTransport{Poll: true, MaxIdleConnsPerHost: 200}}}
	defer c.CloseIdleConnections()
	errs := make(chan error, 200)
	for range 200 {
		go func() {
			var tl metrics.Timeline
			err := c.Measure(t.Context(), &Request{Model: "m", Prompt: "p", MaxTokens: 30}, &tl, nil)
			if err == nil && tl.Tokens != 30 {
				err = fmt.Errorf("%d tokens, want 30", tl.Tokens)
			}
			errs <- err
		}()
	}
	for range 200 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// endingServer answers each request with an event stream of three tokens
// on a connection it then ends: the headers first, then, once the client
// waits on its poller, the whole body together with the connection's end
// (with reset, an RST; else a FIN in the same segment as the bytes, by
// TCP_CORK), so both are queued before the poller wakes.
func endingServer(t *testing.T, framing string, reset bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	body := ""
	for i := range 3 {
		body += pollTokenEvent(i)
	}
	if !reset {
		body += pollFinishEvents
	}
	header := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	switch framing {
	case "close":
		header += "Connection: close\r\n\r\n"
	case "chunked":
		header += "Transfer-Encoding: chunked\r\n\r\n"
		body = fmt.Sprintf("%x\r\n%s\r\n", len(body), body)
		if !reset {
			body += "0\r\n\r\n"
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c *net.TCPConn) {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				registered := pollStreams.Load()
				if _, err := io.WriteString(c, header); err != nil {
					return
				}
				// The client reads the headers and registers its stream.
				for deadline := time.Now().Add(5 * time.Second); pollStreams.Load() <= registered && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
				if reset {
					io.WriteString(c, body)
					c.SetLinger(0) // Close sends an RST
					return
				}
				rc, err := c.SyscallConn()
				if err != nil {
					return
				}
				rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, 1) })
				io.WriteString(c, body)
				c.CloseWrite() // the FIN joins the corked bytes
			}(c.(*net.TCPConn))
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestPollerReadsToTheEnd: a stream whose last bytes come together with the
// connection's end (a FIN, or a reset) ends at once on a poller, not at its
// stall deadline: the end keeps the socket readable without new bytes, and
// the poller reads on to it.
func TestPollerReadsToTheEnd(t *testing.T) {
	before := pollEmptyReads.Load()
	for _, tc := range []struct {
		framing string
		reset   bool
		kind    metrics.ErrorKind
	}{
		{"close", false, metrics.KindNone},
		{"chunked", false, metrics.KindNone},
		{"close", true, metrics.KindTruncated},
		{"chunked", true, metrics.KindTruncated},
	} {
		c := pollClient(endingServer(t, tc.framing, tc.reset))
		c.StallTimeout = 5 * time.Second
		for round := range 5 {
			var tl metrics.Timeline
			start := time.Now()
			err := c.Measure(t.Context(), &Request{Model: "m", Prompt: "p", MaxTokens: 3}, &tl, nil)
			d := time.Since(start)
			if KindOf(err) != tc.kind || tl.Tokens != 3 {
				t.Errorf("%s body, reset %v, round %d: %v (kind %q), %d tokens; want kind %q, 3 tokens",
					tc.framing, tc.reset, round, err, KindOf(err), tl.Tokens, tc.kind)
			}
			if d > 2*time.Second {
				t.Errorf("%s body, reset %v, round %d: took %v, want about 50 ms", tc.framing, tc.reset, round, d)
			}
		}
		c.CloseIdleConnections()
	}
	if n := pollEmptyReads.Load() - before; n != 0 {
		t.Errorf("%d reads found their socket empty", n)
	}
}

// TestCmsgInq: with TCP_INQ on, a recvmsg that leaves bytes in the socket
// says how many, and one that drains it says none: what lets a poller read
// a socket on in the same turn only when it holds more.
func TestCmsgInq(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server := <-accepted
	if server == nil {
		t.Fatal("no connection accepted")
	}
	defer server.Close()
	raw, err := client.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_INQ, 1) })
	if serr != nil {
		t.Skipf("no TCP_INQ on this kernel: %v", serr)
	}
	if _, err := server.Write(make([]byte, 3000)); err != nil {
		t.Fatal(err)
	}
	buf, oob := make([]byte, 1000), make([]byte, 64)
	for _, want := range []int{2000, 1000, 0} {
		var n, oobn int
		var rerr error
		deadline := time.Now().Add(5 * time.Second)
		for n == 0 && time.Now().Before(deadline) {
			raw.Control(func(fd uintptr) { n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), buf, oob, syscall.MSG_DONTWAIT) })
			if errors.Is(rerr, syscall.EAGAIN) {
				n, rerr = 0, nil
				time.Sleep(time.Millisecond)
			}
		}
		if rerr != nil || n != 1000 {
			t.Fatalf("read %d bytes (%v), want 1000", n, rerr)
		}
		left, ok := cmsgInq(oob[:oobn])
		if !ok || left != want {
			t.Errorf("after a read of 1000 bytes: TCP_CM_INQ %d (found %v), want %d", left, ok, want)
		}
	}
}

// TestPollerGatherFollowsTheGaps: the gather is a quarter of the smallest
// time between two chunks with tokens of a stream in the last second or
// two, at most pollGatherMax, and none when that would be under
// pollGatherMin or no such time has been seen.
func TestPollerGatherFollowsTheGaps(t *testing.T) {
	defer setPollGather(setPollGather(0))
	p := &poller{gapSince: time.Now()}
	if g := p.gather(); g != 0 {
		t.Errorf("no gap seen: gather %v, want 0", g)
	}
	for _, tc := range []struct {
		gap, want time.Duration
	}{
		{20 * time.Millisecond, pollGatherMax},
		{2 * time.Millisecond, 500 * time.Microsecond},
		{10 * time.Millisecond, 500 * time.Microsecond}, // the smallest counts
		{300 * time.Microsecond, 0},                     // 75 µs: not worth a wait
	} {
		p.noteGap(tc.gap)
		if g := p.gather(); g != tc.want {
			t.Errorf("after a gap of %v: gather %v, want %v", tc.gap, g, tc.want)
		}
	}
	p.gapSince = time.Now().Add(-1100 * time.Millisecond) // a second on: the small gap is the second before's
	p.noteGap(8 * time.Millisecond)
	if g := p.gather(); g != 0 {
		t.Errorf("a second after a gap of 300 µs: gather %v, want 0", g)
	}
	p.gapSince = time.Now().Add(-1100 * time.Millisecond)
	p.noteGap(8 * time.Millisecond)
	if g := p.gather(); g != pollGatherMax {
		t.Errorf("two seconds after it, gaps of 8 ms: gather %v, want %v", g, pollGatherMax)
	}
	setPollGather(-1)
	if g := p.gather(); g != 0 {
		t.Errorf("gather off: %v", g)
	}
	setPollGather(3 * time.Millisecond)
	if g := p.gather(); g != 3*time.Millisecond {
		t.Errorf("gather set to 3 ms: %v", g)
	}
}

// batchServer streams tokens to every request in steps, gap apart, as a
// batching engine does: at each step every handler writes its token at
// once. Each answer has n tokens; the step clock starts with the first
// request.
func batchServer(t *testing.T, n int, gap time.Duration) string {
	t.Helper()
	var (
		once  sync.Once
		start time.Time
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { start = time.Now() })
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		f.Flush()
		step := time.Since(start)/gap + 1
		for i := range n {
			time.Sleep(time.Until(start.Add(time.Duration(step) * gap)))
			step++
			io.WriteString(w, pollTokenEvent(i))
			f.Flush()
		}
		io.WriteString(w, pollFinishEvents)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestPollerGathersABatch: 64 streams whose tokens come in steps, as from
// a batching server: a poller woken by the first sockets of a step waits
// for the rest and reads them together, many sockets a look, where one
// that reads at once wakes for a few at a time; every token keeps its
// own time.
func TestPollerGathersABatch(t *testing.T) {
	longtest.Skip(t)
	const streams, tokens, gap = 64, 60, 20 * time.Millisecond
	url := batchServer(t, tokens, gap)
	c := &Client{BaseURL: url + "/v1", HTTPClient: &http.Client{Transport: &StreamTransport{Poll: true, MaxIdleConnsPerHost: streams}}}
	defer c.CloseIdleConnections()
	looks, ready := pollLooks.Load(), pollReady.Load()
	var merged atomic.Int64
	errs := make(chan error, streams)
	for range streams {
		go func() {
			var (
				tl   metrics.Timeline
				last time.Time
			)
			obs := observerFunc(func(tl *metrics.Timeline, at time.Time, n int) {
				if !last.IsZero() && at.Sub(last) < gap/4 {
					merged.Add(1)
				}
				last = at
				tl.Observe(at, n)
			})
			err := c.Measure(t.Context(), &Request{Model: "m", Prompt: "p", MaxTokens: tokens}, &tl, obs)
			if err == nil && tl.Tokens != tokens {
				err = fmt.Errorf("%d tokens, want %d", tl.Tokens, tokens)
			}
			errs <- err
		}()
	}
	for range streams {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	looks, ready = pollLooks.Load()-looks, pollReady.Load()-ready
	perLook := float64(ready) / float64(max(looks, 1))
	t.Logf("%d looks, %.1f sockets a look, %d of %d chunks within %v of the one before", looks, perLook, merged.Load(), streams*(tokens-1), gap/4)
	if perLook < streams/2 { // 17-21 a look reading at once on a quiet machine
		t.Errorf("%.1f sockets a look, want most of a step's %d together", perLook, streams)
	}
	if m := merged.Load(); m > streams*tokens/20 {
		t.Errorf("%d of %d chunks within %v of the one before: read together", m, streams*(tokens-1), gap/4)
	}
}

// observerFunc is an Observer of one function.
type observerFunc func(tl *metrics.Timeline, t time.Time, tokens int)

func (f observerFunc) Observe(tl *metrics.Timeline, t time.Time, tokens int) { f(tl, t, tokens) }

// TestPollersBelongToTheirTransport: each StreamTransport reads its bodies
// on pollers of its own, and CloseIdleConnections lets them go: their
// epoll instances are closed, their goroutines have ended (goleak checks
// the package), and the next request makes new ones.
func TestPollersBelongToTheirTransport(t *testing.T) {
	srv, _ := pollTestServer(t, 3, time.Millisecond, false)
	a, b := pollClient(srv.URL), pollClient(srv.URL)
	ta := a.HTTPClient.Transport.(*StreamTransport)
	tb := b.HTTPClient.Transport.(*StreamTransport)
	for _, c := range []*Client{a, b} {
		if _, err := c.Do(t.Context(), &Request{Model: "m", Prompt: "p", MaxTokens: 3}); err != nil {
			t.Fatal(err)
		}
	}
	ga, gb := ta.polls.(*pollGroup), tb.polls.(*pollGroup)
	if ga == gb || len(ga.pollers) == 0 || len(gb.pollers) == 0 {
		t.Fatalf("transports share pollers or have none: %p %p", ga, gb)
	}
	held := append([]*poller(nil), ga.pollers...)
	a.CloseIdleConnections()
	for i, p := range held {
		let := func() bool { // a goroutine ends at its next wake, and closes its files
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.epfd == nil && !p.running
		}
		for deadline := time.Now().Add(5 * time.Second); !let() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if !let() {
			t.Errorf("poller %d still open or running after CloseIdleConnections", i)
		}
	}
	if len(gb.pollers) == 0 {
		t.Error("closing one transport let go of the other's pollers")
	}
	if _, err := a.Do(t.Context(), &Request{Model: "m", Prompt: "p", MaxTokens: 3}); err != nil {
		t.Fatal(err)
	}
	if g, _ := ta.polls.(*pollGroup); g == nil || g == ga || len(g.pollers) == 0 {
		t.Error("the next request did not make new pollers")
	}
	a.CloseIdleConnections()
	b.CloseIdleConnections()
}
