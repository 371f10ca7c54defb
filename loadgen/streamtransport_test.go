package loadgen_test

import (
	"context"
	"crypto/tls"
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

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// connCounter counts a test server's connections as they open and close.
type connCounter struct{ opened, closed atomic.Int64 }

func (c *connCounter) track(_ net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		c.opened.Add(1)
	case http.StateClosed, http.StateHijacked:
		c.closed.Add(1)
	}
}

// streamServer starts a server whose handler streams words, one chunk
// each, then the finish and [DONE]; it counts its connections.
func streamServer(t *testing.T, tls bool, h http.HandlerFunc) (*httptest.Server, *connCounter) {
	t.Helper()
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) {
			f := sseHeaders(w)
			for _, word := range []string{"a", "b", "c"} {
				io.WriteString(w, tokenChunk(word))
				f.Flush()
			}
			io.WriteString(w, finishChunk)
		}
	}
	srv := httptest.NewUnstartedServer(h)
	var cc connCounter
	srv.Config.ConnState = cc.track
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, &cc
}

func streamClient(srv *httptest.Server, tr *loadgen.StreamTransport) *loadgen.Client {
	return &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: tr}}
}

// eventually waits up to 5 s for cond.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 5*time.Second, 5*time.Millisecond, msg)
}

func TestStreamTransportStreamsOnOneConnection(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		name := "http"
		if useTLS {
			name = "https" // a TLS 1.3 server's session tickets wait unread on an idle connection
		}
		t.Run(name, func(t *testing.T) {
			srv, cc := streamServer(t, useTLS, nil)
			tr := loadgen.NewStreamTransport(4)
			if useTLS {
				tr.TLSClientConfig = &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
			}
			defer tr.CloseIdleConnections()
			c := streamClient(srv, tr)
			for i := range 20 {
				resp, err := c.Do(t.Context(), req())
				require.NoError(t, err, "request %d", i)
				assert.Equal(t, "abc", resp.Text)
				assert.Equal(t, 3, resp.OutputTokens())
				assert.False(t, resp.Sent.IsZero(), "the request's write time is traced")
			}
			assert.EqualValues(t, 1, cc.opened.Load(), "20 sequential streams on one connection")
			tr.CloseIdleConnections()
			eventually(t, func() bool { return cc.closed.Load() == 1 }, "CloseIdleConnections closes the pooled connection")
		})
	}
}

func TestStreamTransportErrorStatusKeepsTheConnection(t *testing.T) {
	var n atomic.Int64
	srv, cc := streamServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 1 {
			http.Error(w, `{"error":{"message":"no","type":"BadRequestError","code":400}}`, http.StatusBadRequest)
			return
		}
		sseHeaders(w)
		io.WriteString(w, tokenChunk("ok")+finishChunk)
	})
	tr := loadgen.NewStreamTransport(1)
	defer tr.CloseIdleConnections()
	c := streamClient(srv, tr)
	for range 3 {
		_, err := c.Do(t.Context(), req())
		assert.Equal(t, metrics.KindClientStatus, loadgen.KindOf(err), "%v", err)
		resp, err := c.Do(t.Context(), req())
		require.NoError(t, err)
		assert.Equal(t, "ok", resp.Text)
	}
	assert.EqualValues(t, 1, cc.opened.Load(), "a fully read error response leaves its connection reusable")
}

// TestStreamTransportServerClosesIdle lets the server close the idle
// connection: the next request must notice before writing, and dial anew.
func TestStreamTransportServerClosesIdle(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		io.WriteString(w, tokenChunk("a")+finishChunk)
	}))
	var cc connCounter
	srv.Config.ConnState = cc.track
	srv.Config.IdleTimeout = 20 * time.Millisecond
	srv.Start()
	defer srv.Close()
	tr := loadgen.NewStreamTransport(4)
	defer tr.CloseIdleConnections()
	c := streamClient(srv, tr)
	for i := range 3 {
		_, err := c.Do(t.Context(), req())
		require.NoError(t, err, "request %d after the server closed the idle connection", i)
		eventually(t, func() bool { return cc.closed.Load() == int64(i+1) }, "the server closes the idle connection")
	}
	assert.EqualValues(t, 3, cc.opened.Load())
}

func TestStreamTransportConnectionClose(t *testing.T) {
	srv, cc := streamServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		sseHeaders(w)
		io.WriteString(w, tokenChunk("a")+finishChunk)
	})
	tr := loadgen.NewStreamTransport(4)
	defer tr.CloseIdleConnections()
	c := streamClient(srv, tr)
	for range 3 {
		_, err := c.Do(t.Context(), req())
		require.NoError(t, err)
	}
	assert.EqualValues(t, 3, cc.opened.Load(), "a connection the server asked to close is not reused")
}

// endless streams a token every 5 ms until the client goes away, and
// reports when it saw that.
func endless(gone chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f := sseHeaders(w)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				close(gone)
				return
			case <-tick.C:
				io.WriteString(w, tokenChunk("x"))
				f.Flush()
			}
		}
	}
}

func TestStreamTransportCancelClosesTheConnection(t *testing.T) {
	gone := make(chan struct{})
	srv, _ := streamServer(t, false, endless(gone))
	tr := loadgen.NewStreamTransport(4)
	defer tr.CloseIdleConnections()
	c := streamClient(srv, tr)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	resp, err := c.Do(ctx, req())
	assert.Less(t, time.Since(start), 3*time.Second, "the read blocked on the connection ends with the context")
	assert.Equal(t, metrics.KindCanceled, loadgen.KindOf(err), "%v", err)
	assert.Positive(t, resp.OutputTokens(), "what arrived before is kept")
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the connection close")
	}
}

// TestStreamTransportCloseUnblocksRead closes a body from another goroutine
// while a Read waits on it.
func TestStreamTransportCloseUnblocksRead(t *testing.T) {
	gone := make(chan struct{})
	srv, _ := streamServer(t, false, endless(gone))
	tr := loadgen.NewStreamTransport(4)
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	resp, err := hc.Post(srv.URL, "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	read := make(chan error, 1)
	var got atomic.Int64
	go func() {
		_, err := io.Copy(countingWriter{&got}, resp.Body)
		read <- err
	}()
	eventually(t, func() bool { return got.Load() > 0 }, "the reader reads the stream")
	require.NoError(t, resp.Body.Close())
	select {
	case err := <-read:
		assert.Error(t, err, "a read cut by Close fails")
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the blocked Read")
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the connection close")
	}
	_, err = resp.Body.Read(make([]byte, 1))
	assert.Error(t, err, "reading a closed body")
}

// countingWriter discards what it is written and counts its bytes.
type countingWriter struct{ n *atomic.Int64 }

func (w countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return len(p), nil
}

func TestStreamTransportRefusesOtherSchemes(t *testing.T) {
	tr := loadgen.NewStreamTransport(1)
	r, err := http.NewRequest(http.MethodPost, "ftp://example.com/v1", strings.NewReader("{}"))
	require.NoError(t, err)
	_, err = tr.RoundTrip(r)
	assert.ErrorIs(t, err, loadgen.ErrUnsupportedScheme)
}

func TestStreamTransportConnectFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := &loadgen.Client{BaseURL: "http://" + addr + "/v1", HTTPClient: &http.Client{Transport: loadgen.NewStreamTransport(1)}}
	_, err = c.Do(t.Context(), req())
	assert.Equal(t, metrics.KindConnect, loadgen.KindOf(err), "%v", err)
}

// TestEarlyResponseToALargeRequest has the server answer 413 without
// reading an 8 MB request, as a proxy with a body size limit does: the
// client reports the status, not a failed write, on either transport.
func TestEarlyResponseToALargeRequest(t *testing.T) {
	srv, _ := streamServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
	})
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: tr(1)}}
		defer c.CloseIdleConnections()
		r := req()
		r.Prompt = strings.Repeat("many words ", 800_000)
		for range 2 {
			_, err := c.Do(t.Context(), r)
			var se *loadgen.StatusError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, http.StatusRequestEntityTooLarge, se.StatusCode)
			assert.Equal(t, metrics.KindTooLong, loadgen.KindOf(err))
		}
	})
}

// rawServer answers every connection with reply, whatever it was asked,
// then closes it.
func rawServer(t *testing.T, reply string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 64<<10)
			c.Read(buf) // the request, or enough of it
			io.WriteString(c, reply)
			c.Close()
		}
	}()
	return "http://" + ln.Addr().String() + "/v1"
}

// TestBrokenHTTPResponses: both transports classify a response that breaks
// HTTP itself the same way, and neither hangs.
func TestBrokenHTTPResponses(t *testing.T) {
	sse := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	for _, tc := range []struct {
		name, reply string
		tokens      int
		kind        metrics.ErrorKind
	}{
		{"not HTTP", "SSH-2.0-OpenSSH_9.6\r\n\r\n", 0, metrics.KindNotEventStream},
		{"cut in the headers", "HTTP/1.1 200 OK\r\nContent-Ty", 0, metrics.KindTruncated},
		{"bad chunk size", sse + "Transfer-Encoding: chunked\r\n\r\nZZ\r\ndata: x\r\n", 0, metrics.KindTruncated},
		{"cut in a chunk", sse + "Transfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s", len(tokenChunk("a"))+40, tokenChunk("a")), 1, metrics.KindTruncated},
		{"short body", sse + "Content-Length: 100000\r\n\r\n" + tokenChunk("a") + tokenChunk("b"), 2, metrics.KindTruncated},
		{"HTTP/1.0 to the close", "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + tokenChunk("a") + finishChunk, 1, metrics.KindNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := rawServer(t, tc.reply)
			forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
				c := &loadgen.Client{BaseURL: url, HTTPClient: &http.Client{Transport: tr(1)}, HeaderTimeout: 3 * time.Second, StallTimeout: 3 * time.Second}
				defer c.CloseIdleConnections()
				start := time.Now()
				resp, err := c.Do(t.Context(), req())
				assert.Less(t, time.Since(start), 3*time.Second, "no hang")
				assert.Equal(t, tc.kind, loadgen.KindOf(err), "%v", err)
				assert.Equal(t, tc.tokens, resp.OutputTokens())
			})
		})
	}
}
