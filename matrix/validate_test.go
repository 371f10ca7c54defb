package matrix_test

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/metrics"
)

// TestSpecMistakes: a spec that cannot work is refused by Run before any
// request, with a *loadgen.ConfigError naming the field, on one line.
func TestSpecMistakes(t *testing.T) {
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	ok := func() matrix.Spec {
		return matrix.Spec{URL: srv.URL + "/v1", Contexts: []int{0}, Concurrency: []int{1}, Prefill: []int{}, Duration: time.Second, MaxTokens: 8}
	}
	for _, tc := range []struct {
		name   string
		change func(s *matrix.Spec)
		field  string
	}{
		{"no URL", func(s *matrix.Spec) { s.URL = "" }, "URL"},
		{"a URL of another scheme", func(s *matrix.Spec) { s.URL = "ftp://host/v1" }, "URL"},
		{"a URL with a query", func(s *matrix.Spec) { s.URL = srv.URL + "/v1?key=1" }, "URL"},
		{"no rows", func(s *matrix.Spec) { s.Contexts = []int{} }, "Contexts"},
		{"a negative context", func(s *matrix.Spec) { s.Contexts = []int{-1} }, "Contexts"},
		{"no columns", func(s *matrix.Spec) { s.Concurrency = []int{} }, "Concurrency"},
		{"a concurrency of 0", func(s *matrix.Spec) { s.Concurrency = []int{0} }, "Concurrency"},
		{"a concurrency beyond one process", func(s *matrix.Spec) { s.Concurrency = []int{matrix.MaxStreams + 1} }, "Concurrency"},
		{"a prefill context of 0", func(s *matrix.Spec) { s.Prefill = []int{0} }, "Prefill"},
		{"a negative duration", func(s *matrix.Spec) { s.Duration = -1 }, "Duration"},
		{"negative max tokens", func(s *matrix.Spec) { s.MaxTokens = -1 }, "MaxTokens"},
		{"a threshold that is not a share", func(s *matrix.Spec) { s.ErrorThreshold = math.NaN() }, "ErrorThreshold"},
		{"a negative warm-up", func(s *matrix.Spec) { s.WarmupRule = &matrix.WarmupRule{Flow: -1} }, "WarmupRule.Flow"},
		{"a negative objective", func(s *matrix.Spec) { s.SLO = &metrics.SLO{TTFT: -1} }, "SLO"},
		{"embeddings, which the matrix cannot time", func(s *matrix.Spec) { s.API = loadgen.Embeddings }, "API"},
		{"rerank, which the matrix cannot time", func(s *matrix.Spec) { s.API = loadgen.Rerank }, "API"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := ok()
			tc.change(&spec)
			res, err := (&matrix.Runner{Spec: spec}).Run(t.Context())
			require.Error(t, err)
			assert.Nil(t, res, "nothing ran")
			se, isSpec := errors.AsType[*loadgen.ConfigError](err)
			require.True(t, isSpec, "%v", err)
			assert.Equal(t, "Spec."+tc.field, se.Field)
			assert.Contains(t, err.Error(), "Spec."+tc.field)
			assert.NotContains(t, err.Error(), "\n")
			assert.Zero(t, asked.Load(), "nothing was sent")
		})
	}
	t.Run("a client with a timeout", func(t *testing.T) {
		r := &matrix.Runner{Spec: ok(), Client: &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Timeout: time.Minute}}}
		res, err := r.Run(t.Context())
		assert.Nil(t, res)
		ce, isConfig := errors.AsType[*loadgen.ConfigError](err)
		require.True(t, isConfig, "%v", err)
		assert.Equal(t, "Client.HTTPClient.Timeout", ce.Field)
		assert.Zero(t, asked.Load(), "nothing was sent")
	})
	t.Run("a client for another URL", func(t *testing.T) {
		r := &matrix.Runner{Spec: ok(), Client: &loadgen.Client{BaseURL: "http://127.0.0.1:1/v1"}}
		res, err := r.Run(t.Context())
		assert.Nil(t, res)
		ce, isConfig := errors.AsType[*loadgen.ConfigError](err)
		require.True(t, isConfig, "%v", err)
		assert.Equal(t, "Client.BaseURL", ce.Field)
		assert.Contains(t, err.Error(), "Spec.URL")
		assert.Zero(t, asked.Load(), "nothing was sent")
	})
}

// TestSpecFileOfPooledAPI: a spec read from JSON that names embeddings or
// rerank is refused by Run with a loadgen.ConfigError on Spec.API that
// says where to load them, before anything is sent.
func TestSpecFileOfPooledAPI(t *testing.T) {
	for _, api := range []string{"embeddings", "rerank"} {
		var spec matrix.Spec
		require.NoError(t, json.Unmarshal([]byte(`{"url": "http://127.0.0.1:1/v1", "api": "`+api+`", "contexts": [0], "concurrency": [1]}`), &spec))
		res, err := (&matrix.Runner{Spec: spec}).Run(t.Context())
		assert.Nil(t, res)
		se, isSpec := errors.AsType[*loadgen.ConfigError](err)
		require.True(t, isSpec, "%v", err)
		assert.Equal(t, "Spec.API", se.Field)
		assert.Contains(t, err.Error(), "Spec.API is "+api+", which answers in one body with no tokens to time")
		assert.Contains(t, err.Error(), "go run ./examples/bench -api "+api)
	}
}
