// Package cli holds what llmload's commands share, so each command is its
// flags and its work: the handling of Ctrl-C and SIGTERM, the flags that
// make a client (-url, -model, -api, -api-key-env, -header, -transport),
// the flags that shape a request body (-body-extra, -tools), the built-in
// simulator's flags, and writing a report to a file or standard output.
// What only one command needs lives in its own package (matrixcmd,
// benchcmd).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/llmload/llmload/internal/redact"
	"github.com/llmload/llmload/loadgen"
)

// ErrInterrupted is the cause of a command's context after SIGINT
// (Ctrl-C) or SIGTERM (what Kubernetes and most supervisors send).
var ErrInterrupted = errors.New("interrupted")

// A Command is a command's work: it reads its flags from args, writes to
// stdout and stderr, and returns the process's exit status.
type Command func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// Main runs cmd on the process's arguments and exits with its status. The
// first SIGINT or SIGTERM cancels cmd's context with [ErrInterrupted],
// after saying so on standard error with interrupted (what the command
// does on an interruption, such as "stopping the run, keeping whatever it
// finished"); a second ends the process at once, with status 130 after
// SIGINT and 143 after SIGTERM, as a shell reports them.
func Main(cmd Command, interrupted string) {
	ctx, stop := Interrupts(context.Background(), os.Stderr, interrupted)
	code := cmd(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Interrupts returns a context that the first SIGINT or SIGTERM cancels
// with [ErrInterrupted], as [Main] does, and a function that stops
// watching for them.
func Interrupts(parent context.Context, stderr io.Writer, interrupted string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
		case <-done:
			return
		}
		if interrupted != "" {
			fmt.Fprintf(stderr, "\ninterrupted: %s (again to quit at once)\n", interrupted)
		}
		cancel(ErrInterrupted)
		select {
		case s := <-sig:
			if s == syscall.SIGTERM {
				os.Exit(143)
			}
			os.Exit(130)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		close(done)
		cancel(nil)
	}
}

// ClientFlags are the flags that say which server a command talks to and
// how: -url, -model, -api, -api-key-env and -transport. Register them with
// [ClientFlags.Register], then build the client with [ClientFlags.Client]
// after the flags are parsed.
type ClientFlags struct {
	URL       string
	Model     string
	API       loadgen.API
	KeyEnv    string
	Transport string
	// Headers are added to every request.
	Headers Headers
}

// Register defines the flags on fs, with url as -url's default ("" where
// the command's default is a simulator of its own).
func (f *ClientFlags) Register(fs *flag.FlagSet, url string) {
	sim := ""
	if url == "" {
		sim = " (empty: the built-in simulator)"
	}
	f.register(fs, url, "base URL of the OpenAI-compatible API, such as http://127.0.0.1:8000/v1"+sim)
	fs.TextVar(&f.API, "api", loadgen.Chat, "the API to call: chat, completions, responses (OpenAI's Responses API) or messages (Anthropic's Messages API); in bench also embeddings or rerank")
}

// RegisterServer defines the flags of a command that asks a server about
// itself and sends it no prompt: all of Register's but -api. -url has no
// default; urlUsage says what giving it does.
func (f *ClientFlags) RegisterServer(fs *flag.FlagSet, urlUsage string) {
	f.register(fs, "", urlUsage)
}

func (f *ClientFlags) register(fs *flag.FlagSet, defaultURL, urlUsage string) {
	fs.StringVar(&f.URL, "url", defaultURL, urlUsage)
	fs.Func("model", "model name (empty: the server's only model, where it has one)", func(s string) error {
		if i := controlByte(s); i >= 0 {
			return fmt.Errorf("the name holds the control character %q: give the model's name as the server lists it", s[i])
		}
		f.Model = s
		return nil
	})
	fs.StringVar(&f.KeyEnv, "api-key-env", "", "name of the environment variable that holds the API key (sent to -url's origin only)")
	fs.Var(&f.Headers, "header", "'Name: value' added to every request (repeatable); a credential's (Authorization, *key*, *token*) goes to -url's origin only and is never printed or saved")
	fs.StringVar(&f.Transport, "transport", "stream", "HTTP transport: stream (loadgen.StreamTransport: kernel receive timestamps on Linux), poll (the same, its bodies read by a few shared pollers, one system call a chunk: less CPU at many streams; Linux, http:// only) or http (net/http's: honours HTTP_PROXY)")
}

// Generating refuses an -api that generates nothing (embeddings, rerank)
// in command, which measures generation: bench is the command that loads
// them.
func (f *ClientFlags) Generating(command string) error {
	if f.API == loadgen.Embeddings || f.API == loadgen.Rerank {
		return fmt.Errorf("-api %v: %s measures generation; load embeddings and rerank with bench (go run ./examples/bench -api %v)", f.API, command, f.API)
	}
	return nil
}

// APIKey returns the key -api-key-env names, or "" when it names none. An
// empty variable is an error: a run would be refused by the server for
// want of it.
func (f *ClientFlags) APIKey() (string, error) {
	if f.KeyEnv == "" {
		return "", nil
	}
	k := os.Getenv(f.KeyEnv)
	if k == "" {
		return "", fmt.Errorf("-api-key-env: the environment variable %s is empty", f.KeyEnv)
	}
	return k, nil
}

// Check refuses flags that cannot make a client, before anything runs:
// an unknown -transport, an empty -api-key-env, a -header that would
// replace its key. [ClientFlags.Client] and [ClientFlags.HTTPClient]
// refuse them as well.
func (f *ClientFlags) Check() error {
	_, _, err := f.keyAndTransport(1)
	return err
}

// RoundTripper returns the transport -transport names, sized for streams
// connections at once: a [loadgen.StreamTransport] for stream, the same
// with its Poll field set for poll, and [loadgen.NewTransport]'s for http.
func (f *ClientFlags) RoundTripper(streams int) (http.RoundTripper, error) {
	switch f.Transport {
	case "stream", "":
		return loadgen.NewStreamTransport(streams), nil
	case "poll":
		t := loadgen.NewStreamTransport(streams)
		t.Poll = true
		return t, nil
	case "http":
		return loadgen.NewTransport(streams), nil
	}
	return nil, fmt.Errorf("unknown -transport %q (want stream, poll or http)", f.Transport)
}

// Client returns a client of the server the flags name, for streams
// connections at once. Its errors name the flag at fault.
func (f *ClientFlags) Client(streams int) (*loadgen.Client, error) {
	key, tr, err := f.keyAndTransport(streams)
	if err != nil {
		return nil, err
	}
	return &loadgen.Client{BaseURL: f.URL, APIKey: key, Header: f.Headers.Header(), HTTPClient: &http.Client{Transport: tr}}, nil
}

// HTTPClient returns a plain HTTP client for asking the server about
// itself (its models, limits, /metrics), for streams connections at once:
// the API key and the -header headers go with every request to -url's
// origin and to no other, over the transport -transport names.
func (f *ClientFlags) HTTPClient(streams int) (*http.Client, error) {
	key, tr, err := f.keyAndTransport(streams)
	if err != nil {
		return nil, err
	}
	h := f.Headers.Header()
	if key != "" {
		if h == nil {
			h = make(http.Header)
		}
		h.Set("Authorization", "Bearer "+key)
	}
	if len(h) == 0 {
		return &http.Client{Transport: tr}, nil
	}
	u, err := url.Parse(f.URL)
	if err != nil {
		return nil, fmt.Errorf("-url: %w", redact.New(f.URL).Error(err))
	}
	return &http.Client{Transport: &originHeaders{origin: origin(u), header: h, next: tr}}, nil
}

// originHeaders adds its headers to every request to one origin.
type originHeaders struct {
	origin string
	header http.Header
	next   http.RoundTripper
}

func (o *originHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	if origin(req.URL) != o.origin {
		return o.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, vs := range o.header {
		req.Header[k] = append(req.Header[k], vs...)
	}
	return o.next.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of the transport below.
func (o *originHeaders) CloseIdleConnections() {
	if c, ok := o.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// origin is a URL's "scheme://host:port", its port spelled out.
func origin(u *url.URL) string {
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// keyAndTransport returns the API key and the transport the flags name.
// It refuses a -header that carries the key -api-key-env names, which
// would replace it unsaid.
func (f *ClientFlags) keyAndTransport(streams int) (string, http.RoundTripper, error) {
	key, err := f.APIKey()
	if err != nil {
		return "", nil, err
	}
	if key != "" {
		for _, name := range []string{"Authorization", "X-Api-Key"} {
			if _, ok := f.Headers.h[name]; ok && (name == "Authorization" || f.API == loadgen.Messages) {
				return "", nil, fmt.Errorf("-header %s and -api-key-env %s both give the API key, and the header would replace the key: give one or the other", name, f.KeyEnv)
			}
		}
	}
	tr, err := f.RoundTripper(streams)
	return key, tr, err
}

// WarnShortSecrets says on w which of the API key and the credential
// headers (see [redact.CredentialHeader]) are shorter than
// [redact.MinLen] bytes, whose values it does not show: such a secret is
// kept out of what llmload prints and saves only where it stands as a
// whole value, not inside other words. A command calls it once, after
// its flags are parsed.
func (f *ClientFlags) WarnShortSecrets(w io.Writer) {
	var short []string
	if key, _ := f.APIKey(); key != "" && len(key) < redact.MinLen {
		short = append(short, fmt.Sprintf("the API key (-api-key-env %s) is %d bytes", f.KeyEnv, len(key)))
	}
	short = append(short, f.Headers.short()...)
	if len(short) > 0 {
		fmt.Fprintf(w, "warning: %s: a secret under %d bytes is kept out of what llmload prints and saves only where it stands as a whole value\n",
			strings.Join(short, "; "), redact.MinLen)
	}
}

// Redactor returns what removes the password of -url and the API key from
// text about to be printed or saved.
func (f *ClientFlags) Redactor() *redact.Redactor {
	key, _ := f.APIKey()
	return redact.New(f.URL, append(f.Headers.Secrets(), key)...)
}
