package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/cmd/matrixcmd"
	"github.com/llmload/llmload/internal/harness/hostileserver"
	"github.com/llmload/llmload/internal/harness/logbuffer"
	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/shard"
)

// command runs the command in-process and returns its exit status, its
// standard output and its standard error.
func command(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// withPassword puts user information into an http:// URL.
func withPassword(u, user, password string) string {
	return strings.Replace(u, "http://", "http://"+user+":"+password+"@", 1)
}

// authLog records the Authorization headers a server received, and the
// X-Gateway-Key headers apart.
type authLog struct {
	mu      sync.Mutex
	seen    []string
	gateway []string
}

func (a *authLog) record(r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if h := r.Header.Get("Authorization"); h != "" {
		a.seen = append(a.seen, r.Method+" "+r.URL.Path+": "+h)
	}
	if h := r.Header.Get("X-Gateway-Key"); h != "" {
		a.gateway = append(a.gateway, r.Method+" "+r.URL.Path+": "+h)
	}
}

func (a *authLog) gateways() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.gateway...)
}

func (a *authLog) all() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

// TestSecretsStayWithTheirOrigin runs against a server that redirects its
// /metrics and /tokenize to another origin (another port of the same
// host), with an API key and a password in -url. The other origin must
// receive no credentials, the server must receive them, and no output of
// the run, nor of -render and -compare, may hold the key or the password.
// A credential given with -header (X-Gateway-Key) is kept as the key is.
func TestSecretsStayWithTheirOrigin(t *testing.T) {
	longtest.Skip(t)
	const key = "sk-llmload-origin-5b4a3c2d1e"
	const password = "pw-origin-8c7d6e5f"
	const gatewayKey = "gw-llmload-header-1a2b3c4d"
	t.Setenv("LLMLOAD_TEST_KEY", key)

	var elsewhere authLog
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.record(r)
		http.NotFound(w, r)
	}))
	defer other.Close()
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) // same host, another name and port

	p := loadgentest.SeedProfile()
	p.Speed = 20
	sim := loadgentest.NewHandler(p)
	defer sim.Close()
	var home authLog
	var redirected atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		home.record(r)
		switch r.URL.Path {
		case "/metrics":
			redirected.Add(1)
			http.Redirect(w, r, otherURL+"/metrics", http.StatusFound)
		case "/tokenize":
			redirected.Add(1)
			http.Redirect(w, r, other.URL+"/tokenize", http.StatusTemporaryRedirect)
		default:
			sim.ServeHTTP(w, r)
		}
	}))
	defer srv.Close()

	dir := t.TempDir()
	results := filepath.Join(dir, "r.json")
	args := []string{"-url", withPassword(srv.URL, "alice", password) + "/v1", "-api-key-env", "LLMLOAD_TEST_KEY",
		"-contexts", "0", "-concurrency", "1", "-prefill", "", "-duration", "3s", "-max-tokens", "64",
		"-results", results, "-header", "X-Gateway-Key: " + gatewayKey, "-header", "X-Route: blue"}
	var outputs []string
	code, stdout, stderr := command(t, t.Context(), args...)
	require.Equal(t, 0, code, stderr)
	outputs = append(outputs, stdout, stderr)
	assert.Positive(t, redirected.Load(), "the server redirected")
	assert.Empty(t, elsewhere.all(), "no credentials went to the other origin")
	assert.Empty(t, elsewhere.gateways(), "no header credential went to the other origin")
	assert.NotEmpty(t, home.gateways(), "the server got the header credential")
	for _, h := range home.gateways() {
		assert.Equal(t, gatewayKey, h[strings.Index(h, ": ")+2:], h)
	}
	assert.NotEmpty(t, home.all(), "the server got its credentials")
	for _, h := range home.all() {
		assert.Equal(t, "Bearer "+key, h[strings.Index(h, ": ")+2:], h)
	}

	// Every report of the run, rendered again, and compared.
	for _, format := range []string{"table", "markdown", "csv", "json", "html"} {
		code, stdout, stderr := command(t, t.Context(), "-render", results, "-format", format)
		require.Equal(t, 0, code, stderr)
		outputs = append(outputs, stdout, stderr)
		code, stdout, stderr = command(t, t.Context(), "-compare", "-format", format, results, results)
		require.Equal(t, 0, code, stderr)
		outputs = append(outputs, stdout, stderr)
	}
	saved, err := os.ReadFile(results)
	require.NoError(t, err)
	outputs = append(outputs, string(saved))
	assert.Contains(t, string(saved), "alice:xxxxx@", "the URL is kept, its password replaced")
	for i, s := range outputs {
		assert.NotContains(t, s, key, "output %d", i)
		assert.NotContains(t, s, password, "output %d", i)
		assert.NotContains(t, s, gatewayKey, "output %d", i)
	}

	// A file saved before passwords were redacted renders without it.
	old, err := matrix.LoadFile(results)
	require.NoError(t, err)
	old.Spec.URL = strings.Replace(old.Spec.URL, "xxxxx", password, 1)
	old.Server.URL = old.Spec.URL
	legacy := filepath.Join(dir, "legacy.json")
	require.NoError(t, matrix.SaveFile(legacy, old))
	for _, format := range []string{"table", "json", "html"} {
		code, stdout, stderr := command(t, t.Context(), "-render", legacy, "-format", format)
		require.Equal(t, 0, code, stderr)
		assert.NotContains(t, stdout+stderr, password, format)
		assert.Contains(t, stdout, "alice:xxxxx@", format)
	}

	// Resuming asks for the password again rather than sending "xxxxx".
	code, _, stderr = command(t, t.Context(), "-resume", results)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "give it again with -url")
	assert.NotContains(t, stderr, password)
}

// TestPasswordNotInErrors points the command at a URL with a password
// where nothing listens: the errors name the URL without its password.
func TestPasswordNotInErrors(t *testing.T) {
	const password = "pw-errors-1a2b3c4d"
	dead := httptest.NewServer(http.NotFoundHandler())
	u := dead.URL
	dead.Close()
	dir := t.TempDir()
	code, stdout, stderr := command(t, t.Context(), "-url", withPassword(u, "bob", password)+"/v1",
		"-contexts", "0", "-concurrency", "1", "-prefill", "4K", "-duration", "1s", "-results", filepath.Join(dir, "r.json"))
	assert.NotEqual(t, 0, code)
	assert.NotContains(t, stdout+stderr, password)
	assert.Contains(t, stderr, "bob:xxxxx@")
	saved, err := os.ReadFile(filepath.Join(dir, "r.json"))
	require.NoError(t, err)
	assert.NotContains(t, string(saved), password)
}

// escapes are what a hostile server puts in its text: clear the screen,
// retitle the window, write the clipboard (OSC 52).
const escapes = "\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b]52;c;ZWNobyBwd25lZA==\x07\u009b31m"

// TestServerEscapesNeverPrinted runs against a server whose every error
// message carries terminal escape sequences: no output, log or report may
// hold them.
func TestServerEscapesNeverPrinted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "no such model" + escapes + " here", "type": "BadRequestError"}})
	}))
	defer srv.Close()
	dir := t.TempDir()
	results := filepath.Join(dir, "r.json")
	code, stdout, stderr := command(t, t.Context(), "-url", srv.URL+"/v1", "-model", "x",
		"-contexts", "0", "-concurrency", "1", "-prefill", "1K", "-duration", "1s", "-results", results)
	assert.Equal(t, 1, code, "no cell could be measured")
	assert.Contains(t, stderr, "no such model")
	outputs := []string{stdout, stderr}
	for _, format := range []string{"table", "markdown", "csv", "html"} {
		code, out, errOut := command(t, t.Context(), "-render", results, "-format", format)
		require.Equal(t, 0, code, errOut)
		if format != "csv" { // CSV has numbers and statuses only
			assert.Contains(t, out, "no such model", format)
		}
		outputs = append(outputs, out, errOut)
	}
	for i, s := range outputs {
		assert.False(t, strings.ContainsAny(s, "\x1b\x07\u009b"), "output %d: %q", i, s)
	}
}

// emptyServer answers every request with a stream of no tokens: only
// [DONE]. With tokensForScout, a request with max_tokens 1 gets its one
// token, so that only the cell's load finds nothing.
func emptyServer(tokensForScout bool) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/completions") {
			http.NotFound(w, r)
			return
		}
		var req struct {
			MaxTokens int `json:"max_tokens"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "text/event-stream")
		if tokensForScout && req.MaxTokens == 1 {
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}`+"\n\n")
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":20,"completion_tokens":1}}`+"\n\n")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
}

// TestEmptySuccessesAreFailed checks that a server completing requests
// with no tokens is Failed, with that reason, not Over capacity.
func TestEmptySuccessesAreFailed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		scout  bool
		reason string
	}{
		{"every request", false, "the server completed 1 request with no tokens"},
		{"the load only", true, "requests with no tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := emptyServer(tc.scout)
			defer srv.Close()
			results := filepath.Join(t.TempDir(), "r.json")
			code, _, stderr := command(t, t.Context(), "-url", srv.URL+"/v1", "-model", "x",
				"-contexts", "0", "-concurrency", "2", "-prefill", "", "-duration", "1s", "-max-tokens", "16",
				"-warmup-min", "0s", "-warmup-timeout", "1s", "-warmup-per-k", "0s", "-results", results, "-quiet")
			assert.Equal(t, 1, code, "nothing was measured")
			assert.Contains(t, stderr, "no cell could be measured (1 Failed)")
			r, err := matrix.LoadFile(results)
			require.NoError(t, err)
			require.Len(t, r.Cells, 1)
			assert.Equal(t, matrix.Failed, r.Cells[0].Status)
			assert.Contains(t, r.Cells[0].Reason, tc.reason)
			assert.Regexp(t, `the server completed \d+ requests? with no tokens`, r.Cells[0].Reason)
		})
	}
}

// TestNothingSavedNothingClaimed interrupts a run during server discovery
// and gives a threshold that cannot be saved: neither may claim that
// results were saved or can be resumed.
func TestNothingSavedNothingClaimed(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer hang.Close()
	results := filepath.Join(t.TempDir(), "r.json")
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(500*time.Millisecond, cancel)
	code, _, stderr := command(t, ctx, "-url", hang.URL+"/v1", "-contexts", "0", "-concurrency", "1", "-prefill", "",
		"-results", results)
	assert.Equal(t, 1, code)
	assert.NotContains(t, stderr, "results saved")
	assert.NotContains(t, stderr, "-resume")
	assert.Contains(t, stderr, "nothing was saved")
	assert.NoFileExists(t, results)

	for _, v := range []string{"NaN", "-0.5", "1.5", "Inf", "0"} {
		code, _, stderr = command(t, t.Context(), "-error-threshold", v, "-results", results)
		assert.Equal(t, 2, code, v)
		assert.Contains(t, stderr, "threshold", v)
		assert.NotContains(t, stderr, "results saved", v)
		assert.NoFileExists(t, results)
	}
}

// TestRefusesWhatCannotWork gives URLs and flags that cannot work: each is
// refused at once, with status 2 and a message that says why, before any
// plan or request.
func TestRefusesWhatCannotWork(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-url", "ftp://x"}, "scheme must be http or https"},
		{[]string{"-url", "http://[::1"}, "missing ']' in host"},
		{[]string{"-url", "http://u:pw-refused-77@[::1/v1"}, "u:xxxxx@"},
		{[]string{"-url", "http:///v1"}, "names no host"},
		{[]string{"-url", "http://127.0.0.1:99999/v1"}, "port 99999"},
		{[]string{"-concurrency", "1e9"}, "-concurrency holds 1000000000, above 16384"},
		{[]string{"-concurrency", "40000", "-shards", "2", "-listen", "127.0.0.1:0"}, "holds 40000, 20000 a shard over 2 shards, above 16384"},
		{[]string{"-concurrency", "0"}, "-concurrency holds 0, below 1"},
		{[]string{"-contexts", "0,100000K"}, "-contexts holds 102400000, above"},
		{[]string{"-prefill", "100000K"}, "-prefill holds 102400000, above"},
		{[]string{"-speed", "NaN"}, "-speed"},
		{[]string{"-speed", "-1"}, "-speed"},
		{[]string{"-duration", "0s"}, "-duration"},
		{[]string{"-max-tokens", "0"}, "-max-tokens"},
		{[]string{"-kv-tokens", "-5"}, "negative"},
		{[]string{"-warmup-timeout", "-1s"}, "-warmup-timeout is -1s: a negative warm-up"},
		{[]string{"-warmup-min", "-1s", "-concurrency", "0"}, "-concurrency holds 0, below 1: a concurrency is 1 request or more; -warmup-min is -1s"},
		{[]string{"-error-threshold", "2"}, "-error-threshold is 2: an error threshold is a share"},
		{[]string{"-shards", "9223372036854775807", "-listen", "127.0.0.1:0"}, "-shards 9223372036854775807: at most 1024"},
		{[]string{"-shards", "100000000", "-listen", "127.0.0.1:0"}, "-shards 100000000: at most 1024"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			results := filepath.Join(t.TempDir(), "r.json")
			start := time.Now()
			code, stdout, stderr := command(t, t.Context(), append(tc.args, "-results", results)...)
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, tc.want)
			assert.NotContains(t, stderr, "Plan")
			assert.NotContains(t, stderr, "Spec.", "the user typed flags, not the library's fields")
			assert.NotContains(t, stderr, "pw-refused-77")
			assert.Empty(t, stdout)
			assert.NoFileExists(t, results)
			assert.Less(t, time.Since(start), 5*time.Second)
		})
	}
}

// TestNothingMeasuredExitsOne plans a matrix whose every cell is predicted
// over capacity (contexts beyond the simulator's max_model_len): the run
// is complete, but it measured nothing.
func TestNothingMeasuredExitsOne(t *testing.T) {
	results := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := command(t, t.Context(), "-contexts", "300K", "-concurrency", "1,2", "-prefill", "",
		"-results", results, "-quiet")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no cell could be measured (2 Over capacity)")
	assert.Contains(t, stdout, "Over capacity", "the report is printed all the same")
	r, err := matrix.LoadFile(results)
	require.NoError(t, err)
	assert.True(t, r.Complete)
}

// TestResumeKeepsTheSpeed finishes, with -resume, a simulated run made at
// -speed 10: the resumed cell runs at 10× too, so its figures agree with
// the ones measured before the interruption, within a factor of two.
func TestResumeKeepsTheSpeed(t *testing.T) {
	longtest.Skip(t)
	results := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := command(t, t.Context(), "-contexts", "0", "-concurrency", "1,4", "-prefill", "", "-duration", "4s",
		"-max-tokens", "2048", "-speed", "10", "-results", results, "-quiet")
	require.Equal(t, 0, code, stderr)
	r, err := matrix.LoadFile(results)
	require.NoError(t, err)
	require.Len(t, r.Cells, 2)
	before := *r.Cells[1].Measurement

	// As if the run had been interrupted before its last cell.
	r.Cells[1].Status, r.Cells[1].Reason, r.Cells[1].Measurement = matrix.StatusUnknown, "", nil
	r.Complete = false
	require.NoError(t, matrix.SaveFile(results, r))

	code, _, stderr = command(t, t.Context(), "-resume", results, "-quiet", "-speed", "20")
	assert.Equal(t, 2, code, "a different speed is refused")
	assert.Contains(t, stderr, "keeps the run's speed (10×)")

	code, _, stderr = command(t, t.Context(), "-resume", results, "-quiet")
	require.Equal(t, 0, code, stderr)
	r, err = matrix.LoadFile(results)
	require.NoError(t, err)
	assert.EqualValues(t, 10, r.Server.Speed)
	after := r.Cells[1].Measurement
	require.NotNil(t, after)
	// Another speed would be the default, 1×, ten times slower: within a
	// factor of two tells them apart however a loaded machine slows one
	// of the two runs (by 25% and more under the race detector).
	for _, f := range []struct {
		name          string
		before, after float64
	}{
		{"per-request tok/s", before.PerRequestTokensPerSec, after.PerRequestTokensPerSec},
		{"total tok/s", before.OutputTokensPerSec, after.OutputTokensPerSec},
	} {
		t.Logf("%s: %.1f before, %.1f resumed", f.name, f.before, f.after)
		assert.InDelta(t, 1, f.after/f.before, 0.5, "%s %.1f before, %.1f resumed: the resumed cell ran at another speed", f.name, f.before, f.after)
	}
}

// TestRenderChangesNothing renders a finished results file in every format:
// the file is byte-identical afterwards, and each rendering equals what
// the run itself printed.
func TestRenderChangesNothing(t *testing.T) {
	longtest.Skip(t)
	dir := t.TempDir()
	results := filepath.Join(dir, "r.json")
	printed := map[string]string{}
	code, stdout, stderr := command(t, t.Context(), small(results, "-format", "html")...)
	require.Equal(t, 0, code, stderr)
	printed["html"] = stdout
	before, err := os.ReadFile(results)
	require.NoError(t, err)
	info, err := os.Stat(results)
	require.NoError(t, err)

	for _, format := range []string{"table", "markdown", "csv", "json", "html"} {
		code, stdout, stderr := command(t, t.Context(), "-render", results, "-format", format)
		require.Equal(t, 0, code, stderr)
		assert.NotEmpty(t, stdout, format)
		if want, ok := printed[format]; ok {
			assert.Equal(t, want, stdout, "%s: -render prints what the run printed", format)
		}
		if format == "json" {
			assert.Equal(t, string(before), stdout, "the JSON rendering is the file")
		}
		out := filepath.Join(dir, "report."+format)
		code, _, stderr = command(t, t.Context(), "-render", results, "-format", format, "-o", out)
		require.Equal(t, 0, code, stderr)
		written, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Equal(t, stdout, string(written), format)
	}
	after, err := os.ReadFile(results)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the results file is unchanged")
	info2, err := os.Stat(results)
	require.NoError(t, err)
	assert.Equal(t, info.ModTime(), info2.ModTime())

	code, _, stderr = command(t, t.Context(), "-render", results, "-o", results, "-format", "table")
	assert.Equal(t, 2, code, "-render never writes the file it renders")
	assert.Contains(t, stderr, "never writes it")
	after, _ = os.ReadFile(results)
	assert.Equal(t, before, after)
}

// TestHostileServer runs small matrices against internal/harness/hostileserver:
// redirects of every request (chat, /metrics, /tokenize) to another
// origin, a server that answers only [DONE], and error messages full of
// escape sequences.
func TestHostileServer(t *testing.T) {
	const key = "sk-llmload-hostile-0f1e2d3c"
	const password = "pw-hostile-9a8b7c6d"
	t.Setenv("LLMLOAD_TEST_KEY", key)
	srv := hostileserver.New(hostileserver.OK)
	defer srv.Close()
	base := func(m hostileserver.Mode) string { return withPassword(srv.BaseURL(m), "dave", password) }
	matrixArgs := func(url, results string) []string {
		return []string{"-url", url, "-model", "m", "-api-key-env", "LLMLOAD_TEST_KEY",
			"-contexts", "0", "-concurrency", "1", "-prefill", "", "-duration", "1s", "-max-tokens", "16",
			"-warmup-min", "0s", "-warmup-flow", "0s", "-warmup-timeout", "2s", "-warmup-per-k", "0s", "-results", results}
	}

	t.Run("redirects", func(t *testing.T) {
		results := filepath.Join(t.TempDir(), "r.json")
		_, stdout, stderr := command(t, t.Context(), matrixArgs(base(hostileserver.Redirect), results)...)
		for _, a := range srv.Authorizations(hostileserver.Other) {
			assert.Empty(t, a, "a credential reached the other origin")
		}
		assert.NotEmpty(t, srv.Authorizations(hostileserver.Other), "requests were redirected")
		saved, _ := os.ReadFile(results)
		for _, s := range []string{stdout, stderr, string(saved)} {
			assert.NotContains(t, s, key)
			assert.NotContains(t, s, password)
		}
	})

	t.Run("done only", func(t *testing.T) {
		results := filepath.Join(t.TempDir(), "r.json")
		code, _, stderr := command(t, t.Context(), matrixArgs(srv.BaseURL(hostileserver.DoneOnly), results)...)
		assert.Equal(t, 1, code)
		r, err := matrix.LoadFile(results)
		require.NoError(t, err, stderr)
		require.Len(t, r.Cells, 1)
		assert.Equal(t, matrix.Failed, r.Cells[0].Status)
		assert.Contains(t, r.Cells[0].Reason, "with no tokens")
	})

	t.Run("escapes", func(t *testing.T) {
		results := filepath.Join(t.TempDir(), "r.json")
		code, stdout, stderr := command(t, t.Context(), matrixArgs(srv.BaseURL(hostileserver.Escapes), results)...)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "try again", "the server's words are shown")
		outputs := []string{stdout, stderr}
		for _, format := range []string{"table", "markdown", "html"} {
			_, out, errOut := command(t, t.Context(), "-render", results, "-format", format)
			outputs = append(outputs, out, errOut)
		}
		for i, s := range outputs {
			assert.False(t, strings.ContainsAny(s, "\x1b\x07"), "output %d: %q", i, s)
		}
	})
}

// TestRogueLeader: a leader that holds the fleet's secret and names a
// third party's server to a follower given -api-key-env or any -header
// and no -url gets nothing sent there: the follower refuses, names the
// server and what it keeps from it, and leaves; with -allow-leader-url it
// sends to it and says so. -join's password, the key and the headers'
// values are in none of the follower's output.
func TestRogueLeader(t *testing.T) {
	longtest.Skip(t)
	const key = "sk-llmload-rogue-leader-5e6f7a8b"
	const joinPassword = "pw-join-1a2b3c4d"
	const headerKey = "hk-llmload-rogue-leader-9c0d1e2f"
	t.Setenv("LLMLOAD_TEST_KEY", key)
	t.Setenv(fleetTokenEnv, fleetToken)
	third := hostileserver.New(hostileserver.OK)
	defer third.Close()
	spec := matrix.Spec{URL: third.BaseURL(hostileserver.OK), Model: "m", Contexts: []int{0}, Concurrency: []int{2}, Prefill: []int{}}
	follower := func(t *testing.T, extra ...string) (int, string, *shard.Leader) {
		log := &logbuffer.Buffer{}
		// A follower that left is taken for gone after Silence: Close waits
		// no longer for it.
		leader := &shard.Leader{Token: fleetToken, Spec: spec, Followers: 1, Log: log, Silence: 2 * time.Second}
		hs := httptest.NewServer(leader)
		defer hs.Close()
		done := make(chan struct{})
		var code int
		var stdout, stderr string
		go func() {
			defer close(done)
			code, stdout, stderr = command(t, t.Context(), append([]string{"-join", withPassword(hs.URL, "lead", joinPassword),
				"-fleet-token-env", fleetTokenEnv, "-join-timeout", "5s"}, extra...)...)
		}()
		// A follower that stays is told the run is over once it joined.
		for !waitFor(t, 100*time.Millisecond, func() bool { return strings.Contains(log.String(), "joined") }) {
			select {
			case <-done:
				leader.Close(t.Context())
				return code, stdout + stderr, leader
			default:
			}
		}
		leader.Close(t.Context())
		<-done
		return code, stdout + stderr, leader
	}

	keyFlags := []string{"-api-key-env", "LLMLOAD_TEST_KEY"}
	for _, tc := range []struct {
		name  string
		flags []string
		keeps string
	}{
		{"key", keyFlags, "API key (-api-key-env LLMLOAD_TEST_KEY) goes only to a server given here"},
		{"any header", []string{"-header", "X-Route: blue"}, "-header X-Route goes only to a server given here"},
		{"key and headers", append([]string{"-header", "X-Route: blue", "-header", "X-Auth-Token: " + headerKey}, keyFlags...),
			"API key (-api-key-env LLMLOAD_TEST_KEY) and -header X-Auth-Token, X-Route goes only"},
	} {
		t.Run("refused "+tc.name, func(t *testing.T) {
			code, out, _ := follower(t, tc.flags...)
			assert.Equal(t, 1, code, out)
			assert.Contains(t, out, "the leader names the server "+third.BaseURL(hostileserver.OK))
			assert.Contains(t, out, "this shard's "+tc.keeps)
			assert.Empty(t, third.Requests(), "nothing was sent to the third party")
			for _, secret := range []string{key, headerKey, joinPassword} {
				assert.NotContains(t, out, secret)
			}
		})
	}
	t.Run("allowed", func(t *testing.T) {
		code, out, _ := follower(t, append([]string{"-allow-leader-url", "-header", "X-Api-Key: " + headerKey}, keyFlags...)...)
		assert.Equal(t, 0, code, out)
		assert.Contains(t, out, "sending this shard's streams to "+third.BaseURL(hostileserver.OK)+" (named by the leader)")
		for _, secret := range []string{key, headerKey, joinPassword} {
			assert.NotContains(t, out, secret)
		}
	})
	t.Run("given -url", func(t *testing.T) {
		code, out, _ := follower(t, "-url", third.BaseURL(hostileserver.OK), "-header", "X-Route: blue")
		assert.Equal(t, 0, code, out)
		assert.Contains(t, out, "(given with -url)")
	})
	t.Run("no secret", func(t *testing.T) {
		code, _, stderr := command(t, t.Context(), "-join", "http://127.0.0.1:1", "-url", third.BaseURL(hostileserver.OK))
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, "-join needs the fleet's secret")
	})
}

// TestResultsNeverClobbered: -results at a symbolic link, a named pipe, an
// existing run's file or a file another run holds is refused before the
// run starts, and each is left as it was; -resume refuses flags that
// disagree with the run it finishes.
func TestResultsNeverClobbered(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious.txt")
	require.NoError(t, os.WriteFile(target, []byte("keep me"), 0o644))
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink(target, link))
	pipe := filepath.Join(dir, "pipe.json")
	require.NoError(t, syscall.Mkfifo(pipe, 0o644))
	existing := filepath.Join(dir, "existing.json")
	require.NoError(t, os.WriteFile(existing, []byte(`{"schema":"another run"}`), 0o644))
	held := filepath.Join(dir, "held.json")
	unlock, err := matrixcmd.ClaimResults(held, "", false) // another run holds it
	require.NoError(t, err)
	defer unlock()
	args := []string{"-contexts", "0", "-concurrency", "1", "-prefill", "", "-duration", "1s"}
	for _, tc := range []struct {
		path, want string
	}{
		{link, "is not a regular file (L---------)"},
		{pipe, "is not a regular file (p---------)"},
		{existing, "holds another run's results"},
		{held, "is another run's, which is still running"},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			start := time.Now()
			code, _, stderr := command(t, t.Context(), append(args, "-results", tc.path)...)
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, tc.want)
			assert.Less(t, time.Since(start), 5*time.Second, "refused before the run")
		})
	}
	b, _ := os.ReadFile(target)
	assert.Equal(t, "keep me", string(b), "the link's target is untouched")
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the link is still a link")
	fi, err = os.Lstat(pipe)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeNamedPipe, "the pipe is still a pipe")
	b, _ = os.ReadFile(existing)
	assert.Equal(t, `{"schema":"another run"}`, string(b))

	// The library refuses too.
	assert.ErrorContains(t, matrix.SaveFile(link, &matrix.Results{}), "is a symbolic link, not a regular file")
	assert.ErrorContains(t, matrix.SaveFile(pipe, &matrix.Results{}), "is a named pipe, not a regular file")

	saved, err := matrix.LoadFile("../../matrix/testdata/results-v1.json")
	require.NoError(t, err)
	resumable := filepath.Join(dir, "resumable.json")
	require.NoError(t, matrix.SaveFile(resumable, saved))
	for _, flag := range [][]string{{"-concurrency", "3"}, {"-contexts", "0,1K"}, {"-duration", "7s"}, {"-max-tokens", "5"}} {
		code, _, stderr := command(t, t.Context(), append([]string{"-resume", resumable}, flag...)...)
		assert.Equal(t, 2, code, stderr)
		assert.Contains(t, stderr, "-resume finishes the run as it was planned ("+flag[0])
	}
}
