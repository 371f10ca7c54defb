package loadgen_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/hostileserver"
	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// The tests in this file point the client at a hostile server on loopback
// (internal/harness/hostileserver), on net/http's transport and on StreamTransport.

const hostileKey = "sk-hostile-test-key"

func hostileClient(base string, tr func(conns int) http.RoundTripper) *loadgen.Client {
	return &loadgen.Client{
		BaseURL: base, APIKey: hostileKey, Header: http.Header{"X-Api-Key": {hostileKey}},
		HTTPClient:    &http.Client{Transport: tr(2)},
		HeaderTimeout: 5 * time.Second, FirstTokenTimeout: 5 * time.Second, StallTimeout: 5 * time.Second,
	}
}

// hostileDo sends a chat request of 8 tokens and fails the test if it took
// longer than limit.
func hostileDo(t *testing.T, c *loadgen.Client, r *loadgen.Request, limit time.Duration) (*loadgen.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), max(30*time.Second, 2*limit))
	defer cancel()
	if r == nil {
		r = req()
	}
	start := time.Now()
	resp, err := c.Do(ctx, r)
	assert.Less(t, time.Since(start), limit, "no endless wait")
	return resp, err
}

// TestAPIKeyStaysWithItsOrigin: a redirect to another origin (here another
// port of the same host, which net/http's client treats as the same) never
// carries the API key or the client's extra headers; a POST is never turned
// into a GET by a 301, 302 or 303.
func TestAPIKeyStaysWithItsOrigin(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		for _, status := range []int{307, 308} {
			srv := hostileserver.New(hostileserver.Redirect.With(status))
			defer srv.Close()
			c := hostileClient(srv.URL+"/v1", tr)
			defer c.CloseIdleConnections()
			resp, err := hostileDo(t, c, nil, 5*time.Second)
			require.NoError(t, err, "a %d to another origin is followed", status)
			assert.Equal(t, 8, resp.OutputTokens())
			assert.Equal(t, []string{"Bearer " + hostileKey}, srv.Authorizations(hostileserver.Main))
			assert.Equal(t, []string{""}, srv.Authorizations(hostileserver.Other), "%d: the key stays with its origin", status)
			for _, r := range srv.Requests() {
				if r.Origin == hostileserver.Other {
					assert.Empty(t, r.Header.Get("X-Api-Key"), "extra headers stay with their origin")
					assert.Equal(t, "text/event-stream", r.Header.Get("Accept"))
				}
			}
		}
		for _, status := range []int{301, 302, 303} {
			srv := hostileserver.New(hostileserver.Redirect.With(status))
			defer srv.Close()
			c := hostileClient(srv.URL+"/v1", tr)
			defer c.CloseIdleConnections()
			_, err := hostileDo(t, c, nil, 5*time.Second)
			assert.Equal(t, metrics.KindRedirect, loadgen.KindOf(err), "%d: %v", status, err)
			var re *loadgen.RedirectError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, status, re.StatusCode)
			assert.Equal(t, srv.OtherURL+"/v1/chat/completions", re.Location)
			assert.Empty(t, srv.Authorizations(hostileserver.Other), "%d: nothing sent to the other origin", status)
		}

		// Within one origin the key goes along: every hop of a chain of
		// redirects on the same server received it.
		srv := hostileserver.New(hostileserver.RedirectChain)
		defer srv.Close()
		c := hostileClient(srv.URL+"/v1", tr)
		defer c.CloseIdleConnections()
		_, err := hostileDo(t, c, nil, 5*time.Second)
		assert.Equal(t, metrics.KindRedirect, loadgen.KindOf(err), "%v", err)
		auths := srv.Authorizations(hostileserver.Main)
		require.NotEmpty(t, auths)
		for _, a := range auths {
			assert.Equal(t, "Bearer "+hostileKey, a)
		}
	})
}

// TestRedirectLoopIsNamed: a redirect loop and an endless chain of
// redirects are KindRedirect errors that say which, not truncated streams.
func TestRedirectLoopIsNamed(t *testing.T) {
	srv := hostileserver.New(hostileserver.OK)
	defer srv.Close()
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		for _, tc := range []struct {
			mode hostileserver.Mode
			says string
		}{
			{hostileserver.RedirectLoop, "loop"},
			{hostileserver.RedirectLoop.With(308), "loop"},
			{hostileserver.RedirectChain, "10 redirects"},
		} {
			c := hostileClient(srv.BaseURL(tc.mode), tr)
			_, err := hostileDo(t, c, nil, 5*time.Second)
			c.CloseIdleConnections()
			assert.Equal(t, metrics.KindRedirect, loadgen.KindOf(err), "%s: %v", tc.mode, err)
			assert.Equal(t, metrics.KindRedirect, loadgen.KindOf(err))
			if assert.Error(t, err) {
				assert.Contains(t, err.Error(), tc.says)
			}
		}
	})
}

// TestURLUserInfoStaysOutOfErrors: a password in the base URL never shows
// in an error, whether the URL works, cannot be reached or cannot be parsed.
func TestURLUserInfoStaysOutOfErrors(t *testing.T) {
	const password = "s3cret-pass"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	ln.Close()
	srv := hostileserver.New(hostileserver.OK)
	defer srv.Close()
	withUser := func(base string) string { return strings.Replace(base, "http://", "http://user:"+password+"@", 1) }
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		for _, tc := range []struct {
			name, base string
			kind       metrics.ErrorKind
		}{
			{"nothing listens", withUser("http://" + closed + "/v1"), metrics.KindConnect},
			{"a redirect loop", withUser(srv.BaseURL(hostileserver.RedirectLoop)), metrics.KindRedirect},
			{"a redirect to another origin", withUser(srv.BaseURL(hostileserver.Redirect.With(302))), metrics.KindRedirect},
			{"an unparsable URL", "http://user:" + password + "@[::1/v1", metrics.KindOther},
		} {
			c := hostileClient(tc.base, tr)
			_, err := hostileDo(t, c, nil, 5*time.Second)
			c.CloseIdleConnections()
			require.Error(t, err, tc.name)
			assert.Equal(t, tc.kind, loadgen.KindOf(err), "%s: %v", tc.name, err)
			assert.NotContains(t, err.Error(), password, tc.name)
		}
	})
}

// TestStallCountsOnlyTokens: one token, then empty deltas forever, ends at
// the stall timeout; with StallRule set to count every chunk, the
// empty deltas keep the request alive.
func TestStallCountsOnlyTokens(t *testing.T) {
	srv := hostileserver.New(hostileserver.EmptyDeltas.With(5))
	defer srv.Close()
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		c := hostileClient(srv.URL+"/v1", tr)
		c.StallTimeout = 300 * time.Millisecond
		defer c.CloseIdleConnections()
		resp, err := hostileDo(t, c, nil, 5*time.Second)
		assert.Equal(t, metrics.KindStall, loadgen.KindOf(err), "%v", err)
		assert.Equal(t, metrics.KindStall, loadgen.KindOf(err))
		assert.Equal(t, 1, resp.OutputTokens())

		c2 := hostileClient(srv.URL+"/v1", tr)
		c2.StallTimeout = 300 * time.Millisecond
		c2.StallRule = loadgen.StallOnChunks
		defer c2.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = c2.Do(ctx, req())
		assert.Equal(t, metrics.KindCanceled, loadgen.KindOf(err), "empty deltas are progress here: %v", err)
		assert.GreaterOrEqual(t, time.Since(start), 1400*time.Millisecond)
	})
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) int64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// TestResponseHeadersAreBounded: a 300 MB header line, ten million header
// lines or endless 103 Early Hints end at the header size limit, without
// the memory they ask for, alike on both transports. The header limit,
// not the clock, is what ends them: reading a megabyte of headers took
// over 5 s under the race detector on a loaded machine, so the header
// timeout here is long, and the wait bounded only against hanging.
func TestResponseHeadersAreBounded(t *testing.T) {
	longtest.Skip(t)
	srv := hostileserver.New(hostileserver.OK)
	defer srv.Close()
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		for _, mode := range []hostileserver.Mode{hostileserver.HugeHeader, hostileserver.ManyHeaders, hostileserver.EarlyHints} {
			c := hostileClient(srv.BaseURL(mode), tr)
			c.HeaderTimeout = time.Minute
			var err error
			start := time.Now()
			grew := allocated(func() { _, err = hostileDo(t, c, nil, 30*time.Second) })
			t.Logf("%s: refused in %v, %.1f MB allocated", mode, time.Since(start).Round(time.Millisecond), float64(grew)/(1<<20))
			c.CloseIdleConnections()
			assert.Equal(t, metrics.KindOversize, loadgen.KindOf(err), "%s: %v", mode, err)
			assert.ErrorIs(t, err, loadgen.ErrHeadersTooLarge, mode)
			assert.Less(t, grew, int64(200<<20), "%s: allocated %d bytes", mode, grew)
		}
		// A few hints, then the response, are fine.
		c := hostileClient(srv.BaseURL(hostileserver.EarlyHints.With(3)), tr)
		defer c.CloseIdleConnections()
		resp, err := hostileDo(t, c, nil, 5*time.Second)
		require.NoError(t, err)
		assert.Equal(t, 8, resp.OutputTokens())
	})
}

// TestStreamTransportHeaderLimit: MaxResponseHeaderBytes is the bound.
func TestStreamTransportHeaderLimit(t *testing.T) {
	srv := hostileserver.New(hostileserver.OK)
	defer srv.Close()
	small := func(int) http.RoundTripper { return &loadgen.StreamTransport{MaxResponseHeaderBytes: 4 << 10} }
	c := hostileClient(srv.BaseURL(hostileserver.ManyHeaders.With(100)), small) // 1.1 KB
	_, err := hostileDo(t, c, nil, 5*time.Second)
	assert.NoError(t, err)
	c.CloseIdleConnections()
	c = hostileClient(srv.BaseURL(hostileserver.ManyHeaders.With(1000)), small) // 11 KB
	_, err = hostileDo(t, c, nil, 5*time.Second)
	assert.ErrorIs(t, err, loadgen.ErrHeadersTooLarge)
	c.CloseIdleConnections()
}

// TestImplausibleUsageIsMalformed: usage that overflows, goes down, or
// exceeds max_tokens by orders of magnitude makes the request malformed
// with the reason; the totals keep only what was plausible.
func TestImplausibleUsageIsMalformed(t *testing.T) {
	srv := hostileserver.New(hostileserver.OK)
	defer srv.Close()
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		for _, tc := range []struct {
			mode  hostileserver.Mode
			usage bool // a *UsageError, rather than a chunk the parser refused
			says  string
		}{
			{hostileserver.UsageMax, true, "9223372036854775807"},
			{hostileserver.UsageDecrease, true, "went down from 3 to 2"},
			{hostileserver.UsageJump, true, "1000000003"},
			{hostileserver.UsageOverflow, false, "is 99999999999999999999, beyond any 64-bit count"},
			{hostileserver.UsageNegative, false, "not a non-negative integer"},
		} {
			c := hostileClient(srv.BaseURL(tc.mode), tr)
			resp, err := hostileDo(t, c, nil, 5*time.Second)
			c.CloseIdleConnections()
			assert.Equal(t, metrics.KindMalformed, loadgen.KindOf(err), "%s: %v", tc.mode, err)
			var ue *loadgen.UsageError
			assert.Equal(t, tc.usage, errors.As(err, &ue), "%s: %v", tc.mode, err)
			if tc.usage {
				assert.Equal(t, metrics.KindMalformed, loadgen.KindOf(err))
			}
			if assert.Error(t, err) {
				assert.Contains(t, err.Error(), tc.says)
			}
			assert.LessOrEqual(t, resp.OutputTokens(), 8, "%s: no absurd total", tc.mode)
			assert.LessOrEqual(t, resp.CompletionTokens, 8, "%s: no absurd usage kept", tc.mode)
		}
	})
}

// TestUsageThatNeverGrows: Ollama's completions API sends an all-zero usage
// on every chunk. That is not a running count: tokens are counted one per
// delta, each at its own time.
func TestUsageThatNeverGrows(t *testing.T) {
	srv := hostileserver.New(hostileserver.OK)
	defer srv.Close()
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		for _, mode := range []hostileserver.Mode{hostileserver.UsageZero, hostileserver.UsageZero.With("final")} {
			c := hostileClient(srv.BaseURL(mode), tr)
			r := &loadgen.Request{API: loadgen.Completions, Model: "m", Prompt: "hi", MaxTokens: 6}
			resp, err := hostileDo(t, c, r, 5*time.Second)
			c.CloseIdleConnections()
			require.NoError(t, err, mode)
			assert.Equal(t, 6, resp.OutputTokens(), mode)
			assert.Equal(t, 6, resp.Chunks, "%s: every token in its own chunk", mode)
			assert.Equal(t, metrics.SourceChunks, resp.Source, mode)
			if assert.Len(t, resp.ChunkTimes, 6) {
				assert.Equal(t, resp.ChunkTimes[0], resp.First, "%s: the first token is timed by its own chunk", mode)
			}
		}
	})
}

// TestContentEncodingIsNamed: a gzip-encoded stream that the transport did
// not decode is its own kind; a transport that asked for gzip decodes it.
func TestContentEncodingIsNamed(t *testing.T) {
	srv := hostileserver.New(hostileserver.Gzip)
	defer srv.Close()
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		c := hostileClient(srv.URL+"/v1", tr)
		defer c.CloseIdleConnections()
		_, err := hostileDo(t, c, nil, 5*time.Second)
		assert.Equal(t, metrics.KindContentEncoding, loadgen.KindOf(err), "%v", err)
		assert.Equal(t, metrics.KindContentEncoding, loadgen.KindOf(err))
		if assert.Error(t, err) {
			assert.Contains(t, err.Error(), `"gzip"`)
		}
	})
	// An error status with an encoded body says so, rather than quoting
	// compressed bytes.
	errSrv := hostileserver.New(hostileserver.Gzip.With(500))
	defer errSrv.Close()
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		c := hostileClient(errSrv.URL+"/v1", tr)
		defer c.CloseIdleConnections()
		_, err := hostileDo(t, c, nil, 5*time.Second)
		assert.Equal(t, metrics.KindServerStatus, loadgen.KindOf(err), "%v", err)
		var se *loadgen.StatusError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, `(a body in the "gzip" content encoding)`, se.Message)
	})
	decoding := &http.Transport{} // asks for gzip and decodes it
	defer decoding.CloseIdleConnections()
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: decoding}}
	resp, err := hostileDo(t, c, nil, 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 8, resp.OutputTokens())
}

// TestEventErrorIsAStreamError: an SSE "event: error" is the server's error
// with its message, whatever its data looks like.
func TestEventErrorIsAStreamError(t *testing.T) {
	srv := hostileserver.New(hostileserver.OK)
	defer srv.Close()
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		for _, mode := range []hostileserver.Mode{hostileserver.EventError, hostileserver.EventError.With("text")} {
			c := hostileClient(srv.BaseURL(mode), tr)
			resp, err := hostileDo(t, c, nil, 5*time.Second)
			c.CloseIdleConnections()
			assert.Equal(t, metrics.KindStreamError, loadgen.KindOf(err), "%s: %v", mode, err)
			var se *loadgen.StreamError
			require.ErrorAs(t, err, &se, mode)
			assert.Equal(t, hostileserver.EventErrorMessage, se.Message)
			assert.Equal(t, 1, resp.OutputTokens(), "the token before the error is kept")
		}
		// An error, then silence: the error is what happened, not a stall.
		c := hostileClient(srv.BaseURL(hostileserver.EventError.With("hold")), tr)
		c.StallTimeout = 300 * time.Millisecond
		defer c.CloseIdleConnections()
		_, err := hostileDo(t, c, nil, 5*time.Second)
		assert.Equal(t, metrics.KindStreamError, loadgen.KindOf(err), "%v", err)
	})
}

// TestServerTextIsOneLine: a server's message with terminal escape
// sequences reaches Error() escaped, on one line; the raw text stays in
// the error's Message.
func TestServerTextIsOneLine(t *testing.T) {
	srv := hostileserver.New(hostileserver.OK)
	defer srv.Close()
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		for _, tc := range []struct {
			mode hostileserver.Mode
			kind metrics.ErrorKind
		}{
			{hostileserver.Escapes, metrics.KindClientStatus},
			{hostileserver.Escapes.With(500), metrics.KindServerStatus},
			{hostileserver.EscapesInStream, metrics.KindStreamError},
		} {
			c := hostileClient(srv.BaseURL(tc.mode), tr)
			_, err := hostileDo(t, c, nil, 5*time.Second)
			c.CloseIdleConnections()
			require.Error(t, err)
			assert.Equal(t, tc.kind, loadgen.KindOf(err), "%s: %v", tc.mode, err)
			msg := err.Error()
			assert.NotContains(t, msg, "\x1b", tc.mode)
			assert.NotContains(t, msg, "\x07", tc.mode)
			assert.NotContains(t, msg, "\n", tc.mode)
			assert.Contains(t, msg, `bad request\x1b[2J\x1b]0;pwned\x07`, "%s: escaped, not dropped", tc.mode)
			var raw string
			var se *loadgen.StatusError
			var ste *loadgen.StreamError
			switch {
			case errors.As(err, &se):
				raw = se.Message
			case errors.As(err, &ste):
				raw = ste.Message
			}
			assert.Equal(t, hostileserver.EscapeText, raw, "%s: the raw text is kept", tc.mode)
		}
	})
}

// TestSilentServer: a server that accepts and never answers ends at the
// header deadline.
func TestSilentServer(t *testing.T) {
	srv := hostileserver.New(hostileserver.Silent)
	defer srv.Close()
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		c := hostileClient(srv.URL+"/v1", tr)
		c.HeaderTimeout = 300 * time.Millisecond
		defer c.CloseIdleConnections()
		_, err := hostileDo(t, c, nil, 5*time.Second)
		assert.Equal(t, metrics.KindHeaderTimeout, loadgen.KindOf(err), "%v", err)
	})
}
