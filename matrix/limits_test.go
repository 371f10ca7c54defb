package matrix_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
)

// TestSpecLimitsPrecedence: as Spec.Limits says, a limit the server
// publishes (the simulator's KV tokens and max_model_len) wins over the
// one given, and a limit given that the server does not publish (requests
// at once) is used.
func TestSpecLimitsPrecedence(t *testing.T) {
	p := loadgentest.FastProfile()
	srv := loadgentest.NewServer(p)
	defer srv.Close()
	given := capacity.Limits{KVTokens: 1000, MaxRunning: 7, MaxModelLen: 100, Source: "flags"}
	spec := matrix.Spec{URL: srv.URL + "/v1", Model: "bench", API: loadgen.Completions,
		Contexts: []int{0}, Concurrency: []int{1}, Prefill: []int{},
		Duration: time.Second, MaxTokens: 16, Limits: &given}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := &matrix.Runner{Spec: spec, Client: &loadgen.Client{HTTPClient: srv.Client()},
		OnPlan: func(*matrix.Results) { cancel() }}
	res, err := r.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	l := res.Server.Limits
	assert.Equal(t, p.KVCacheTokens, l.KVTokens, "the server's KV tokens: %+v", l)
	assert.Equal(t, p.MaxModelLen, l.MaxModelLen, "the server's max_model_len: %+v", l)
	assert.Equal(t, 7, l.MaxRunning, "the given max running, which the server does not publish: %+v", l)
	assert.Contains(t, l.Source, "max_running from flags")
	assert.NotContains(t, l.Source, "kv_tokens from flags")
}
