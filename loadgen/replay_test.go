package loadgen_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// transcript reads a file from testdata/transcripts.
func transcript(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "transcripts", name))
	require.NoError(t, err)
	return b
}

// events splits an SSE body after each blank line (LF, CRLF or CR), keeping
// every byte, so a replay can flush one event at a time.
func events(body []byte) [][]byte {
	var out [][]byte
	start := 0
	for i := 0; i < len(body); i++ {
		for _, sep := range [][]byte{[]byte("\r\n\r\n"), []byte("\n\n"), []byte("\r\r")} {
			if bytes.HasPrefix(body[i:], sep) {
				end := i + len(sep)
				out = append(out, body[start:end])
				start, i = end, end-1
				break
			}
		}
	}
	if start < len(body) {
		out = append(out, body[start:])
	}
	return out
}

// replay serves body as an SSE response to every POST, one event per write
// and flush, gap apart.
func replay(t testing.TB, body []byte, gap time.Duration) *httptest.Server {
	t.Helper()
	evs := events(body)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		for _, ev := range evs {
			if _, err := w.Write(ev); err != nil {
				return
			}
			f.Flush()
			if gap > 0 {
				select {
				case <-time.After(gap):
				case <-r.Context().Done():
					return
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}
