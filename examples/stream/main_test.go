package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/internal/simtokens"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/metrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStreamJSON(t *testing.T) {
	for _, tr := range []string{"stream", "poll", "http"} {
		t.Run(tr, func(t *testing.T) { testStreamJSON(t, tr) })
	}
}

func testStreamJSON(t *testing.T, transport string) {
	p := loadgentest.FastProfile()
	srv := loadgentest.NewServer(p)
	defer srv.Close()

	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"-url", srv.URL + "/v1", "-model", "bench", "-max-tokens", "12", "-prompt", "one two three", "-json", "-transport", transport}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	var r result
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	assert.Equal(t, 12, r.OutputTokens)
	assert.Equal(t, 12, r.CompletionTokens)
	assert.Equal(t, 3+simtokens.MessageTokens+simtokens.ReplyTokens, r.PromptTokens)
	assert.Equal(t, "length", r.FinishReason)
	assert.Equal(t, metrics.SourceUsageDeltas, r.TokenSource)
	assert.Contains(t, out.String(), `"token_source": "usage_deltas"`)
	assert.Empty(t, r.ErrorKind)
	assert.Len(t, r.ChunkTimesMs, r.ContentChunks)
	assert.Positive(t, r.TTFTms)
	assert.Equal(t, r.TTFTms, r.ChunkTimesMs[0])
	assert.Equal(t, 12, simtokens.Count(r.Text))
}

func TestStreamFailureExitsOne(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"-url", srv.URL + "/v1", "-model", "bench+fault=reset-after=3", "-max-tokens", "12", "-json"}, &out, &errOut)
	assert.Equal(t, 1, code)
	var r result
	require.NoError(t, json.Unmarshal(out.Bytes(), &r), "the JSON is printed on failure too")
	assert.Equal(t, metrics.KindTruncated, r.ErrorKind)
	assert.Contains(t, out.String(), `"error_kind": "truncated"`)
	assert.Equal(t, 3, r.OutputTokens)
	assert.NotEmpty(t, r.Error)

	out.Reset()
	code = run(t.Context(), []string{"-url", srv.URL + "/v1", "-model", "bench", "-max-tokens", "4"}, &out, &errOut)
	assert.Equal(t, 0, code)
	assert.Contains(t, out.String(), "first token (TTFT)")
	assert.Contains(t, out.String(), "output tokens 4")
}

// A server that cannot be reached: the timeline says the request was not
// written, and nothing of an answer.
func TestStreamUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"-url", url + "/v1", "-model", "bench", "-max-tokens", "4"}, &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Contains(t, out.String(), "request not written")
	assert.Contains(t, out.String(), "end (failed: connect)")
	assert.NotContains(t, out.String(), "output tokens", "no answer to count")
	assert.Contains(t, errOut.String(), "stream: connect:")
}

func TestStreamRefusesAnUnknownTransport(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run(t.Context(), []string{"-transport", "h3"}, &out, &errOut))
	assert.Contains(t, errOut.String(), `unknown -transport "h3"`)
}

// escapes are what a hostile server puts in its text: clear the screen,
// retitle the window, write the clipboard (OSC 52).
const escapes = "\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b]52;c;ZWNobyBwd25lZA==\x07\u009b31m"

// hasEscape reports whether s holds a byte a terminal acts on.
func hasEscape(s string) bool {
	return strings.ContainsAny(s, "\x1b\x07\u009b\u009d\r")
}

// TestServerTextIsClean points the command at servers whose error message
// and generated text carry terminal escape sequences, and checks that
// none reaches the terminal.
func TestServerTextIsClean(t *testing.T) {
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "bad model" + escapes + " name", "type": "BadRequestError"}})
	}))
	defer refuse.Close()
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"-url", refuse.URL + "/v1", "-model", "x"}, &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut.String(), "bad model")
	assert.Contains(t, errOut.String(), "name")
	assert.False(t, hasEscape(errOut.String()), "stderr: %q", errOut.String())
	assert.False(t, hasEscape(out.String()), "stdout: %q", out.String())

	text := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, s := range []string{"Hello", escapes, "\r\nworld"} {
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": s}}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer text.Close()
	out.Reset()
	errOut.Reset()
	code = run(t.Context(), []string{"-url", text.URL + "/v1", "-model", "x"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	assert.Contains(t, out.String(), "Hello")
	assert.Contains(t, out.String(), "\nworld", "newlines of the text are kept")
	assert.False(t, hasEscape(out.String()), "stdout: %q", out.String())
}

// TestStreamRedactsThePassword checks that a password in -url appears in
// neither the output nor the error.
func TestStreamRedactsThePassword(t *testing.T) {
	const password = "hunter2-stream-pw"
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, p, _ := r.BasicAuth()
		got.Store(p)
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"no user %s"}}`, password)
	}))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://alice:"+password+"@", 1) + "/v1"
	for _, asJSON := range []bool{false, true} {
		args := []string{"-url", u, "-model", "x"}
		if asJSON {
			args = append(args, "-json")
		}
		var out, errOut bytes.Buffer
		assert.Equal(t, 1, run(t.Context(), args, &out, &errOut))
		assert.Equal(t, password, got.Load(), "the password is sent")
		assert.NotContains(t, out.String()+errOut.String(), password)
		assert.Contains(t, out.String()+errOut.String(), "no user xxxxx")
	}
}

// TestHeadersAndBodyExtra: -header reaches the server, -body-extra's
// fields are in the body, a credential header's value is never printed,
// and a -body-extra that is not one JSON object is refused before
// anything is sent.
func TestHeadersAndBodyExtra(t *testing.T) {
	const secret = "gw-stream-secret-77aa"
	var mu sync.Mutex
	var got []string
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.Header.Get("X-Route"), r.Header.Get("X-Gateway-Token"))
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		bodies = append(bodies, m)
		// The server echoes the credential in its error, as some do.
		http.Error(w, `{"error":{"message":"bad token `+secret+`"}}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	dir := t.TempDir()
	extra := filepath.Join(dir, "extra.json")
	require.NoError(t, os.WriteFile(extra, []byte(`{"top_k": 5}`), 0o600))
	var out, errOut bytes.Buffer
	args := []string{"-url", srv.URL + "/v1", "-header", "X-Route: blue", "-header", "X-Gateway-Token: " + secret, "-body-extra", extra}
	assert.Equal(t, 1, run(t.Context(), append(args, "-json"), &out, &errOut))
	assert.Equal(t, 1, run(t.Context(), args, &out, &errOut))
	mu.Lock()
	require.Len(t, bodies, 2)
	assert.Equal(t, []string{"blue", secret, "blue", secret}, got)
	assert.EqualValues(t, 5, bodies[0]["top_k"])
	assert.Equal(t, true, bodies[0]["stream"])
	assert.NotContains(t, out.String()+errOut.String(), secret)
	assert.Contains(t, out.String()+errOut.String(), "bad token", "the server's words are kept")
	mu.Unlock()

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"top_k": `), 0o600))
	errOut.Reset()
	assert.Equal(t, 2, run(t.Context(), []string{"-url", srv.URL + "/v1", "-body-extra", bad}, &out, &errOut))
	assert.Contains(t, errOut.String(), "bad.json")
	mu.Lock()
	assert.Len(t, bodies, 2, "nothing was sent")
	mu.Unlock()
}

// TestToolCallEndToEnd: with -tools, the simulator answers with a tool
// call in each API's own deltas (chat's tool_calls, Responses'
// function_call_arguments.delta, Messages' input_json_delta), and stream
// reports a request that ended in a tool call, every token counted, and
// the finish reason the API gives it.
func TestToolCallEndToEnd(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	for api, finish := range map[string]string{"chat": "tool_calls", "responses": "completed", "messages": "tool_use"} {
		t.Run(api, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(t.Context(), []string{"-url", srv.URL + "/v1", "-model", "bench", "-api", api, "-max-tokens", "9", "-prompt", "weather in Oslo",
				"-tools", "../bench/testdata/tools.json", "-json"}, &out, &errOut)
			require.Equal(t, 0, code, errOut.String())
			var r result
			require.NoError(t, json.Unmarshal(out.Bytes(), &r))
			assert.True(t, r.ToolCall, "the request ended in a tool call")
			assert.Equal(t, 9, r.OutputTokens)
			assert.Equal(t, 9, r.CompletionTokens)
			assert.Equal(t, finish, r.FinishReason)
			assert.Empty(t, r.ErrorKind)
		})
	}
}
