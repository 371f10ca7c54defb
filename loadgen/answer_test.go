package loadgen_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/simtokens"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/metrics"
)

// poolProfile is a simulator whose pooling model costs 20 ms a step and
// 1 ms a token, so one request's latency is known.
func poolProfile() loadgentest.Profile {
	return loadgentest.Profile{Name: "pool", PoolStep: 0.020, PoolPerToken: 0.001, TruthBytes: -1}
}

// An Embeddings request of four documents and a Rerank request of a query
// and two documents, against the simulator: each records the usage's
// input tokens, no output, and a latency of at least the step it took.
func TestEmbeddingsAndRerankAgainstTheSimulator(t *testing.T) {
	srv := loadgentest.NewServer(poolProfile())
	defer srv.Close()
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: tr(2)}}
		defer c.CloseIdleConnections()
		docs := []string{simtokens.Prompt(10, "a"), simtokens.Prompt(10, "b"), simtokens.Prompt(10, "c"), simtokens.Prompt(10, "d")}
		for _, tc := range []struct {
			req    *loadgen.Request
			tokens int
		}{
			{&loadgen.Request{API: loadgen.Embeddings, Documents: docs}, 40},
			{&loadgen.Request{API: loadgen.Embeddings, Prompt: simtokens.Prompt(7, "e")}, 7},
			{&loadgen.Request{API: loadgen.Rerank, Prompt: simtokens.Prompt(3, "q"), Documents: docs[:2], Extra: map[string]any{"top_n": 1}}, 2 * (3 + 10)},
		} {
			before := time.Now()
			resp, err := c.Do(t.Context(), tc.req)
			require.NoError(t, err, "%v", tc.req.API)
			assert.True(t, resp.OK(), "%v completes", tc.req.API)
			assert.Equal(t, tc.tokens, resp.PromptTokens, "%v: the usage's input tokens", tc.req.API)
			assert.Zero(t, resp.OutputTokens(), "%v: no output", tc.req.API)
			assert.True(t, resp.First.IsZero(), "%v: no token, so no TTFT", tc.req.API)
			step := time.Duration((0.020 + 0.001*float64(tc.tokens)) * float64(time.Second))
			assert.GreaterOrEqual(t, resp.Latency(), step, "%v: at least its pooling step", tc.req.API)
			assert.False(t, resp.End.Before(resp.Headers), "%v: the end is the body's, after the headers", tc.req.API)
			assert.False(t, resp.End.After(time.Now()) || resp.Sent.Before(before), "%v", tc.req.API)
			assert.NotEmpty(t, resp.ID, "%v: the server's request id", tc.req.API)
		}
	})
}

// A batch of requests sent at once shares the pooling steps: 8 requests
// of 10 tokens end within about two steps, not eight.
func TestPoolingStepsAreBatched(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.Profile{PoolStep: 0.100, PoolPerToken: 1e-4, TruthBytes: -1})
	defer srv.Close()
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: loadgen.NewStreamTransport(8)}}
	defer c.CloseIdleConnections()
	start := time.Now()
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			_, err := c.Do(t.Context(), &loadgen.Request{API: loadgen.Embeddings, Prompt: simtokens.Prompt(10, fmt.Sprint(i))})
			errs <- err
		}()
	}
	for range 8 {
		require.NoError(t, <-errs)
	}
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 100*time.Millisecond, "one step at least")
	assert.Less(t, took, 500*time.Millisecond, "batched: 8 steps alone would take 800 ms")
}

// Requests that cannot work are refused before anything is sent, with the
// field at fault.
func TestPooledRequestsRefused(t *testing.T) {
	for _, tc := range []struct {
		req   *loadgen.Request
		field string
	}{
		{&loadgen.Request{API: loadgen.Chat, Prompt: "x", Documents: []string{"a"}}, "Request.Documents"},
		{&loadgen.Request{API: loadgen.Rerank, Documents: []string{"a"}}, "Request.Prompt"},
		{&loadgen.Request{API: loadgen.Rerank, Prompt: "q"}, "Request.Documents"},
		{&loadgen.Request{API: loadgen.Embeddings}, "Request.Documents"},
		{&loadgen.Request{API: loadgen.Embeddings, Prompt: "x", Documents: []string{"a"}}, "Request.Prompt"},
		{&loadgen.Request{API: loadgen.Embeddings, Prompt: "x", MaxTokens: 4}, "Request.MaxTokens"},
		{&loadgen.Request{API: loadgen.Embeddings, Messages: []loadgen.Message{{Role: "user", Content: "x"}}}, "Request.Messages"},
	} {
		_, err := tc.req.Body()
		var ce *loadgen.ConfigError
		require.ErrorAs(t, err, &ce, "%+v", tc.req)
		assert.Contains(t, err.Error(), tc.field)
	}
	b, err := (&loadgen.Request{API: loadgen.Rerank, Model: "m", Prompt: "q", Documents: []string{"a", "b"}}).Body()
	require.NoError(t, err)
	assert.JSONEq(t, `{"model":"m","query":"q","documents":["a","b"]}`, string(b))
	b, err = (&loadgen.Request{API: loadgen.Embeddings, Prompt: "one"}).Body()
	require.NoError(t, err)
	assert.JSONEq(t, `{"input":"one"}`, string(b))
}

// answerServer answers every request with status and body, as they are.
func answerServer(t *testing.T, status int, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Hostile and broken answers each fail their request with their own kind
// and a message that says what was wrong, on both transports.
func TestHostileAnswers(t *testing.T) {
	two := &loadgen.Request{API: loadgen.Embeddings, Documents: []string{"a", "b"}}
	rerank := &loadgen.Request{API: loadgen.Rerank, Prompt: "q", Documents: []string{"a", "b"}}
	huge := `{"data":[{"index":0,"embedding":[` + strings.Repeat("0.1,", 300_000) + `0.1]}]}`
	for _, tc := range []struct {
		name   string
		req    *loadgen.Request
		status int
		body   string
		kind   metrics.ErrorKind
		says   string
	}{
		{"ok", two, 200, `{"data":[{"index":1,"embedding":[1]},{"index":0,"embedding":"AAAA"}],"usage":{"prompt_tokens":5,"total_tokens":5}}`, metrics.KindNone, ""},
		{"huge", &loadgen.Request{API: loadgen.Embeddings, Prompt: "a"}, 200, huge, metrics.KindOversize, "MaxBodySize"},
		{"not json", two, 200, `{"data":[{"index":0,`, metrics.KindMalformed, "malformed embeddings answer"},
		{"html", two, 200, `<html>Bad gateway</html>`, metrics.KindMalformed, "not JSON"},
		{"too few", two, 200, `{"data":[{"index":0,"embedding":[1]}]}`, metrics.KindMalformed, "1 embeddings for the request's 2 inputs"},
		{"index twice", two, 200, `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}`, metrics.KindMalformed, "index 0"},
		{"index outside", two, 200, `{"data":[{"index":0,"embedding":[1]},{"index":9,"embedding":[1]}]}`, metrics.KindMalformed, "index 9"},
		{"empty embedding", two, 200, `{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[1]}]}`, metrics.KindMalformed, "embedding 0"},
		{"data not a list", two, 200, `{"data":{"index":0}}`, metrics.KindMalformed, "not of the API's shape"},
		{"negative usage", two, 200, `{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[1]}],"usage":{"prompt_tokens":-3}}`, metrics.KindMalformed, "-3 input tokens"},
		{"error object", two, 200, `{"error":{"message":"out of memory","type":"InternalServerError"}}`, metrics.KindStreamError, "out of memory"},
		{"status", two, 500, `{"error":{"message":"boom"}}`, metrics.KindServerStatus, "boom"},
		{"rerank ok", rerank, 200, `{"results":[{"index":1,"relevance_score":0.9}],"usage":{"total_tokens":12}}`, metrics.KindNone, ""},
		{"rerank no score", rerank, 200, `{"results":[{"index":1}]}`, metrics.KindMalformed, "no relevance_score"},
		{"rerank too many", rerank, 200, `{"results":[{"index":0,"relevance_score":1},{"index":1,"relevance_score":1},{"index":1,"relevance_score":1}]}`, metrics.KindMalformed, "ranks 3 documents"},
	} {
		srv := answerServer(t, tc.status, tc.body)
		forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
			c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: tr(2)}, MaxBodySize: 1 << 20}
			defer c.CloseIdleConnections()
			resp, err := hostileDo(t, c, tc.req, 5*time.Second)
			assert.Equal(t, tc.kind, loadgen.KindOf(err), "%s: %v", tc.name, err)
			if tc.kind == metrics.KindNone {
				assert.True(t, resp.OK(), tc.name)
				assert.Positive(t, resp.PromptTokens, tc.name)
				return
			}
			require.Error(t, err, tc.name)
			assert.Contains(t, err.Error(), tc.says, tc.name)
			assert.Less(t, len(err.Error()), 1000, "%s: the error quotes the start of the body, not all of it", tc.name)
			assert.False(t, resp.OK(), tc.name)
		})
	}
}

// An answer cut short, by a Content-Length the body never reaches, or by
// a connection that hangs after part of it, fails as truncated or at the
// deadline, never hangs.
func TestAnswerCutShort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				buf := make([]byte, 4096)
				conn.Read(buf)
				fmt.Fprint(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"data\":[")
				if strings.Contains(string(buf), "hang") {
					select {
					case <-done:
					case <-time.After(10 * time.Second):
					}
				}
			}()
		}
	}()
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		c := &loadgen.Client{BaseURL: "http://" + ln.Addr().String() + "/v1", HTTPClient: &http.Client{Transport: tr(2)}, FirstTokenTimeout: 300 * time.Millisecond}
		defer c.CloseIdleConnections()
		_, err := c.Do(t.Context(), &loadgen.Request{API: loadgen.Embeddings, Prompt: "cut"})
		assert.Equal(t, metrics.KindTruncated, loadgen.KindOf(err), "%v", err)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, err = c.Do(ctx, &loadgen.Request{API: loadgen.Embeddings, Prompt: "hang"})
		assert.Equal(t, metrics.KindFirstTokenTimeout, loadgen.KindOf(err), "%v", err)
	})
}

// Requests whose client went away leave the pooling model's queue, as
// vLLM aborts them: eight abandoned requests, each a 200 ms step alone,
// do not hold up the next one for eight steps.
func TestPoolingDropsAbandonedRequests(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.Profile{MaxNumSeqs: 1, MaxNumBatchedTokens: 10, PoolStep: 0.200, PoolPerToken: 1e-6, TruthBytes: -1})
	defer srv.Close()
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: loadgen.NewStreamTransport(16)}}
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			_, err := c.Do(ctx, &loadgen.Request{API: loadgen.Embeddings, Prompt: simtokens.Prompt(10, fmt.Sprint(i))})
			errs <- err
		}()
	}
	for range 8 {
		assert.Equal(t, metrics.KindCanceled, loadgen.KindOf(<-errs))
	}
	start := time.Now()
	_, err := c.Do(t.Context(), &loadgen.Request{API: loadgen.Embeddings, Prompt: simtokens.Prompt(10, "next")})
	require.NoError(t, err)
	took := time.Since(start)
	assert.Less(t, took, time.Second, "at most the step in progress and its own: eight would take 1.6 s")
}
