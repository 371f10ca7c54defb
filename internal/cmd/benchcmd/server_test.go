package benchcmd_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/cmd/benchcmd"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
)

// Identify names the simulator as the vLLM it answers as, with its limits.
func TestIdentify(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	s := capacity.Server{URL: srv.URL + "/v1", Model: loadgentest.DefaultModel}
	err := benchcmd.Identify(t.Context(), &loadgen.Client{BaseURL: s.URL}, s.URL, &s)
	require.NoError(t, err)
	assert.Equal(t, capacity.EngineVLLM, s.Engine)
	assert.Equal(t, srv.Handler.Profile().MaxModelLen, s.Limits.MaxModelLen)
}

// A server that says nothing of itself is left unknown, and Identify says
// why, having sent the client's key with every question.
func TestIdentifyUnknown(t *testing.T) {
	var asked, keyed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if r.Header.Get("Authorization") == "Bearer sk-identify-test" {
			keyed.Add(1)
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	s := capacity.Server{URL: srv.URL + "/v1", Model: "m"}
	err := benchcmd.Identify(t.Context(), &loadgen.Client{BaseURL: s.URL, APIKey: "sk-identify-test"}, s.URL, &s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the server's engine is unknown")
	assert.Equal(t, capacity.EngineUnknown, s.Engine)
	assert.Empty(t, s.Version)
	assert.Positive(t, asked.Load())
	assert.Equal(t, asked.Load(), keyed.Load(), "every question carries the key")
}
