package loadgen_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/metrics"
)

// fault is one kind of misbehaviour of the simulated server (see
// loadgentest's fault table) and what the client must make of it.
type fault struct {
	name   string
	header string            // the X-Llmload-Fault value
	tokens int               // tokens a faulty request carries: -1 means all of them
	kind   metrics.ErrorKind // KindNone: the request succeeds
}

const faultTokens = 12 // max_tokens of every request in the fault matrix

var faults = []fault{
	{"connection reset mid-stream", "reset-after=3", 3, metrics.KindTruncated},
	{"HTTP 500", "status=500", 0, metrics.KindServerStatus},
	{"HTTP 429 with Retry-After", "rate-limit=1", 0, metrics.KindRateLimited},
	{"malformed chunk JSON", "malformed-after=3", 3, metrics.KindMalformed},
	{"in-stream error object", "error-after=3", 3, metrics.KindStreamError},
	{"stall after tokens", "stall-after=3", 3, metrics.KindStall},
	{"stall before the headers", "stall", 0, metrics.KindHeaderTimeout},
	{"body ends without finish or [DONE]", "eof-after=3", 3, metrics.KindTruncated},
	{"no [DONE] after the finish reason", "no-done", -1, metrics.KindNone},
	{"a 20 MB line", "oversize=20000000", 0, metrics.KindOversize},
	{"comments, event and id fields, CRLF", "ping,sse-fields,crlf", -1, metrics.KindNone},
	{"several tokens per chunk", "chunk-tokens=4", -1, metrics.KindNone},
	{"slow response headers", "header-delay=10s", 0, metrics.KindHeaderTimeout},
}

// transports are the transports every fault is tried on: net/http's, as
// NewTransport sets it up, and StreamTransport, reading bodies on each
// request's goroutine (stream) and, with LLMLOAD_TEST_READ=poll, on its
// pollers (stream-poll); .ci/run runs the suite both ways.
var transports = []struct {
	name string
	new  func(conns int) http.RoundTripper
}{
	{"http", func(n int) http.RoundTripper { return loadgen.NewTransport(n) }},
	{"stream", func(n int) http.RoundTripper { return loadgen.NewStreamTransport(n) }},
}

func init() {
	if os.Getenv("LLMLOAD_TEST_READ") == "poll" {
		transports = append(transports, struct {
			name string
			new  func(conns int) http.RoundTripper
		}{"stream-poll", func(n int) http.RoundTripper {
			t := loadgen.NewStreamTransport(n)
			t.Poll = true
			return t
		}})
	}
}

// forEachTransport runs f as a subtest on each transport.
func forEachTransport(t *testing.T, f func(t *testing.T, tr func(conns int) http.RoundTripper)) {
	for _, tr := range transports {
		t.Run("transport="+tr.name, func(t *testing.T) { f(t, tr.new) })
	}
}

// faultClient returns a client of srv on the transport tr that gives up
// on a stream after patience without headers or without a token.
func faultClient(srv *loadgentest.Server, tr func(conns int) http.RoundTripper, patience time.Duration) *loadgen.Client {
	return &loadgen.Client{
		BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: tr(8)},
		StallTimeout: patience, HeaderTimeout: patience,
	}
}

// Patience of the fault matrix's client. A healthy answer's tokens come
// 2 ms apart, but under the race detector, beside other packages' tests,
// a reader has been kept from the CPU for over a second: a healthy
// request must not be classified as a stall for that. The mixed matrix
// needs its stalls within its 2 s run and asserts nothing of the healthy
// requests but that some completed.
const (
	matrixPatience = 3 * time.Second
	mixedPatience  = time.Second
)

func faultSource(faulty map[int]string) loadgen.Source {
	return func(w, _ int) *loadgen.Request {
		r := completion(faultTokens)
		if f, ok := faulty[w]; ok {
			r = &loadgen.Request{API: r.API, Model: r.Model, Prompt: r.Prompt, MaxTokens: r.MaxTokens, IgnoreEOS: true,
				Header: http.Header{loadgentest.FaultHeader: {f}}}
		}
		return r
	}
}

// TestFaultMatrix runs the generator against each fault in turn: two
// healthy workers and two faulty ones, three requests each. Every request
// must be classified with the right kind, token counts must stay exact for
// the healthy requests and the partial ones, and the run must end promptly.
func TestFaultMatrix(t *testing.T) {
	longtest.Skip(t)
	forEachTransport(t, testFaultMatrix)
}

func testFaultMatrix(t *testing.T, tr func(conns int) http.RoundTripper) {
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			srv, _ := simulated(t, 2*time.Millisecond, 64)
			c := faultClient(srv, tr, matrixPatience)
			defer c.CloseIdleConnections()
			g := &loadgen.Generator{Client: c, Load: loadgen.Closed{Streams: 4}, Requests: 12, FailurePause: -1,
				Source: faultSource(map[int]string{1: f.header, 3: f.header})}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			start := time.Now()
			run, err := g.Run(ctx)
			require.NoError(t, err)
			assert.Less(t, time.Since(start), 20*time.Second, "no hang")
			s := run.Summary
			require.Equal(t, 12, s.Requests)

			perFaulty := f.tokens
			if perFaulty < 0 {
				perFaulty = faultTokens
			}
			if f.kind == metrics.KindNone {
				assert.Zero(t, s.Failed, "errors: %v", s.Errors)
				assert.Equal(t, 12, s.Completed)
				assert.Equal(t, 12*faultTokens, s.OutputTokens)
				return
			}
			// Workers run at their own pace: count the faulty requests from
			// the errors, then check the tokens add up exactly.
			faulty := s.Errors[f.kind]
			assert.Equal(t, faulty, s.Failed, "every failure is of kind %s: %v", f.kind, s.Errors)
			assert.Positive(t, faulty)
			assert.Equal(t, 12-faulty, s.Completed, "the healthy requests all completed")
			// Exact against what the server says it wrote. A fault "after
			// K chunks" comes after K tokens: the simulator merges a
			// lagging handler's tokens into one chunk only after it.
			written := 0
			for _, r := range srv.Truth().Requests() {
				written += r.OutputTokens
			}
			if f.kind == metrics.KindMalformed || strings.HasPrefix(f.header, "reset") {
				// The client stops reading at a malformed chunk, though the
				// server goes on; a reset may drop what the client's kernel
				// had not yet handed over.
				assert.LessOrEqual(t, s.OutputTokens, written)
				assert.GreaterOrEqual(t, s.OutputTokens, (12-faulty)*faultTokens)
			} else {
				assert.Equal(t, written, s.OutputTokens, "tokens exact, partial ones included")
				assert.Equal(t, (12-faulty)*faultTokens+faulty*perFaulty, s.OutputTokens, "%d tokens from each faulty request", perFaulty)
			}
			assert.GreaterOrEqual(t, s.OutputTokens, (12-faulty)*faultTokens+faulty*perFaulty)
		})
	}
}

// TestFaultMatrixMixed runs every fault at once, one worker each, beside
// healthy workers.
func TestFaultMatrixMixed(t *testing.T) {
	forEachTransport(t, testFaultMatrixMixed)
}

func testFaultMatrixMixed(t *testing.T, tr func(conns int) http.RoundTripper) {
	srv, _ := simulated(t, 2*time.Millisecond, 64)
	c := faultClient(srv, tr, mixedPatience)
	defer c.CloseIdleConnections()
	faulty := map[int]string{}
	for i, f := range faults {
		faulty[i] = f.header
	}
	n := len(faults) + 3
	g := &loadgen.Generator{Client: c, Load: loadgen.Closed{Streams: n}, Duration: 2 * time.Second, FailurePause: 50 * time.Millisecond, Source: faultSource(faulty)}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	run, err := g.Run(ctx)
	require.NoError(t, err)
	s := run.Summary
	for _, f := range faults {
		if f.kind != metrics.KindNone {
			assert.Positive(t, s.Errors[f.kind], "%s recorded as %s", f.name, f.kind)
		}
	}
	assert.Positive(t, s.Completed, "the healthy workers went on")
	assert.Zero(t, s.Errors[metrics.KindOther], "nothing unclassified")
}

func TestOversizeLineKeepsMemoryFlat(t *testing.T) {
	forEachTransport(t, testOversizeLineKeepsMemoryFlat)
}

func testOversizeLineKeepsMemoryFlat(t *testing.T, tr func(conns int) http.RoundTripper) {
	srv, _ := simulated(t, 2*time.Millisecond, 4)
	c := faultClient(srv, tr, mixedPatience)
	defer c.CloseIdleConnections()
	r := completion(4)
	r.Header = http.Header{loadgentest.FaultHeader: {"oversize=20000000"}}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := c.Do(t.Context(), r)
	runtime.ReadMemStats(&after)
	require.Equal(t, metrics.KindOversize, loadgen.KindOf(err))
	grew := int64(after.TotalAlloc - before.TotalAlloc)
	assert.Less(t, grew, int64(8<<20), "reading a 20 MB line allocated %d bytes; the 1 MiB event limit must hold", grew)
}

func TestOverLengthIsTooLong(t *testing.T) {
	srv, c := simulated(t, 2*time.Millisecond, 4)
	_ = srv
	r := completion(1 << 20) // far beyond max_model_len
	resp, err := c.Do(t.Context(), r)
	require.Equal(t, metrics.KindTooLong, loadgen.KindOf(err))
	assert.Equal(t, metrics.KindTooLong, resp.Kind)
}

// TestServerGoesAwayAndComesBack stops the server in the middle of a window
// and starts it again on the same address: requests in between fail to
// connect or are cut, and the run goes on when the server is back.
func TestServerGoesAwayAndComesBack(t *testing.T) {
	forEachTransport(t, testServerGoesAwayAndComesBack)
}

func testServerGoesAwayAndComesBack(t *testing.T, tr func(conns int) http.RoundTripper) {
	p := loadgentest.FastProfile()
	p.DecodeBase = []loadgentest.BatchCost{{Batch: 1, Seconds: 0.002}}
	h := loadgentest.NewHandler(p)
	defer h.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	serve := func(ln net.Listener) *http.Server {
		s := &http.Server{Handler: h}
		go s.Serve(ln)
		return s
	}
	s1 := serve(ln)
	c := &loadgen.Client{BaseURL: "http://" + addr + "/v1", HTTPClient: &http.Client{Transport: tr(4)}, StallTimeout: time.Second}
	defer c.CloseIdleConnections()

	back := make(chan *http.Server, 1) // the server once back, or nil
	down := time.AfterFunc(700*time.Millisecond, func() {
		s1.Close() // the server goes away: listener and connections
		time.Sleep(500 * time.Millisecond)
		ln2, err := net.Listen("tcp", addr)
		if err != nil {
			back <- nil
			return
		}
		back <- serve(ln2) // and comes back
	})
	defer down.Stop()
	g := &loadgen.Generator{Client: c, Load: loadgen.Closed{Streams: 4}, Duration: 2500 * time.Millisecond, FailurePause: 20 * time.Millisecond,
		Source: loadgen.Repeat(completion(100))}
	run, err := g.Run(t.Context())
	require.NoError(t, err, "a server that goes away mid-run does not end the run")
	select {
	case s2 := <-back:
		require.NotNil(t, s2, "the server could not listen on its address again")
		defer s2.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the server never came back")
	}
	s := run.Summary
	assert.Positive(t, s.Errors[metrics.KindConnect]+s.Errors[metrics.KindTruncated], "the outage is recorded: %v", s.Errors)
	assert.Positive(t, s.Completed, "requests completed before and after the outage")
	var kinds []string
	for k := range s.Errors {
		kinds = append(kinds, string(k))
	}
	t.Logf("errors during the outage: %s", strings.Join(kinds, ", "))
}
