package hostileserver_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/internal/harness/hostileserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true}`

// post sends a chat request to base and returns the response.
func post(t *testing.T, hc *http.Client, base string, header http.Header) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/chat/completions", strings.NewReader(chatBody))
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	return hc.Do(req)
}

func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableCompression: true}}
}

func TestModesAnswerAsDocumented(t *testing.T) {
	srv := hostileserver.New(hostileserver.OK)
	defer srv.Close()
	hc := newClient()
	defer hc.CloseIdleConnections()
	for _, tc := range []struct {
		mode        hostileserver.Mode
		status      int
		contentType string
		body        []string // substrings, in order
		notBody     string
	}{
		{hostileserver.OK, 200, "text/event-stream", []string{`"tok1 "`, `"tok3 "`, `"finish_reason":"length"`, "[DONE]"}, `"tok4 "`},
		{hostileserver.DoneOnly, 200, "text/event-stream", []string{"data: [DONE]\n\n"}, "tok1"},
		{hostileserver.EventError, 200, "text/event-stream", []string{"tok1", "event: error\ndata: {", hostileserver.EventErrorMessage}, "[DONE]"},
		{hostileserver.EventError.With("text"), 200, "text/event-stream", []string{"tok1", "event: error\ndata: " + hostileserver.EventErrorMessage + "\n\n"}, "[DONE]"},
		{hostileserver.EscapesInStream, 200, "text/event-stream", []string{"tok1", `\u001b[2J`, "[DONE]"}, ""},
		{hostileserver.Escapes, 400, "application/json", []string{`"error"`, `\u001b]52;c;`}, ""},
		{hostileserver.Escapes.With(502), 502, "application/json", []string{`\u001b]0;pwned`}, ""},
		{hostileserver.HTML, 200, "text/html; charset=utf-8", []string{"<title>Sign in</title>"}, "data:"},
		{hostileserver.PlainJSON, 200, "application/json", []string{`"object":"chat.completion"`}, "data:"},
		{hostileserver.UsageMax, 200, "text/event-stream", []string{`"completion_tokens":1,`, `"completion_tokens":9223372036854775807`, "[DONE]"}, ""},
		{hostileserver.UsageOverflow, 200, "text/event-stream", []string{`"completion_tokens":99999999999999999999`}, ""},
		{hostileserver.UsageDecrease, 200, "text/event-stream", []string{`"completion_tokens":3,`, `"completion_tokens":2,`}, ""},
		{hostileserver.UsageJump, 200, "text/event-stream", []string{`"completion_tokens":2,`, `"completion_tokens":1000000003,`}, ""},
		{hostileserver.UsageNegative, 200, "text/event-stream", []string{`"completion_tokens":-1,`}, ""},
		{hostileserver.UsageZero, 200, "text/event-stream", []string{`"tok1 "`, `"completion_tokens":0,`, `"tok5 "`, "[DONE]"}, `"completion_tokens":5`},
		{hostileserver.UsageZero.With("final"), 200, "text/event-stream", []string{`"completion_tokens":0,`, `"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":5`}, ""},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			resp, err := post(t, hc, srv.BaseURL(tc.mode), nil)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Equal(t, tc.contentType, resp.Header.Get("Content-Type"))
			rest := string(b)
			for _, s := range tc.body {
				i := strings.Index(rest, s)
				if !assert.GreaterOrEqual(t, i, 0, "%q in order in %q", s, b) {
					return
				}
				rest = rest[i+len(s):]
			}
			if tc.notBody != "" {
				assert.NotContains(t, string(b), tc.notBody)
			}
		})
	}
	got := srv.Requests()
	require.NotEmpty(t, got)
	assert.Equal(t, hostileserver.Main, got[0].Origin)
	assert.Equal(t, hostileserver.OK, got[0].Mode)
	assert.Equal(t, "/v1/chat/completions", got[0].Path, "the mode prefix is not part of the path")
	assert.JSONEq(t, chatBody, string(got[0].Body))
}

func TestGzipStreamIsGzip(t *testing.T) {
	srv := hostileserver.New(hostileserver.Gzip)
	defer srv.Close()
	hc := newClient()
	defer hc.CloseIdleConnections()
	resp, err := post(t, hc, srv.URL+"/v1", nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
	zr, err := gzip.NewReader(resp.Body)
	require.NoError(t, err)
	b, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"tok3 "`)
	assert.True(t, strings.HasSuffix(string(b), "data: [DONE]\n\n"))
}

// TestRedirectIsRecordedOnBothOrigins also shows why llmload must take care
// of its credentials: net/http's client copies Authorization to another
// port of the same host.
func TestRedirectIsRecordedOnBothOrigins(t *testing.T) {
	for _, mode := range []hostileserver.Mode{hostileserver.Redirect, hostileserver.Redirect.With(308)} {
		t.Run(string(mode), func(t *testing.T) {
			srv := hostileserver.New(mode)
			defer srv.Close()
			hc := newClient()
			defer hc.CloseIdleConnections()
			resp, err := post(t, hc, srv.URL+"/v1", http.Header{"Authorization": {"Bearer sk-secret"}})
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, 200, resp.StatusCode)
			assert.Contains(t, string(b), "[DONE]", "the other origin serves a healthy stream")
			assert.Equal(t, []string{"Bearer sk-secret"}, srv.Authorizations(hostileserver.Main))
			assert.Equal(t, []string{"Bearer sk-secret"}, srv.Authorizations(hostileserver.Other),
				"net/http copies Authorization to another port of the same host")
			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			assert.Equal(t, "/v1/chat/completions", reqs[1].Path)
			assert.JSONEq(t, chatBody, string(reqs[1].Body), "a 307 or 308 re-sends the body")
		})
	}
}

func TestRedirectLoopAndChainNeverEnd(t *testing.T) {
	srv := hostileserver.New(hostileserver.OK)
	defer srv.Close()
	hc := newClient()
	defer hc.CloseIdleConnections()
	for _, mode := range []hostileserver.Mode{hostileserver.RedirectLoop, hostileserver.RedirectChain, hostileserver.RedirectLoop.With(302)} {
		_, err := post(t, hc, srv.BaseURL(mode), nil)
		require.Error(t, err, mode)
		assert.Contains(t, err.Error(), "stopped after 10 redirects", mode)
	}
	var hops []string
	for _, r := range srv.Requests() {
		if r.Mode == hostileserver.RedirectChain {
			hops = append(hops, r.Header.Get("Referer"))
		}
	}
	require.Len(t, hops, 10, "net/http sends ten requests, then stops")
	assert.Contains(t, hops[9], "hop=8", "each hop is a new URL")
}

func TestHugeHeaderIsRefusedByNetHTTP(t *testing.T) {
	srv := hostileserver.New(hostileserver.HugeHeader)
	defer srv.Close()
	hc := newClient()
	defer hc.CloseIdleConnections()
	start := time.Now()
	_, err := post(t, hc, srv.URL+"/v1", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "10485760")
	assert.Less(t, time.Since(start), 20*time.Second)
}

func TestEarlyHints(t *testing.T) {
	srv := hostileserver.New(hostileserver.OK)
	defer srv.Close()
	hc := newClient()
	defer hc.CloseIdleConnections()

	resp, err := post(t, hc, srv.BaseURL(hostileserver.EarlyHints.With(3)), nil)
	require.NoError(t, err, "three hints, then a stream")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, string(b), "[DONE]")

	start := time.Now()
	_, err = post(t, hc, srv.BaseURL(hostileserver.EarlyHints), nil)
	require.Error(t, err, "endless hints")
	assert.Less(t, time.Since(start), 20*time.Second)
}

func TestManyHeaders(t *testing.T) {
	srv := hostileserver.New(hostileserver.ManyHeaders.With(100))
	defer srv.Close()
	hc := newClient()
	defer hc.CloseIdleConnections()
	resp, err := post(t, hc, srv.URL+"/v1", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Len(t, resp.Header.Values("X-Many"), 100)
}

func TestEmptyDeltasGoOnUntilTheClientLeaves(t *testing.T) {
	srv := hostileserver.New(hostileserver.EmptyDeltas.With(1))
	defer srv.Close()
	hc := newClient()
	defer hc.CloseIdleConnections()
	resp, err := post(t, hc, srv.URL+"/v1", nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	events := 0
	for events < 100 {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		if strings.HasPrefix(line, "data: ") {
			if events > 0 {
				assert.Contains(t, line, `"delta":{"content":""}`)
			} else {
				assert.Contains(t, line, `"tok1 "`)
			}
			events++
		}
	}
}

func TestSilentAndNotHTTPServers(t *testing.T) {
	silent := hostileserver.New(hostileserver.Silent)
	defer silent.Close()
	c, err := net.Dial("tcp", strings.TrimPrefix(silent.URL, "http://"))
	require.NoError(t, err)
	defer c.Close()
	io.WriteString(c, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	n, err := c.Read(make([]byte, 1))
	assert.Zero(t, n)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout(), "no answer at all")

	notHTTP := hostileserver.New(hostileserver.NotHTTP)
	defer notHTTP.Close()
	hc := newClient()
	defer hc.CloseIdleConnections()
	_, err = post(t, hc, notHTTP.URL+"/v1", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "malformed HTTP")
}

// TestCloseEndsEverything: Close returns promptly with requests hanging in
// every endless mode, and leaves no goroutine behind (goleak checks).
func TestCloseEndsEverything(t *testing.T) {
	srv := hostileserver.New(hostileserver.OK)
	hc := newClient()
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := make(chan struct{}, 8)
	done := make(chan struct{}, 8)
	modes := []hostileserver.Mode{hostileserver.Silent, hostileserver.EmptyDeltas, hostileserver.EarlyHints, hostileserver.HugeHeader}
	for _, m := range modes {
		go func() {
			defer func() { done <- struct{}{} }()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.BaseURL(m)+"/chat/completions", strings.NewReader(chatBody))
			started <- struct{}{}
			resp, err := hc.Do(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	for range modes {
		<-started
	}
	require.Eventually(t, func() bool { return len(srv.Requests()) == len(modes) }, 10*time.Second, 5*time.Millisecond)
	start := time.Now()
	srv.Close()
	assert.Less(t, time.Since(start), 5*time.Second)
	for range modes {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a client still hangs after Close")
		}
	}
}
