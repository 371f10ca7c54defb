package nothttp_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/internal/nothttp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// notHTTP answers every request with what a peer that is not HTTP sends,
// once the request has begun to arrive (net/http's transport reports bytes
// that come before its request as an unsolicited answer), and keeps the
// connection open until the client closes it.
func notHTTP(t *testing.T, banner string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				if _, err := c.Read(make([]byte, 1)); err != nil {
					return
				}
				_, _ = c.Write([]byte(banner))
				_, _ = io.Copy(io.Discard, c)
			})
		}
	})
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return "http://" + ln.Addr().String()
}

// TestParse: net/http's own error for an SSH server's banner, and one of
// a malformed status line, are recognized, with what the peer sent, cut
// and cleaned; other errors are not.
func TestParse(t *testing.T) {
	tr := &http.Transport{}
	c := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	for _, tc := range []struct{ banner, what, sent string }{
		{"SSH-2.0-OpenSSH_9.6\r\n", "malformed HTTP response", "SSH-2.0-OpenSSH_9.6"},
		{"HTTP/1.1 2x0 OK\r\n\r\n", "malformed HTTP status code", "2x0"},
		{"SSH-2.0-" + strings.Repeat("x", 100) + "\x1b[2J\r\n", "malformed HTTP response", "SSH-2.0-" + strings.Repeat("x", 56) + "…"},
	} {
		_, err := c.Get(notHTTP(t, tc.banner))
		require.Error(t, err)
		what, sent, ok := nothttp.Parse(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, tc.what, what)
		assert.Equal(t, tc.sent, sent)
	}
	for _, err := range []error{nil, errors.New("connection refused"), errors.New("malformed chunked encoding")} {
		_, _, ok := nothttp.Parse(err)
		assert.False(t, ok, "%v", err)
	}
}
