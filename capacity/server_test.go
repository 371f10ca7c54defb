package capacity

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vllmMetrics is the shape of vLLM's /metrics: capacity is carried by the
// labels of an info gauge whose value is 1, unset fields read "None".
const vllmMetrics = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="bench"} 0.0
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="2048",cache_dtype="int4_per_token_head",enable_prefix_caching="True",engine="0",gpu_memory_utilization="0.94",kv_cache_max_concurrency="2.888059701492537",kv_cache_size_tokens="757087",mamba_block_size="2048",mamba_cache_mode="align",num_gpu_blocks="387",num_gpu_blocks_override="None"} 1.0
`

// vllmOldMetrics is an older vLLM's: no kv_cache_size_tokens.
const vllmOldMetrics = `# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="False",num_gpu_blocks="38500",num_gpu_blocks_override="None"} 1.0
`

const vllmOldHybridMetrics = `# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="784",cache_dtype="auto",mamba_block_size="32768",num_gpu_blocks="1487"} 1.0
`

const vllmModels = `{"object":"list","data":[{"id":"bench","object":"model","max_model_len":262144}]}`

// serve answers the given paths with 200 and the body, everything else 404.
func serve(t *testing.T, routes map[string]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := routes[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestDiscover(t *testing.T) {
	tests := []struct {
		name   string
		routes map[string]string
		suffix string
		engine Engine
		want   Limits
		note   string
	}{
		{
			name:   "vllm reports group-aware tokens",
			routes: map[string]string{"/metrics": vllmMetrics, "/v1/models": vllmModels},
			suffix: "/v1",
			engine: EngineVLLM,
			want:   Limits{KVTokens: 757087, MaxModelLen: 262144},
			note:   "max_num_seqs",
		},
		{
			name:   "older vllm: blocks × block size",
			routes: map[string]string{"/metrics": vllmOldMetrics, "/v1/models": vllmModels},
			engine: EngineVLLM,
			want:   Limits{KVTokens: 616000, MaxModelLen: 262144},
		},
		{
			name:   "older vllm on a hybrid model says it overstates",
			routes: map[string]string{"/metrics": vllmOldHybridMetrics},
			engine: EngineVLLM,
			want:   Limits{KVTokens: 1487 * 784},
			note:   "overstates",
		},
		{
			name: "sglang",
			routes: map[string]string{
				"/metrics":         "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 0\n",
				"/get_server_info": `{"context_length":32768,"max_running_requests":null,"internal_states":[{"max_total_num_tokens":412345,"max_running_requests":48}]}`,
			},
			engine: EngineSGLang,
			want:   Limits{KVTokens: 412345, MaxRunning: 48, MaxModelLen: 32768},
		},
		{
			name: "sglang without context_length falls back to /v1/models",
			routes: map[string]string{
				"/get_server_info": `{"max_total_num_tokens":100000,"max_running_requests":8}`,
				"/v1/models":       vllmModels,
			},
			engine: EngineSGLang,
			want:   Limits{KVTokens: 100000, MaxRunning: 8, MaxModelLen: 262144},
		},
		{
			name:   "llama.cpp slots",
			routes: map[string]string{"/props": `{"total_slots":4,"default_generation_settings":{"n_ctx":8192}}`},
			engine: EngineLlamaCpp,
			want:   Limits{KVTokens: 32768, MaxRunning: 4, MaxModelLen: 8192},
		},
		{
			name:   "tgi",
			routes: map[string]string{"/info": `{"model_id":"m","max_batch_total_tokens":163840,"max_total_tokens":4096,"max_batch_size":null,"max_concurrent_requests":128}`},
			engine: EngineTGI,
			want:   Limits{KVTokens: 163840, MaxModelLen: 4096},
			note:   "max_concurrent_requests",
		},
		{
			name:   "nothing published",
			routes: map[string]string{"/metrics": "not prometheus {{{\n", "/v1/models": vllmModels},
			engine: EngineUnknown,
			want:   Limits{MaxModelLen: 262144},
			note:   "limits unknown",
		},
		{
			name:   "nothing at all",
			routes: map[string]string{},
			engine: EngineUnknown,
			want:   Limits{},
			note:   "limits unknown",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, tc.routes)
			d, err := Discover(t.Context(), srv.Client(), srv.URL+tc.suffix)
			require.NoError(t, err)
			assert.Equal(t, tc.engine, d.Engine)
			got := d.Limits
			got.Source = ""
			assert.Equal(t, tc.want, got)
			assert.NotEmpty(t, d.Probes)
			if tc.note != "" {
				assert.Contains(t, joinNotes(d.Notes), tc.note)
			}
			if tc.want.Known() {
				assert.NotEmpty(t, d.Limits.Source)
			}
		})
	}
}

func joinNotes(notes []string) string {
	s := ""
	for _, n := range notes {
		s += n + "\n"
	}
	return s
}

func TestDiscoverVLLMLabels(t *testing.T) {
	srv := serve(t, map[string]string{"/metrics": vllmMetrics, "/v1/models": vllmModels})
	d, err := Discover(t.Context(), nil, srv.URL)
	require.NoError(t, err)
	assert.Equal(t, 387, d.NumGPUBlocks)
	assert.Equal(t, 2048, d.BlockSize)
	assert.InDelta(t, 2.888, d.MaxConcurrency, 0.001)
	assert.Equal(t, "int4_per_token_head", d.CacheConfig["cache_dtype"])
	assert.Equal(t, "vllm:cache_config_info kv_cache_size_tokens, /v1/models max_model_len", d.Limits.Source)
}

func TestDiscoverErrors(t *testing.T) {
	t.Run("unreachable", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		d, err := Discover(t.Context(), srv.Client(), url)
		require.ErrorIs(t, err, ErrUnreachable)
		assert.False(t, d.Limits.Known())
		require.NotEmpty(t, d.Probes)
		assert.Zero(t, d.Probes[0].Status)
		assert.NotEmpty(t, d.Probes[0].Error)
	})
	t.Run("cancelled", func(t *testing.T) {
		srv := serve(t, map[string]string{"/metrics": vllmMetrics})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := Discover(ctx, srv.Client(), srv.URL)
		require.ErrorIs(t, err, context.Canceled)
	})
	t.Run("status errors are recorded per probe", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		}))
		defer srv.Close()
		d, err := Discover(t.Context(), srv.Client(), srv.URL)
		require.NoError(t, err, "the server answered")
		assert.Equal(t, EngineUnknown, d.Engine)
		var se *StatusError
		require.ErrorAs(t, d.Probes[0].Err, &se)
		assert.Equal(t, http.StatusInternalServerError, se.StatusCode)
		assert.True(t, errors.As(d.Probes[0].Err, &se))
	})
}
