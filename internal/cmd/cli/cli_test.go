package cli_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/internal/cmd/cli"
	"github.com/llmload/llmload/loadgen"
)

func TestMain(m *testing.M) {
	if os.Getenv("CLI_TEST_CHILD") != "" {
		child()
		return
	}
	goleak.VerifyTestMain(m)
}

// child is a command that waits to be interrupted, says so, then waits for
// the second signal.
func child() {
	cli.Main(func(ctx context.Context, _ []string, stdout, _ io.Writer) int {
		io.WriteString(stdout, "ready\n")
		<-ctx.Done()
		io.WriteString(stdout, "cause: "+context.Cause(ctx).Error()+"\n")
		if os.Getenv("CLI_TEST_CHILD") == "return" {
			return 7
		}
		time.Sleep(time.Minute) // the second signal ends the process
		return 0
	}, "stopping, keeping what finished")
}

func TestInterruptsCancelsWithACause(t *testing.T) {
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(s.String(), func(t *testing.T) {
			var stderr bytes.Buffer
			ctx, stop := cli.Interrupts(context.Background(), &stderr, "stopping the run")
			defer stop()
			require.NoError(t, syscall.Kill(os.Getpid(), s))
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("the signal did not cancel the context")
			}
			assert.ErrorIs(t, context.Cause(ctx), cli.ErrInterrupted)
			assert.Eventually(t, func() bool { return bytes.Contains(stderr.Bytes(), []byte("interrupted: stopping the run")) }, 5*time.Second, 10*time.Millisecond)
		})
	}
}

// TestSecondSignalQuits runs a command in a child process: the first
// signal cancels its work, which returns its own status; a second signal
// to one that does not return ends it with the shell's status for that
// signal.
func TestSecondSignalQuits(t *testing.T) {
	for _, tc := range []struct {
		mode string
		sig  syscall.Signal
		code int
	}{
		{"return", syscall.SIGTERM, 7},
		{"hang", syscall.SIGINT, 130},
		{"hang", syscall.SIGTERM, 143},
	} {
		t.Run(tc.mode+"/"+tc.sig.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "CLI_TEST_CHILD="+tc.mode)
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			buf := make([]byte, 6)
			_, err = io.ReadFull(out, buf)
			require.NoError(t, err)
			require.Equal(t, "ready\n", string(buf))
			require.NoError(t, cmd.Process.Signal(tc.sig))
			if tc.mode == "hang" {
				line := make([]byte, len("cause: interrupted\n"))
				_, err = io.ReadFull(out, line)
				require.NoError(t, err)
				assert.Equal(t, "cause: interrupted\n", string(line))
				require.NoError(t, cmd.Process.Signal(tc.sig))
			}
			rest, _ := io.ReadAll(out)
			err = cmd.Wait()
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "exit: %v (stdout %q)", err, rest)
			assert.Equal(t, tc.code, ee.ExitCode())
			assert.Contains(t, stderr.String(), "interrupted: stopping, keeping what finished")
		})
	}
}

func TestClientFlags(t *testing.T) {
	var f cli.ClientFlags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs, "http://127.0.0.1:8000/v1")
	t.Setenv("CLI_TEST_KEY", "sk-cli-test-0123456789")
	require.NoError(t, fs.Parse([]string{"-api", "completions", "-api-key-env", "CLI_TEST_KEY", "-transport", "http", "-model", "m"}))
	c, err := f.Client(4)
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:8000/v1", c.BaseURL)
	assert.Equal(t, "sk-cli-test-0123456789", c.APIKey)
	assert.Equal(t, loadgen.Completions, f.API)
	assert.Equal(t, "key xxxxx", f.Redactor().Redact("key sk-cli-test-0123456789"))

	require.Error(t, fs.Parse([]string{"-api", "fax"}))
	f.Transport = "carrier-pigeon"
	_, err = f.Client(1)
	assert.ErrorContains(t, err, "-transport")
	f.Transport, f.KeyEnv = "stream", "CLI_TEST_EMPTY_KEY"
	_, err = f.Client(1)
	assert.ErrorContains(t, err, "CLI_TEST_EMPTY_KEY is empty")
}

// TestWarnShortSecrets: an API key or a credential header under
// redact.MinLen bytes is named in one warning, its value not shown, and
// the redactor still leaves the rest of a message alone; long ones, and
// headers that carry no credential, are not named.
func TestWarnShortSecrets(t *testing.T) {
	t.Setenv("CLI_TEST_KEY", "k3y42")
	var f cli.ClientFlags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs, "http://127.0.0.1:8000/v1")
	require.NoError(t, fs.Parse([]string{"-api-key-env", "CLI_TEST_KEY", "-header", "X-Api-Key: 12345",
		"-header", "Authorization: Bearer sk-long-enough-0123", "-header", "X-Route: a"}))
	var w bytes.Buffer
	f.WarnShortSecrets(&w)
	assert.Equal(t, "warning: the API key (-api-key-env CLI_TEST_KEY) is 5 bytes; the value of -header X-Api-Key is 5 bytes: "+
		"a secret under 8 bytes is kept out of what llmload prints and saves only where it stands as a whole value\n", w.String())
	assert.Equal(t, "key xxxxx refused; 123456 k3y421 stay", f.Redactor().Redact("key k3y42 refused; 123456 k3y421 stay"))

	t.Setenv("CLI_TEST_KEY", "sk-long-enough-4567")
	w.Reset()
	var g cli.ClientFlags
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	g.Register(fs, "")
	require.NoError(t, fs.Parse([]string{"-api-key-env", "CLI_TEST_KEY", "-header", "X-Route: a"}))
	g.WarnShortSecrets(&w)
	assert.Empty(t, w.String())
}

func TestTransportFlag(t *testing.T) {
	for name, want := range map[string]bool{"stream": false, "poll": true} {
		f := cli.ClientFlags{Transport: name}
		rt, err := f.RoundTripper(2)
		require.NoError(t, err)
		st, ok := rt.(*loadgen.StreamTransport)
		require.True(t, ok, "-transport %s: %T", name, rt)
		assert.Equal(t, want, st.Poll, "-transport %s", name)
	}
	f := cli.ClientFlags{Transport: "http"}
	rt, err := f.RoundTripper(2)
	require.NoError(t, err)
	assert.IsType(t, &http.Transport{}, rt)
}

// TestHTTPClientOriginOnly: the plain client sends the API key and the
// -header headers to -url's origin and to no other.
func TestHTTPClientOriginOnly(t *testing.T) {
	seen := make(chan http.Header, 2)
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen <- r.Header.Clone() })
	own, other := httptest.NewServer(record), httptest.NewServer(record)
	defer own.Close()
	defer other.Close()
	t.Setenv("CLI_TEST_KEY", "sk-cli-test-0123456789")
	f := cli.ClientFlags{URL: own.URL + "/v1", KeyEnv: "CLI_TEST_KEY", Transport: "http"}
	require.NoError(t, f.Headers.Set("X-Tenant: bench"))
	hc, err := f.HTTPClient(1)
	require.NoError(t, err)
	defer hc.CloseIdleConnections()
	for _, u := range []string{own.URL + "/metrics", other.URL + "/metrics"} {
		resp, err := hc.Get(u)
		require.NoError(t, err)
		resp.Body.Close()
	}
	h := <-seen
	assert.Equal(t, "Bearer sk-cli-test-0123456789", h.Get("Authorization"))
	assert.Equal(t, "bench", h.Get("X-Tenant"))
	h = <-seen
	assert.Empty(t, h.Get("Authorization"), "another origin")
	assert.Empty(t, h.Get("X-Tenant"), "another origin")
}

// -api embeddings and rerank are refused by the commands that measure
// generation, naming bench; the generation APIs pass.
func TestAPIsOfTheCommands(t *testing.T) {
	for _, api := range []loadgen.API{loadgen.Embeddings, loadgen.Rerank} {
		f := cli.ClientFlags{API: api}
		err := f.Generating("matrix")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "bench -api "+api.String())
	}
	for _, api := range []loadgen.API{loadgen.Chat, loadgen.Completions, loadgen.Responses, loadgen.Messages} {
		f := cli.ClientFlags{API: api}
		assert.NoError(t, f.Generating("matrix"))
	}
}
