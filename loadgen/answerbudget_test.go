package loadgen_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// embeddingAnswer is an Embeddings answer of one embedding, of about size
// bytes.
func embeddingAnswer(size int) string {
	const head, tail = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[`, `0.5]}],"usage":{"prompt_tokens":1,"total_tokens":1}}`
	return head + strings.Repeat("0.125,", (size-len(head)-len(tail))/6) + tail
}

// TestAnswersInFlightAreBounded: the Embeddings answers a Client buffers
// at once are bounded over all its requests by MaxBodyInFlight. While one
// answer of 700 KB is held half read, a second of 700 KB, with a
// Content-Length or without, fails at once (KindOversize, wrapping
// ErrBodyInFlight) rather than take the buffers past 1 MiB; the first
// completes when its server goes on, the budget is all given back, and the
// second then fits.
func TestAnswersInFlightAreBounded(t *testing.T) {
	body := embeddingAnswer(700 << 10)
	for _, length := range []bool{true, false} {
		t.Run("content-length="+strconv.FormatBool(length), func(t *testing.T) {
			var n atomic.Int32
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if length {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				}
				if n.Add(1) != 1 {
					_, _ = w.Write([]byte(body))
					return
				}
				half := len(body) * 3 / 4
				_, _ = w.Write([]byte(body[:half]))
				w.(http.Flusher).Flush()
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
				_, _ = w.Write([]byte(body[half:]))
			}))
			defer srv.Close()
			var once sync.Once
			free := func() { once.Do(func() { close(release) }) }
			defer free() // before the server closes, whatever failed
			c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), MaxBodySize: 1 << 20, MaxBodyInFlight: 1 << 20}
			defer c.CloseIdleConnections()
			req := &loadgen.Request{API: loadgen.Embeddings, Model: "m", Prompt: "a"}

			first := make(chan error, 1)
			go func() {
				_, err := c.Do(t.Context(), req)
				first <- err
			}()
			// The first answer's buffer as it waits: its Content-Length and
			// a byte, or, without one, doubled from 4 KiB past the 525 KB
			// sent so far, to 1 MiB. It grows no more, so the second
			// answer finds the budget as the first will hold it.
			holds := int64(1 << 20)
			if length {
				holds = int64(len(body) + 1)
			}
			deadline := time.Now().Add(20 * time.Second)
			for loadgen.BodyInFlightForTest(c) < holds && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			require.Equal(t, holds, loadgen.BodyInFlightForTest(c), "the first answer is being read")

			resp, err := c.Do(t.Context(), req)
			require.Error(t, err, "a second answer would take the buffers past MaxBodyInFlight")
			assert.True(t, errors.Is(err, loadgen.ErrBodyInFlight), "%v", err)
			assert.Equal(t, metrics.KindOversize, loadgen.KindOf(err))
			assert.Equal(t, metrics.KindOversize, resp.Kind)
			assert.Contains(t, err.Error(), "MaxBodyInFlight")
			assert.LessOrEqual(t, loadgen.BodyInFlightForTest(c), int64(1<<20), "never past the budget")

			free()
			select {
			case err := <-first:
				require.NoError(t, err, "the first answer completes")
			case <-time.After(20 * time.Second):
				t.Fatal("the first answer never completed")
			}
			assert.Zero(t, loadgen.BodyInFlightForTest(c), "every byte given back")
			resp, err = c.Do(t.Context(), req)
			require.NoError(t, err, "alone, an answer fits")
			assert.True(t, resp.OK())
			assert.Zero(t, loadgen.BodyInFlightForTest(c))
		})
	}
}

// A negative MaxBodyInFlight is refused before anything is sent.
func TestMaxBodyInFlightNegativeRefused(t *testing.T) {
	c := &loadgen.Client{BaseURL: "http://127.0.0.1:1/v1", MaxBodyInFlight: -1}
	err := c.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MaxBodyInFlight")
}
