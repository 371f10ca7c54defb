package loadgen_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/simtokens"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/metrics"
)

// tokenChunk is a vLLM chat chunk carrying one word.
func tokenChunk(word string) string {
	return fmt.Sprintf(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`+"\n\n", word)
}

const finishChunk = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":""},"finish_reason":"length"}]}` + "\n\ndata: [DONE]\n\n"

// serve starts a server running h for every request.
func serve(t *testing.T, h http.HandlerFunc) (*httptest.Server, *loadgen.Client) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}
}

func sseHeaders(w http.ResponseWriter) http.Flusher {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	f.Flush()
	return f
}

func req() *loadgen.Request { return &loadgen.Request{Model: "bench", Prompt: "hi", MaxTokens: 8} }

func TestRequestBody(t *testing.T) {
	var got map[string]any
	var header http.Header
	var path string
	_, c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		path, header = r.URL.Path, r.Header.Clone()
		_ = json.NewDecoder(r.Body).Decode(&got)
		sseHeaders(w)
		io.WriteString(w, tokenChunk("a")+finishChunk)
	})
	c.APIKey = "sk-secret"
	c.Header = http.Header{"X-Team": {"perf"}}
	temp := 0.0
	r := &loadgen.Request{
		API: loadgen.Completions, Model: "bench", Prompt: "Once upon", MaxTokens: 64, MinTokens: 64,
		IgnoreEOS: true, Temperature: &temp, Extra: map[string]any{"top_k": 1, "seed": 7},
		Header: http.Header{"X-Request-Id": {"abc"}},
	}
	_, err := c.Do(t.Context(), r)
	require.NoError(t, err)
	assert.Equal(t, "/v1/completions", path)
	assert.Equal(t, "Bearer sk-secret", header.Get("Authorization"))
	assert.Equal(t, "perf", header.Get("X-Team"))
	assert.Equal(t, "abc", header.Get("X-Request-Id"))
	assert.Equal(t, map[string]any{
		"model": "bench", "prompt": "Once upon", "stream": true, "max_tokens": 64.0, "min_tokens": 64.0,
		"ignore_eos": true, "temperature": 0.0, "top_k": 1.0, "seed": 7.0,
		"stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true},
	}, got)

	got = nil
	chat := &loadgen.Request{Model: "bench", Prompt: "hello", Usage: loadgen.UsageFinal}
	_, err = c.Do(t.Context(), chat)
	require.NoError(t, err)
	assert.Equal(t, "/v1/chat/completions", path)
	assert.Equal(t, []any{map[string]any{"role": "user", "content": "hello"}}, got["messages"])
	assert.Equal(t, map[string]any{"include_usage": true}, got["stream_options"])
	assert.NotContains(t, got, "max_tokens")
}

func TestStatusErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header map[string]string
		body   string
		kind   metrics.ErrorKind
		msg    string
		retry  time.Duration
	}{
		{
			name: "vLLM length rejection", status: 400, kind: metrics.KindTooLong,
			body: `{"object":"error","message":"This model's maximum context length is 262144 tokens. However, you requested 262200 tokens (254008 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`,
			msg:  "This model's maximum context length is 262144 tokens.",
		},
		{
			name: "OpenAI-shaped 400 that is not about length", status: 400, kind: metrics.KindClientStatus,
			body: `{"error":{"message":"temperature must be at most 2","type":"invalid_request_error","code":"invalid_value"}}`,
			msg:  "temperature must be at most 2",
		},
		{
			name: "rate limit with Retry-After", status: 429, header: map[string]string{"Retry-After": "7"},
			kind: metrics.KindRateLimited, retry: 7 * time.Second,
			body: `{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}`, msg: "Rate limit reached",
		},
		{name: "server error", status: 500, kind: metrics.KindServerStatus, body: "Internal Server Error", msg: "Internal Server Error"},
		{name: "FastAPI detail", status: 422, kind: metrics.KindClientStatus, body: `{"detail":"Not Found"}`, msg: "Not Found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, c := serve(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			resp, err := c.Do(t.Context(), req())
			require.Error(t, err)
			assert.Equal(t, tc.kind, loadgen.KindOf(err))
			assert.Equal(t, tc.kind, resp.Kind)
			var se *loadgen.StatusError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tc.status, se.StatusCode)
			assert.Contains(t, se.Message, tc.msg)
			assert.Equal(t, tc.retry, se.RetryAfter)
			assert.NotEqual(t, metrics.KindTruncated, loadgen.KindOf(err))
			assert.False(t, resp.Headers.IsZero(), "headers time recorded")
			assert.Zero(t, resp.Chunks)
		})
	}
}

func TestStreamFaults(t *testing.T) {
	tests := []struct {
		name    string
		client  func(c *loadgen.Client)
		handler func(w http.ResponseWriter, r *http.Request)
		kind    metrics.ErrorKind
		tokens  int
	}{
		{
			name: "connection reset mid-stream",
			handler: func(w http.ResponseWriter, r *http.Request) {
				f := sseHeaders(w)
				io.WriteString(w, tokenChunk("a")+tokenChunk("b")+tokenChunk("c"))
				f.Flush()
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.(*net.TCPConn).SetLinger(0) // RST, not FIN
					conn.Close()
				}
			},
			kind: metrics.KindTruncated, tokens: 3,
		},
		{
			name: "stream ends without [DONE] or finish reason",
			handler: func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				io.WriteString(w, tokenChunk("a")+tokenChunk("b"))
			},
			kind: metrics.KindTruncated, tokens: 2,
		},
		{
			name: "malformed chunk",
			handler: func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				io.WriteString(w, tokenChunk("a")+"data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}\n\n"+tokenChunk("c")+finishChunk)
			},
			kind: metrics.KindMalformed, tokens: 1,
		},
		{
			name: "content of the wrong type",
			handler: func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				io.WriteString(w, tokenChunk("a")+`data: {"choices":[{"delta":{"content":7}}]}`+"\n\n"+finishChunk)
			},
			kind: metrics.KindMalformed, tokens: 1,
		},
		{
			name:   "event over the size limit",
			client: func(c *loadgen.Client) { c.MaxEventSize = 64 << 10 },
			handler: func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				io.WriteString(w, tokenChunk("a"))
				io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\""+strings.Repeat("x", 2<<20)+"\"}}]}\n\n")
			},
			kind: metrics.KindOversize, tokens: 1,
		},
		{
			name:   "stall after two tokens",
			client: func(c *loadgen.Client) { c.StallTimeout = 150 * time.Millisecond },
			handler: func(w http.ResponseWriter, r *http.Request) {
				f := sseHeaders(w)
				io.WriteString(w, tokenChunk("a")+tokenChunk("b"))
				f.Flush()
				<-r.Context().Done()
			},
			kind: metrics.KindStall, tokens: 2,
		},
		{
			name:   "slow response headers",
			client: func(c *loadgen.Client) { c.HeaderTimeout = 150 * time.Millisecond },
			handler: func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body) // so the server notices the client leave
				select {
				case <-time.After(10 * time.Second):
				case <-r.Context().Done():
				}
			},
			kind: metrics.KindHeaderTimeout,
		},
		{
			name:   "headers but no first token",
			client: func(c *loadgen.Client) { c.FirstTokenTimeout = 150 * time.Millisecond },
			handler: func(w http.ResponseWriter, r *http.Request) {
				f := sseHeaders(w)
				// A role-only chunk is not a token.
				io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`+"\n\n")
				f.Flush()
				<-r.Context().Done()
			},
			kind: metrics.KindFirstTokenTimeout,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, c := serve(t, tc.handler)
			if tc.client != nil {
				tc.client(c)
			}
			start := time.Now()
			resp, err := c.Do(t.Context(), req())
			require.Error(t, err)
			assert.Less(t, time.Since(start), 5*time.Second, "the request ends promptly")
			assert.Equal(t, tc.kind, loadgen.KindOf(err), "err: %v", err)
			assert.Equal(t, tc.kind, resp.Kind)
			assert.Equal(t, err, resp.Err)
			assert.Equal(t, tc.tokens, resp.Tokens, "tokens before the failure are kept")
			assert.Equal(t, tc.tokens, len(resp.ChunkTimes))
			assert.False(t, resp.OK())
		})
	}
}

func TestConnectFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := &loadgen.Client{BaseURL: "http://" + addr + "/v1"}
	resp, err := c.Do(t.Context(), req())
	require.Error(t, err)
	assert.Equal(t, metrics.KindConnect, loadgen.KindOf(err))
	assert.True(t, resp.Sent.IsZero(), "the request was never written")
}

func TestCancellationKeepsWhatWasMeasured(t *testing.T) {
	_, c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		f := sseHeaders(w)
		for i := 0; ; i++ {
			if _, err := io.WriteString(w, tokenChunk("t")); err != nil {
				return
			}
			f.Flush()
			select {
			case <-time.After(5 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	resp, err := c.Do(ctx, req())
	require.Error(t, err)
	assert.Equal(t, metrics.KindCanceled, loadgen.KindOf(err))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Greater(t, resp.Tokens, 5)
	assert.Equal(t, resp.Tokens, len(resp.ChunkTimes))
}

func TestStreamIterator(t *testing.T) {
	body := tokenChunk("a") + tokenChunk("b") + tokenChunk("c") + finishChunk
	_, c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		io.WriteString(w, body)
	})
	var text strings.Builder
	var last time.Time
	for ch, err := range c.Stream(t.Context(), req()) {
		require.NoError(t, err)
		assert.False(t, ch.Time.Before(last), "chunks in arrival order")
		last = ch.Time
		text.WriteString(ch.Text)
		if ch.FinishReason != "" {
			assert.Equal(t, "length", ch.FinishReason)
		}
	}
	assert.Equal(t, "abc", text.String())

	// Breaking out cancels the request and reports no error.
	n := 0
	for _, err := range c.Stream(t.Context(), req()) {
		require.NoError(t, err)
		n++
		break
	}
	assert.Equal(t, 1, n)

	// A failing stream yields its error last.
	_, bad := serve(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
	var errs []error
	for _, err := range bad.Stream(t.Context(), req()) {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	assert.Equal(t, metrics.KindServerStatus, loadgen.KindOf(errs[0]))
}

func TestConnectionsAreReused(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		io.WriteString(w, tokenChunk("a")+finishChunk)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := &loadgen.Client{BaseURL: srv.URL}
	defer c.CloseIdleConnections()
	for range 20 {
		_, err := c.Do(t.Context(), req())
		require.NoError(t, err)
	}
	assert.EqualValues(t, 1, conns.Load(), "one connection for 20 sequential streams")
}

func TestErrorWrapping(t *testing.T) {
	cause := errors.New("no token within StallTimeout")
	err := &loadgen.Error{Kind: metrics.KindStall, Chunks: 3, Err: cause}
	assert.ErrorIs(t, err, cause)
	assert.Equal(t, metrics.KindStall, loadgen.KindOf(err))
	assert.Equal(t, "stall after 3 chunks: "+cause.Error(), err.Error())
	assert.Equal(t, metrics.KindNone, loadgen.KindOf(nil))
	assert.Equal(t, metrics.KindOther, loadgen.KindOf(errors.New("x")))
	assert.Equal(t, metrics.KindCanceled, loadgen.KindOf(context.Canceled))
}

// TestCachedPromptTokens reads the prefix-cache hit that vLLM reports in
// usage.prompt_tokens_details.
func TestCachedPromptTokens(t *testing.T) {
	p := loadgentest.FastProfile()
	p.Speed = 10
	p.PromptTokensDetails = true
	srv := loadgentest.NewServer(p)
	defer srv.Close()
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}
	r := &loadgen.Request{API: loadgen.Completions, Model: "bench", Prompt: simtokens.Prompt(1000, t.Name()), MaxTokens: 4}
	cold, err := c.Do(t.Context(), r)
	require.NoError(t, err)
	warm, err := c.Do(t.Context(), r)
	require.NoError(t, err)
	assert.Equal(t, 1000, warm.PromptTokens)
	assert.Equal(t, 0, cold.CachedTokens)
	assert.Equal(t, 999/p.BlockSize*p.BlockSize, warm.CachedTokens, "every full block but the last token's")
}

// smallReadBuffers is a listener whose connections take little before the
// server reads: a large request then stays unwritten until it does.
type smallReadBuffers struct{ net.Listener }

func (l smallReadBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(64 << 10)
	}
	return c, err
}

// TestSentWhenTheResponseComesFirst: a response that comes before the
// transport has said the request is written (net/http says it from its
// writing goroutine, which a busy machine may hold up; here the server
// answers before it reads the body) still has its request's Sent, no
// later than its headers, so its time to first token is the wait for the
// token and not zero.
func TestSentWhenTheResponseComesFirst(t *testing.T) {
	const delay = 100 * time.Millisecond
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, http.NewResponseController(w).EnableFullDuplex())
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.Sleep(delay)
		fmt.Fprint(w, tokenChunk("hi")+finishChunk)
		w.(http.Flusher).Flush()
		_, _ = io.Copy(io.Discard, r.Body) // only now is the request written
	}))
	srv.Listener = smallReadBuffers{srv.Listener}
	srv.Start()
	defer srv.Close()
	// Far more than the socket buffers hold, so the body is still being
	// written when the answer comes.
	req := &loadgen.Request{Model: "m", Prompt: strings.Repeat("word ", 4<<20), MaxTokens: 1}
	forEachTransport(t, func(t *testing.T, tr func(conns int) http.RoundTripper) {
		c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: tr(1)}}
		defer c.CloseIdleConnections()
		resp, err := c.Do(t.Context(), req)
		require.NoError(t, err)
		require.False(t, resp.Sent.IsZero(), "Sent is set")
		assert.False(t, resp.Sent.After(resp.Headers), "sent %v after the headers came", resp.Sent.Sub(resp.Headers))
		assert.Equal(t, 1, resp.OutputTokens())
		if _, ok := c.HTTPClient.Transport.(*http.Transport); ok {
			// StreamTransport writes the whole request before it reads
			// anything, and says so at once: it is written when the
			// server has read it, after the token, and the headers and
			// the token may come in one read.
			assert.GreaterOrEqual(t, resp.TTFT(), delay-5*time.Millisecond, "the time to first token is the wait for the token")
		}
	})
}
