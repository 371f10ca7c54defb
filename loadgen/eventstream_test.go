package loadgen_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/hostileserver"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/metrics"
)

// requireNotEventStream checks that err is a not-event-stream failure, on
// one line, that names what it says, and returns its *NotEventStreamError.
func requireNotEventStream(t *testing.T, err error, says ...string) *loadgen.NotEventStreamError {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, metrics.KindNotEventStream, loadgen.KindOf(err), "%v", err)
	assert.Equal(t, metrics.KindNotEventStream, loadgen.KindOf(err))
	var ne *loadgen.NotEventStreamError
	require.ErrorAs(t, err, &ne)
	msg := err.Error()
	assert.NotContains(t, msg, "\n", "one line")
	assert.NotContains(t, msg, "truncated")
	for _, s := range says {
		assert.Contains(t, msg, s)
	}
	return ne
}

// TestNotEventStream: a 2xx response that is not an event stream is its own
// kind of failure, naming the content type and the start of the body, on
// both transports.
func TestNotEventStream(t *testing.T) {
	srv := hostileserver.New(hostileserver.OK)
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		mode        hostileserver.Mode
		contentType string
		says        []string
	}{
		{hostileserver.HTML, "text/html; charset=utf-8", []string{`Content-Type "text/html; charset=utf-8"`, "<title>Sign in</title>", "web page", "/hostile/html/v1/chat/completions"}},
		{hostileserver.PlainJSON, "application/json", []string{`Content-Type "application/json"`, "chat.completion", `ignored "stream": true`}},
		{hostileserver.NotHTTP, "", []string{"did not answer in HTTP", "Debian", "/hostile/not-http/v1/chat/completions"}},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
				c := &loadgen.Client{BaseURL: srv.BaseURL(tc.mode), HTTPClient: &http.Client{Transport: tr(1)}}
				defer c.CloseIdleConnections()
				start := time.Now()
				resp, err := c.Do(t.Context(), req())
				assert.Less(t, time.Since(start), 5*time.Second, "no wait for a stream that never comes")
				ne := requireNotEventStream(t, err, tc.says...)
				assert.Equal(t, tc.contentType, ne.ContentType)
				assert.Equal(t, tc.mode == hostileserver.NotHTTP, ne.NotHTTP)
				assert.Equal(t, metrics.KindNotEventStream, resp.Kind)
				assert.Zero(t, resp.OutputTokens())
			})
		})
	}
}

// TestNotEventStreamBodies: what a response's Content-Type and first bytes
// say decides, and the body quoted is cut and cleaned.
func TestNotEventStreamBodies(t *testing.T) {
	sse := tokenChunk("a") + finishChunk
	for _, tc := range []struct {
		name, contentType, body string
		status                  int
		ok                      bool
		says                    []string
	}{
		{"event stream", "text/event-stream; charset=utf-8", sse, 200, true, nil},
		{"event stream, upper case", "Text/Event-Stream", sse, 200, true, nil},
		{"event stream with a byte-order mark and blank lines first", "text/event-stream", "\xEF\xBB\xBF\n\n: ping\n\n" + sse, 200, true, nil},
		{"event stream opening with an event field", "text/event-stream", "event: message\n" + sse, 200, true, nil},
		{"no Content-Type, an event stream", "", sse, 200, true, nil},
		{"text/plain, an event stream", "text/plain; charset=utf-8", sse, 200, true, nil},
		{"labelled an event stream, a JSON body", "text/event-stream", `{"error": "not streaming"}`, 200, false,
			[]string{`Content-Type "text/event-stream", but its body is not an event stream`, `not streaming`}},
		{"text/plain, not an event stream", "text/plain", "Welcome to nginx!\n", 200, false, []string{`"text/plain"`, "Welcome to nginx!"}},
		{"no Content-Type, an empty body", "", "", 200, false, []string{"no Content-Type", "an empty body"}},
		{"201 Created", "application/json", `{"ok": true}`, 201, false, []string{"201 Created"}},
		{"newline-delimited JSON", "application/x-ndjson", `{"model":"tiny","message":{"content":"a"}}` + "\n", 200, false, []string{"native API"}},
		{"a long body with control characters, cut", "text/html", "<html>\r\n\t<body>\x1b[2J\x1b]0;title\x07" + strings.Repeat("x", 500), 200, false,
			[]string{`"<html> <body>xxxxxxxx`, `…"`}}, // escape sequences go with their parameters
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.contentType != "" {
					w.Header().Set("Content-Type", tc.contentType)
				} else {
					w.Header()["Content-Type"] = nil // no sniffing: no header at all
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			resp, err := c.Do(t.Context(), req())
			if tc.ok {
				require.NoError(t, err)
				assert.Equal(t, "a", resp.Text)
				return
			}
			ne := requireNotEventStream(t, err, tc.says...)
			assert.Equal(t, tc.status, ne.StatusCode)
			assert.LessOrEqual(t, len(ne.Body), 64+len("…")+4)
			assert.False(t, strings.ContainsFunc(ne.Body, func(r rune) bool { return r < ' ' }), "no control characters: %q", ne.Body)
		})
	}
}

// TestNotEventStreamInTheGenerator: a generator pointed at a login page
// counts every request as not_event_stream, not as truncated streams.
func TestNotEventStreamInTheGenerator(t *testing.T) {
	srv := hostileserver.New(hostileserver.OK)
	t.Cleanup(srv.Close)
	for _, mode := range []hostileserver.Mode{hostileserver.HTML, hostileserver.PlainJSON, hostileserver.NotHTTP} {
		t.Run(string(mode), func(t *testing.T) {
			c := &loadgen.Client{BaseURL: srv.BaseURL(mode), HTTPClient: &http.Client{Transport: loadgen.NewTransport(2)}}
			defer c.CloseIdleConnections()
			g := &loadgen.Generator{Client: c, Source: loadgen.Repeat(req()), Load: loadgen.Closed{Streams: 2}, Requests: 6, FailurePause: -1}
			run, err := g.Run(t.Context())
			nm, ok := errors.AsType[*loadgen.NothingMeasuredError](err)
			require.True(t, ok, "a run whose every request failed measured nothing: %v", err)
			assert.False(t, nm.Early, "fewer requests than the stop rule's")
			assert.Equal(t, 6, nm.Failed)
			assert.ErrorAs(t, err, new(*loadgen.NotEventStreamError), "the last cause")
			s := run.Summary
			assert.Equal(t, 6, s.Failed)
			assert.Equal(t, map[metrics.ErrorKind]int{metrics.KindNotEventStream: 6}, s.Errors)
		})
	}
}

// TestStatusErrorNamesTheURL: an HTTP error names the request that got it,
// without the password of the base URL, and a 404 asks about /v1.
func TestStatusErrorNamesTheURL(t *testing.T) {
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"detail":"Not Found"}`) // vLLM's answer
			return
		}
		http.Error(w, "overloaded\nplease retry\n", http.StatusServiceUnavailable)
	})
	host := strings.TrimPrefix(srv.URL, "http://")

	c := &loadgen.Client{BaseURL: "http://bench:s3cret@" + host, HTTPClient: srv.Client()}
	_, err := c.Do(t.Context(), req())
	var se *loadgen.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusNotFound, se.StatusCode)
	assert.Equal(t, "POST http://bench:xxxxx@"+host+"/chat/completions", se.URL)
	assert.Contains(t, err.Error(), "404 Not Found to POST http://bench:xxxxx@"+host+"/chat/completions: Not Found")
	assert.Contains(t, err.Error(), "/v1", "asks whether BaseURL lacks /v1")
	assert.NotContains(t, err.Error(), "s3cret")

	c = &loadgen.Client{BaseURL: srv.URL + "/v1/", HTTPClient: srv.Client()}
	_, err = c.Do(t.Context(), req())
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "POST "+srv.URL+"/v1/chat/completions", se.URL)
	assert.Equal(t, "overloaded\nplease retry", se.Message, "the server's message as it was")
	assert.Contains(t, err.Error(), `overloaded\nplease retry`, "on one line, the line break escaped")
	assert.NotContains(t, err.Error(), "\n")
	assert.NotContains(t, err.Error(), "/v1?")
}

// TestErrorsOnOneLine: the failures whose messages used to span lines (a
// reset, a server's escape sequences) are on one line, and errors.Is still
// sees every cause.
func TestErrorsOnOneLine(t *testing.T) {
	t.Run("reset mid-stream", func(t *testing.T) {
		srv, _ := simulated(t, 2*time.Millisecond, 2)
		forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
			c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: tr(1)}}
			defer c.CloseIdleConnections()
			r := completion(12)
			r.Header = http.Header{loadgentest.FaultHeader: {"reset-after=3"}}
			_, err := c.Do(t.Context(), r)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "\n")
			assert.Equal(t, metrics.KindTruncated, loadgen.KindOf(err))
			assert.ErrorIs(t, err, syscall.ECONNRESET, "the reset itself: %v", err)
		})
	})
	t.Run("escape sequences from the server", func(t *testing.T) {
		srv := hostileserver.New(hostileserver.OK)
		t.Cleanup(srv.Close)
		for _, mode := range []hostileserver.Mode{hostileserver.Escapes, hostileserver.EscapesInStream} {
			c := &loadgen.Client{BaseURL: srv.BaseURL(mode)}
			_, err := c.Do(t.Context(), req())
			require.Error(t, err)
			msg := err.Error()
			assert.False(t, strings.ContainsFunc(msg, func(r rune) bool { return r < ' ' || r == 0x7f }), "%s: %q", mode, msg)
			assert.Contains(t, msg, "try again")
			var se *loadgen.StatusError
			var ste *loadgen.StreamError
			if errors.As(err, &se) {
				assert.Equal(t, hostileserver.EscapeText, se.Message, "the message is kept as sent")
			} else {
				require.ErrorAs(t, err, &ste)
				assert.Equal(t, hostileserver.EscapeText, ste.Message)
			}
		}
	})
}
