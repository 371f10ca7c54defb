package loadgen_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
)

// The tests in this file hold the client to what it may believe of a
// server's claims: its request id, its timings, its usage and its tags.
// Each server writes the exact bytes on loopback.

// claimServer starts a server that answers every request with the SSE body
// given, after setting the headers given, and a client of it on the
// transport tr.
func claimServer(t *testing.T, tr func(conns int) http.RoundTripper, header http.Header, body string) *loadgen.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		for k, vs := range header {
			w.Header()[k] = vs
		}
		sseHeaders(w)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: tr(2)},
		HeaderTimeout: 10 * time.Second, FirstTokenTimeout: 10 * time.Second, StallTimeout: 10 * time.Second}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// TestRequestIDIsCapped: an X-Request-Id of 200 KB (or one just over the
// cap, with a character that straddles it) is kept as its first 256
// bytes, cut at a character's start, and "…"; one within the cap is kept
// as it came.
func TestRequestIDIsCapped(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		for _, id := range []string{
			"req-" + strings.Repeat("x", 200<<10),
			strings.Repeat("a", 255) + "é" + strings.Repeat("b", 10),
			strings.Repeat("c", 256),
		} {
			c := claimServer(t, tr, http.Header{"X-Request-Id": {id}}, tokenChunk("a")+finishChunk)
			resp, err := c.Do(t.Context(), req())
			require.NoError(t, err)
			assert.LessOrEqual(t, len(resp.ID), 256+len("…"), "the id kept")
			assert.Equal(t, resp.ID, resp.Timeline.ID)
			assert.True(t, utf8.ValidString(resp.ID), "cut at a character's start")
			if len(id) <= 256 {
				assert.Equal(t, id, resp.ID)
				continue
			}
			assert.True(t, strings.HasSuffix(resp.ID, "…"), "marked as cut")
			assert.True(t, strings.HasPrefix(id, strings.TrimSuffix(resp.ID, "…")), "its start")
		}
	})
}
