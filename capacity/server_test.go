package capacity

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
			routes: map[string]string{"/props": `{"total_slots":4,"default_generation_settings":{"n_ctx":8192},"build_info":"b5432-1a2b3c4d"}`},
			engine: EngineLlamaCpp,
			want:   Limits{KVTokens: 32768, MaxRunning: 4, MaxModelLen: 8192},
		},
		{
			name:   "llama.cpp with n_ctx at the top",
			routes: map[string]string{"/props": `{"total_slots":2,"n_ctx":4096,"build_info":{"number":1}}`},
			engine: EngineLlamaCpp,
			want:   Limits{KVTokens: 8192, MaxRunning: 2, MaxModelLen: 4096},
		},
		{
			name:   "tgi",
			routes: map[string]string{"/info": `{"model_id":"m","max_batch_total_tokens":163840,"max_total_tokens":4096,"max_batch_size":null,"max_concurrent_requests":128}`},
			engine: EngineTGI,
			want:   Limits{KVTokens: 163840, MaxModelLen: 4096},
			note:   "max_concurrent_requests",
		},
		{
			name: "ollama: the loaded model's context from /api/ps",
			routes: map[string]string{
				"/api/version": `{"version":"0.17.4"}`,
				"/api/ps":      `{"models":[{"name":"tiny:latest","model":"tiny:latest","size":8849408,"context_length":4096}]}`,
			},
			suffix: "/v1",
			engine: EngineOllama,
			want:   Limits{MaxModelLen: 4096},
			note:   "OLLAMA_NUM_PARALLEL",
		},
		{
			name: "ollama: a model not loaded, num_ctx from /api/show",
			routes: map[string]string{
				"/api/version": `{"version":"0.17.4"}`,
				"/api/ps":      `{"models":[]}`,
				"/api/tags":    `{"models":[{"name":"tiny:latest"}]}`,
				"/api/show":    `{"parameters":"num_ctx                        2048\nstop                           \"<eos>\""}`,
			},
			engine: EngineOllama,
			want:   Limits{MaxModelLen: 2048},
		},
		{
			name: "ollama: nothing loaded, nothing set",
			routes: map[string]string{
				"/api/version": `{"version":"0.17.4"}`,
				"/api/ps":      `{"models":[]}`,
			},
			engine: EngineOllama,
			want:   Limits{},
			note:   "not loaded",
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
			d, err := discover(t.Context(), srv.Client(), srv.URL+tc.suffix)
			require.NoError(t, err)
			assert.Equal(t, tc.engine, d.Engine)
			got := d.Limits
			got.Source = ""
			assert.Equal(t, tc.want, got)
			assert.NotEmpty(t, d.Probes)
			if tc.note != "" {
				assert.Contains(t, joinNotes(d.Notes), tc.note)
			}
			if tc.want.known() {
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
	d, err := discover(t.Context(), nil, srv.URL)
	require.NoError(t, err)
	assert.Equal(t, 387, d.NumGPUBlocks)
	assert.Equal(t, 2048, d.BlockSize)
	assert.InDelta(t, 2.888, d.KVConcurrency, 0.001)
	assert.Equal(t, "int4_per_token_head", d.CacheConfig["cache_dtype"])
	assert.Equal(t, "vllm:cache_config_info kv_cache_size_tokens, /v1/models max_model_len", d.Limits.Source)
}

func TestDiscoverErrors(t *testing.T) {
	t.Run("unreachable", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		d, err := discover(t.Context(), srv.Client(), url)
		require.ErrorIs(t, err, ErrUnreachable)
		assert.False(t, d.Limits.known())
		require.NotEmpty(t, d.Probes)
		assert.Zero(t, d.Probes[0].Status)
		assert.NotEmpty(t, d.Probes[0].Error)
	})
	t.Run("cancelled", func(t *testing.T) {
		srv := serve(t, map[string]string{"/metrics": vllmMetrics})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := discover(ctx, srv.Client(), srv.URL)
		require.ErrorIs(t, err, context.Canceled)
	})
	t.Run("status errors are recorded per probe", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		}))
		defer srv.Close()
		d, err := discover(t.Context(), srv.Client(), srv.URL)
		require.NoError(t, err, "the server answered")
		assert.Equal(t, EngineUnknown, d.Engine)
		require.NotEmpty(t, d.Probes[0].Error)
		assert.Equal(t, http.StatusInternalServerError, d.Probes[0].Status)
		assert.Equal(t, "capacity: GET "+srv.URL+"/metrics returned 500: boom", d.Probes[0].Error, "the status and the body, on one line")
	})
}

func TestDiscoverVersion(t *testing.T) {
	tests := []struct {
		name    string
		routes  map[string]string
		engine  Engine
		version string
	}{
		{"vllm /version", map[string]string{"/metrics": vllmMetrics, "/version": `{"version":"0.11.0"}`}, EngineVLLM, "0.11.0"},
		{"vllm without /version", map[string]string{"/metrics": vllmMetrics}, EngineVLLM, ""},
		{"sglang", map[string]string{"/get_server_info": `{"version":"0.5.3","max_total_num_tokens":1000}`}, EngineSGLang, "0.5.3"},
		{"llama.cpp build_info", map[string]string{"/props": `{"total_slots":1,"default_generation_settings":{"n_ctx":512},"build_info":"b5432-1a2b3c4d"}`}, EngineLlamaCpp, "b5432-1a2b3c4d"},
		{"tgi", map[string]string{"/info": `{"version":"3.3.4","max_total_tokens":4096}`}, EngineTGI, "3.3.4"},
		{"ollama", map[string]string{"/api/version": `{"version":"0.17.4"}`}, EngineOllama, "0.17.4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := discover(t.Context(), nil, serve(t, tc.routes).URL)
			require.NoError(t, err)
			assert.Equal(t, tc.engine, d.Engine)
			assert.Equal(t, tc.version, d.Version)
		})
	}
}

func TestDiscoverOllamaModel(t *testing.T) {
	ps := `{"models":[{"name":"big:latest","context_length":32768},{"name":"tiny:latest","context_length":4096}]}`
	srv := serve(t, map[string]string{"/api/version": `{"version":"0.17.4"}`, "/api/ps": ps})
	d, err := DiscoverModel(t.Context(), nil, srv.URL+"/v1", "tiny")
	require.NoError(t, err)
	assert.Equal(t, 4096, d.Limits.MaxModelLen, "the named model's context, not the first loaded")
	assert.Equal(t, "tiny:latest", d.Model)
	assert.Equal(t, "ollama /api/ps context_length", d.Limits.Source)
	assert.Equal(t, "ollama", string(d.Engine))
}

// TestDiscoverSilentServer: a server that accepts connections and never
// answers holds Discover for one probe's timeout, not forever, and is not
// asked again.
func TestDiscoverSilentServer(t *testing.T) {
	defer func(d time.Duration) { probeTimeout = d }(probeTimeout)
	probeTimeout = 200 * time.Millisecond
	release := make(chan struct{})
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	d, err := discover(t.Context(), srv.Client(), srv.URL)
	assert.Less(t, time.Since(start), 5*time.Second)
	require.ErrorIs(t, err, ErrUnreachable, "no request got an answer")
	assert.Contains(t, err.Error(), "no answer in time: no answer within 200ms (each request's bound)")
	assert.Contains(t, err.Error(), "GET "+srv.URL+"/metrics")
	assert.EqualValues(t, 1, asked.Load(), "a silent server is asked once")
	assert.Len(t, d.Probes, 1)
}

// trickle serves /metrics as a server that answers at once and then sends
// its body a byte at a time, every interval, until the client leaves.
func trickle(t *testing.T, interval time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			if _, err := w.Write([]byte("#")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestDiscoverTricklingServer: a server that answers and then trickles
// its body never reaches the per-request bound's silence; when the
// caller's deadline passes, the error says which request it ended, how far
// its answer got and that it was the caller's deadline — not a bare
// "context deadline exceeded".
func TestDiscoverTricklingServer(t *testing.T) {
	srv := trickle(t, 20*time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := discover(ctx, srv.Client(), srv.URL)
	assert.Less(t, time.Since(start), 5*time.Second)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Regexp(t, `^capacity: GET `+regexp.QuoteMeta(srv.URL)+`/metrics: [1-9][0-9]* bytes of the answer read when the caller's deadline passed: context deadline exceeded$`, err.Error())

	// Cancelled, not timed out: said so.
	ctx, cancel = context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = discover(ctx, srv.Client(), srv.URL)
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "/metrics: ")
	assert.Contains(t, err.Error(), "when the caller cancelled")
}

// TestDiscoverDeadlineBeforeAnswer: the caller's deadline passing while a
// request waits for its answer names the request too.
func TestDiscoverDeadlineBeforeAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := discover(ctx, srv.Client(), srv.URL)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "GET "+srv.URL+"/metrics: no answer yet when the caller's deadline passed")
}

func TestDiscoveryComplete(t *testing.T) {
	d := &Discovery{Engine: EngineOllama, Limits: Limits{MaxModelLen: 4096, Source: "ollama /api/ps context_length"}}
	l := d.Complete(Limits{MaxRunning: 4, Source: "flags"})
	assert.Equal(t, 4*4096, l.KVTokens, "a context per slot")
	assert.Equal(t, 4, l.MaxRunning)
	assert.Contains(t, l.Source, "max_running from flags")
	assert.Contains(t, l.Source, "kv_tokens = max_running × max_model_len")

	v := &Discovery{Engine: EngineVLLM, Limits: Limits{MaxModelLen: 4096}}
	assert.Zero(t, v.Complete(Limits{MaxRunning: 4}).KVTokens, "vLLM shares one pool: nothing follows")
	assert.Equal(t, 9, d.Complete(Limits{KVTokens: 9, MaxRunning: 4}).KVTokens, "a given figure wins")
}

// TestDiscoveryWriteText: the text names the engine, the requests made
// with their answers, the limits found with where they were read, and vLLM's
// blocks; a server that publishes nothing is named unknown.
func TestDiscoveryWriteText(t *testing.T) {
	srv := serve(t, map[string]string{"/metrics": vllmMetrics, "/v1/models": vllmModels, "/version": `{"version":"0.20.1"}`})
	d, err := discover(t.Context(), srv.Client(), srv.URL+"/v1")
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, d.WriteText(&b))
	text := b.String()
	assert.Contains(t, text, "Server     vllm 0.20.1\n")
	assert.Contains(t, text, "/metrics 200")
	assert.Contains(t, text, "Found      kv_tokens 757,087, max_model_len 262,144 (from ", "one line, with the one source that names both")
	assert.NotContains(t, text, "max_running", "vLLM does not publish it")
	assert.Contains(t, text, "387 blocks of 2,048 tokens, max concurrency 2.89\n")

	none := serve(t, nil)
	d, err = discover(t.Context(), none.Client(), none.URL)
	require.NoError(t, err)
	b.Reset()
	require.NoError(t, d.WriteText(&b))
	assert.Contains(t, b.String(), "Server     unknown engine")
	assert.NotContains(t, b.String(), "Found")
}

// discover is DiscoverModel for the model a server serves by default.
func discover(ctx context.Context, client *http.Client, baseURL string) (*Discovery, error) {
	return DiscoverModel(ctx, client, baseURL, "")
}
