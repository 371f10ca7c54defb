package matrix_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
)

// starvedServer answers one-token requests at once and holds every longer
// one without a token, while its /metrics reports requests waiting: the
// seed's 248K cells, which sat for 30 s producing nothing.
func starvedServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			io.WriteString(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 3\n")
		case "/tokenize":
			var body struct{ Prompt string }
			_ = json.NewDecoder(r.Body).Decode(&body)
			fmt.Fprintf(w, `{"count": %d}`, len(strings.Fields(body.Prompt)))
		case "/v1/completions":
			var body struct {
				Prompt    string
				MaxTokens int `json:"max_tokens"`
			}
			_ = json.NewDecoder(r.Body).Decode(&body)
			w.Header().Set("Content-Type", "text/event-stream")
			if body.MaxTokens == 1 {
				fmt.Fprintf(w, `data: {"choices":[{"index":0,"text":" a","finish_reason":"length"}],"usage":{"prompt_tokens":%d,"completion_tokens":1}}`+"\n\ndata: [DONE]\n\n", len(strings.Fields(body.Prompt)))
				return
			}
			w.(http.Flusher).Flush()
			<-r.Context().Done() // waiting for KV blocks that never come
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestStarvedCellEndsEarly(t *testing.T) {
	srv := starvedServer(t)
	spec := matrix.Spec{URL: srv.URL + "/v1", Model: "bench", API: loadgen.Completions,
		Contexts: []int{1024}, Concurrency: []int{2}, Prefill: []int{}, Duration: time.Minute, MaxTokens: 100,
		WarmupRule: &matrix.WarmupRule{Min: 100 * time.Millisecond, Flow: time.Second, Timeout: 500 * time.Millisecond}}
	r := &matrix.Runner{Spec: spec, IdleTimeout: 100 * time.Millisecond, StuckAfter: time.Second}
	start := time.Now()
	res, err := r.Run(t.Context())
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 20*time.Second, "ended well before its one-minute window")
	c := res.Cell(1024, 2)
	require.NotNil(t, c)
	assert.Equal(t, matrix.OverCapacity, c.Status)
	assert.Contains(t, c.Reason, "starved")
	assert.Contains(t, c.Reason, "waiting")
}

// TestCellsUnderFaults runs a small matrix against a simulator that
// misbehaves on every request and checks each cell says what happened.
func TestCellsUnderFaults(t *testing.T) {
	longtest.Skip(t)
	p := loadgentest.FastProfile()
	p.DecodeBase = []loadgentest.BatchCost{{Batch: 1, Seconds: 0.002}}
	srv := loadgentest.NewServer(p)
	defer srv.Close()
	for _, tc := range []struct {
		fault, reason string
		status        matrix.Status
	}{
		{"reset-after=20", "truncated", matrix.Failed}, // every stream is cut
		{"status=500", "the first request failed", matrix.Failed},
		{"error-after=5", "stream_error", matrix.Failed},
		{"chunk-tokens=3,ping,crlf", "", matrix.Valid}, // odd but healthy streams
	} {
		t.Run(tc.fault, func(t *testing.T) {
			spec := matrix.Spec{URL: srv.URL + "/v1", Model: "bench" + loadgentest.FaultModelSuffix + tc.fault, API: loadgen.Completions,
				Contexts: []int{0}, Concurrency: []int{2}, Prefill: []int{}, Duration: 500 * time.Millisecond, MaxTokens: 1000,
				WarmupRule: &matrix.WarmupRule{Min: 100 * time.Millisecond, Flow: 100 * time.Millisecond, Timeout: time.Second}}
			res, err := (&matrix.Runner{Spec: spec, Client: &loadgen.Client{HTTPClient: srv.Client()}}).Run(t.Context())
			require.NoError(t, err, "faults in requests do not end the run")
			c := res.Cell(0, 2)
			assert.Equal(t, tc.status, c.Status, c.Reason)
			assert.Contains(t, c.Reason, tc.reason)
			if c.Measurement != nil && tc.status == matrix.Failed {
				assert.Positive(t, c.Errors)
				assert.NotEmpty(t, c.ErrorKinds)
			}
		})
	}
}
