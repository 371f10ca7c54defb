package matrix_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/hostileserver"
	"github.com/llmload/llmload/internal/tokencount"
	"github.com/llmload/llmload/matrix"
)

// TestCellsOfAServerThatDoesNotStream: a matrix pointed at a login page, a
// server that answers whole JSON completions, or a peer that is not HTTP
// says so in every cell, naming what came back, instead of reporting
// truncated streams.
func TestCellsOfAServerThatDoesNotStream(t *testing.T) {
	srv := hostileserver.New(hostileserver.OK)
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		mode hostileserver.Mode
		says string
	}{
		{hostileserver.HTML, `Content-Type "text/html; charset=utf-8"`},
		{hostileserver.PlainJSON, `Content-Type "application/json"`},
		{hostileserver.NotHTTP, "did not answer in HTTP"},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			spec := matrix.Spec{URL: srv.BaseURL(tc.mode), Model: "bench", Contexts: []int{0, 1024}, Concurrency: []int{1, 2}, Prefill: []int{1024},
				Duration: 500 * time.Millisecond, MaxTokens: 8,
				WarmupRule: &matrix.WarmupRule{Min: 100 * time.Millisecond, Flow: 100 * time.Millisecond, Timeout: time.Second}}
			res, err := (&matrix.Runner{Spec: spec, IdleTimeout: 100 * time.Millisecond}).Run(t.Context())
			require.NoError(t, err, "a server that does not stream fails its cells, not the run")
			require.Len(t, res.Cells, 4)
			t.Logf("a cell says: %s", res.Cells[0].Reason)
			for _, c := range res.Cells {
				assert.Equal(t, matrix.Failed, c.Status, "%s × %d: %s", tokencount.Format(c.ContextTokens), c.Concurrency, c.Reason)
				assert.Contains(t, c.Reason, "not_event_stream")
				assert.Contains(t, c.Reason, tc.says)
				assert.NotContains(t, c.Reason, "truncated")
				assert.NotContains(t, c.Reason, "\n")
			}
			require.Len(t, res.Prefill, 1)
			assert.Contains(t, res.Prefill[0].Error, tc.says)
		})
	}
}
