package matrix_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/matrix"
)

// TestCellCountsTheWarmup: a cell keeps the seed's meaning, where time to
// first token is over every request the cell launched: two cold starts that
// end during the warm-up are in its TTFT and its request count, though a
// generator's own summary of the window sets them apart.
func TestCellCountsTheWarmup(t *testing.T) {
	var streams atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			http.NotFound(w, r)
			return
		}
		var body struct {
			MaxTokens int `json:"max_tokens"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		ttft := 5 * time.Millisecond
		if body.MaxTokens > 1 && streams.Add(1) <= 2 {
			ttft = 400 * time.Millisecond // the cell's first two streams start cold
		}
		time.Sleep(ttft)
		for i := range body.MaxTokens {
			if i > 0 {
				time.Sleep(20 * time.Millisecond)
			}
			finish := "null"
			if i == body.MaxTokens-1 {
				finish = `"length"`
			}
			fmt.Fprintf(w, `data: {"choices":[{"index":0,"text":" a","finish_reason":%s}],"usage":{"prompt_tokens":4,"completion_tokens":%d}}`+"\n\n", finish, i+1)
			f.Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)

	spec := matrix.Spec{URL: srv.URL + "/v1", Model: "bench", API: loadgen.Completions, Contexts: []int{0}, Concurrency: []int{1}, Prefill: []int{},
		Duration: time.Second, MaxTokens: 5,
		WarmupRule: &matrix.WarmupRule{Min: 1200 * time.Millisecond, Flow: 100 * time.Millisecond, Timeout: 5 * time.Second}}
	res, err := (&matrix.Runner{Spec: spec, IdleTimeout: 100 * time.Millisecond}).Run(t.Context())
	require.NoError(t, err)
	c := res.Cell(0, 1)
	require.NotNil(t, c)
	require.NotNil(t, c.Measurement, "%s: %s", c.Status, c.Reason)
	// About 1.2 s of warm-up: the two cold starts (0.5 s each) and one or
	// two more; then about 8 requests of 0.1 s in the 1 s window.
	assert.GreaterOrEqual(t, c.Measurement.TTFT.P99, 400.0, "the cold starts are in the cell's TTFT: %+v", c.Measurement.TTFT)
	assert.Less(t, c.Measurement.TTFT.P50, 100.0, "and the median is the steady state's: %+v", c.Measurement.TTFT)
	assert.GreaterOrEqual(t, c.Requests, 2+c.Measurement.Completed, "the warm-up's requests are counted: %d requests, %d completed in the window", c.Requests, c.Measurement.Completed)
	assert.Positive(t, c.Measurement.Completed)
}
