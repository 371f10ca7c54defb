package nothttp_test

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/internal/nothttp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// notHTTP serves what a peer that is not HTTP sends to every connection,
// then closes it.
func notHTTP(t *testing.T, banner string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(banner))
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return "http://" + ln.Addr().String()
}

// TestParse: net/http's own error for an SSH server's banner, and one of
// a malformed status line, are recognized, with what the peer sent, cut
// and cleaned; other errors are not.
func TestParse(t *testing.T) {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
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
