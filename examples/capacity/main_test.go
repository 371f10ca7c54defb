package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/gib"
	"github.com/llmload/llmload/internal/tokencount"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// seedArgs are the seed run's model and launch flags.
var seedArgs = []string{
	"-config", "../../capacity/testdata/qwen3.5-4b-awq",
	"-vllm-version", "0.32.0",
	"-gpu-mem-gib", "11.76", "-gpu-memory-utilization", "0.94",
	"-kv-cache-dtype", "int4_per_token_head",
	"-max-model-len", "262144", "-max-num-seqs", "128",
	"-enable-prefix-caching", "-language-model-only",
}

// vllmServer serves the /metrics and /v1/models of a vLLM running the seed
// configuration.
func vllmServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			_, _ = w.Write([]byte(`# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="2048",cache_dtype="int4_per_token_head",enable_prefix_caching="True",engine="0",kv_cache_max_concurrency="2.7",kv_cache_size_tokens="707789",mamba_cache_mode="align",num_gpu_blocks="362"} 1.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="bench"} 0.0
`))
		case "/v1/models":
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"bench","object":"model","max_model_len":262144}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func runJSON(t *testing.T, args ...string) report {
	t.Helper()
	var out, errOut bytes.Buffer
	require.NoError(t, run(t.Context(), append(args, "-json"), &out, &errOut), errOut.String())
	var r report
	require.NoError(t, json.Unmarshal(out.Bytes(), &r), out.String())
	return r
}

func cellAt(t *testing.T, r report, context, concurrency int) capacity.Cell {
	t.Helper()
	for _, c := range r.Cells {
		if c.ContextTokens == context && c.Concurrency == concurrency {
			return c
		}
	}
	t.Fatalf("no cell %d × %d", context, concurrency)
	return capacity.Cell{}
}

func TestRunLive(t *testing.T) {
	srv := vllmServer(t)
	r := runJSON(t, "-url", srv.URL+"/v1", "-max-num-seqs", "128")
	assert.Equal(t, capacity.EngineVLLM, r.Engine)
	assert.Equal(t, 707789, r.KVTokens, "the server's figure, not an estimate")
	assert.Equal(t, 2048, r.BlockSize)
	assert.Equal(t, 362, r.NumBlocks)
	assert.Equal(t, 262144, r.MaxModelLen)
	assert.Equal(t, 128, r.MaxRunning, "from -max-num-seqs: vLLM does not publish it")
	assert.Contains(t, r.Source, "kv_cache_size_tokens")
	assert.Nil(t, r.Estimate)
	require.Len(t, r.Cells, 6*8)

	assert.True(t, cellAt(t, r, 32768, 16).Fits)
	assert.Equal(t, capacity.OverKVTokens, cellAt(t, r, 16384, 32).Reason)
	assert.Equal(t, capacity.OverKVTokens, cellAt(t, r, 0, 128).Reason)
	// How many at once, per row: ⌊707,789 ÷ (context + 8,192)⌋, 0 where one
	// request is longer than max_model_len.
	require.Len(t, r.AtOnce, 6)
	for i, want := range []int{707789 / 8192, 707789 / (16384 + 8192), 707789 / (32768 + 8192), 707789 / (65536 + 8192), 707789 / (131072 + 8192), 0} {
		assert.Equal(t, want, r.AtOnce[i].Requests, r.AtOnce[i].Detail)
		assert.Equal(t, want, r.AtOnce[i].High, "a server's figure has no range")
	}
	assert.Equal(t, capacity.LimitMaxModelLen, r.AtOnce[5].Limit)
	long := cellAt(t, r, 253952, 1)
	assert.Equal(t, capacity.OverMaxModelLen, long.Reason)
	assert.Equal(t, 253952+8192+capacity.DefaultTemplateOverhead, long.Need)
}

func TestRunLiveText(t *testing.T) {
	srv := vllmServer(t)
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"-url", srv.URL, "-contexts", "0,248K", "-concurrency", "1,256"}, &out, &out))
	text := out.String()
	assert.Contains(t, text, "Server     vllm")
	assert.Contains(t, text, "kv_tokens 707,789, max_running unknown, max_model_len 262,144")
	assert.Contains(t, text, "vLLM does not publish max_num_seqs")
	assert.Regexp(t, `(?m)^\s+0\s+ok\?\s+KV\s+86\s*$`, text)
	assert.Regexp(t, `(?m)^\s+248K\s+len\s+len\s+0\s*$`, text)
}

func TestRunEstimate(t *testing.T) {
	r := runJSON(t, seedArgs...)
	assert.Equal(t, capacity.EngineVLLM, r.Engine)
	assert.Equal(t, 712092, r.KVTokens)
	assert.Equal(t, 2048, r.BlockSize)
	assert.Equal(t, 364, r.NumBlocks)
	// The estimate's expected range, in the report and in the estimate.
	assert.Equal(t, 608408, r.KVTokensLow)
	assert.Equal(t, 807951, r.KVTokensHigh)
	assert.Equal(t, r.KVTokensLow, r.Estimate.Expected.KVTokensLow)
	assert.InDelta(t, -14.6, r.Estimate.Expected.LowPercent, 0.05)
	assert.InDelta(t, 13.5, r.Estimate.Expected.HighPercent, 0.05)
	assert.NotEmpty(t, r.Estimate.Expected.Reasons)
	assert.Equal(t, "0.32.0", r.Estimate.Version)
	assert.Equal(t, 262144, r.MaxModelLen)
	assert.Equal(t, 128, r.MaxRunning)
	require.NotNil(t, r.Estimate)
	assert.Equal(t, 134, r.Estimate.BlocksPerRequest)
	require.Len(t, r.Cells, 48)
	// The seed page's grid: the last column, the 248K row, and the
	// diagonal where concurrency × (context + 8K) passes the KV tokens.
	over := map[[2]int]capacity.Reason{}
	for _, c := range r.Cells {
		if !c.Fits {
			over[[2]int{c.ContextTokens, c.Concurrency}] = c.Reason
		}
	}
	assert.Len(t, over, 24, "measurements.csv has 24 Over capacity decode cells")
	assert.Equal(t, capacity.OverKVTokens, over[[2]int{65536, 16}])
	assert.Equal(t, capacity.OverKVTokens, over[[2]int{131072, 8}])
	assert.NotContains(t, over, [2]int{131072, 4})
	// 16 × (32K + 8K) = 655,360 tokens is under the estimate but above
	// the pessimistic end of its range: it fits, at risk.
	risky := cellAt(t, r, 32768, 16)
	assert.True(t, risky.Fits)
	assert.True(t, risky.AtRisk, risky.Detail)
	assert.False(t, cellAt(t, r, 16384, 16).AtRisk)
}

func TestRunEstimateText(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, run(t.Context(), append(seedArgs, "-weights-gib", "3"), &out, &errOut))
	text := out.String()
	for _, want := range []string{
		"Qwen3_5ForConditionalGeneration, 32 layers: 8 full_attention, 24 linear_attention",
		"int4_per_token_head: 1,056 bytes per token",
		"2,146,304 bytes per sequence",
		"− weights                          3.00 GiB                given",
		"− activation peak                  0.46 GiB     0.39–0.51  estimated: sampler over 128 rows",
		"= available for the KV cache       5.80 GiB     5.04–6.57",
		"Memory of one GPU (vllm 0.32.0)",
		"kv_cache_size_tokens 704,267, max concurrency 2.69\n                       expected 610,365–796,213 (-13.3% … +13.1%)",
		"Expected error\n  activation: 0.46 GiB, -15% … +11% on the table (leave-one-out)",
		"wider: vLLM 0.32.0 is newer than every calibrated row (newest 0.19.0)",
		"; a GPU of 11.76 GiB is unlike every calibrated one (23.58, 79.19 GiB)",
		"the range: ±77% of the estimated activation and non-torch memory (±0.54 GiB): 13% for a launch like the table's rows, + 15% for each unit of distance from them (4.25 here), what covers 90% of the table's rows predicted with their utilization, GPU, version or tensor parallelism held out",
		"block size           2,048 tokens",
		"per request          134 blocks at max_model_len 262,144 (2 + 2 + 2 + 128)",
		"legacy (vLLM < 0.20)",
	} {
		assert.Contains(t, text, want)
	}
	assert.Regexp(t, `(?m)^\s+16K(\s+ok){5}\s+risk(\s+KV){2}\s+\d+ \(\d+–\d+\)\s*$`, text)
	assert.Regexp(t, `(?m)^\s+32K(\s+ok){4}\s+risk(\s+KV){3}\s+17 \(14–19\)\s*$`, text)
	assert.Contains(t, text, "kv_tokens 7")
	assert.Contains(t, text, "(expected ")
}

func TestRunOverrides(t *testing.T) {
	r := runJSON(t, append(seedArgs, "-available-kv-gib", "6.5")...)
	assert.False(t, r.Estimate.Budget.AvailableKV.Estimated)
	assert.Equal(t, int(gib.Bytes(6.5))/(2048*1056)/8, r.NumBlocks)

	r = runJSON(t, "-config", "../../capacity/testdata/qwen3.5-4b-awq", "-engine", "sglang",
		"-available-kv-gib", "6", "-max-num-seqs", "16", "-max-model-len", "32768", "-contexts", "16K", "-concurrency", "8")
	assert.Equal(t, capacity.EngineSGLang, r.Engine)
	assert.Positive(t, r.KVTokens)
	require.Len(t, r.Cells, 1)
}

func TestRunErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"nothing to size":    {},
		"bad context list":   {"-config", "x", "-contexts", "12Q"},
		"empty concurrency":  {"-config", "x", "-concurrency", ","},
		"missing config":     {"-config", "does-not-exist"},
		"unknown engine":     {"-config", "../../capacity/testdata/qwen3.5-4b-awq", "-engine", "tgi"},
		"unknown dtype":      append(append([]string{}, seedArgs...), "-kv-cache-dtype", "int3"),
		"stray argument":     {"-config", "x", "extra"},
		"unreachable server": {"-url", "http://127.0.0.1:1"},
		"no gpu memory":      {"-config", "../../capacity/testdata/qwen3.5-4b-awq"},
		"unknown flag":       {"-bogus"},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			require.Error(t, run(t.Context(), args, &out, &out))
		})
	}
	var out bytes.Buffer
	require.ErrorIs(t, run(t.Context(), []string{"-h"}, &out, &out), flag.ErrHelp)
	assert.True(t, strings.Contains(out.String(), "-available-kv-gib"))
}

func TestRunInsufficientMemory(t *testing.T) {
	var out, errOut bytes.Buffer
	args := append(append([]string{}, seedArgs...), "-gpu-mem-gib", "4")
	require.NoError(t, run(t.Context(), args, &out, &errOut), "the derivation is still printed")
	assert.Contains(t, errOut.String(), "not enough GPU memory")
	assert.Contains(t, out.String(), "= available for the KV cache")
}

// TestRunLists: the grid's lists take K (1,024) and M (1,048,576), and
// a count that is not one is refused, naming the flag.
func TestRunLists(t *testing.T) {
	r := runJSON(t, "-url", vllmServer(t).URL, "-contexts", " 0, 16k,1M", "-concurrency", "1.5K")
	var got [][2]int
	for _, c := range r.Cells {
		got = append(got, [2]int{c.ContextTokens, c.Concurrency})
	}
	assert.Equal(t, [][2]int{{0, 1536}, {16384, 1536}, {1 << 20, 1536}}, got)

	var out bytes.Buffer
	err := run(t.Context(), []string{"-config", "x", "-contexts", "0,1.5"}, &out, &out)
	require.ErrorIs(t, err, tokencount.Err)
	assert.Equal(t, `-contexts: "1.5" is not a token count: 1.5 is not whole`, err.Error())
	err = run(t.Context(), []string{"-config", "x", "-concurrency", " , "}, &out, &out)
	assert.EqualError(t, err, "-concurrency: empty list")
}

// ollamaServer answers as Ollama v0.17.4 does (the bodies were recorded
// from one serving a model with a 4,096-token context): 404 for every
// other engine's endpoint.
func ollamaServer(t *testing.T) *httptest.Server {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(t, err)
		return b
	}
	ps, version := read("ollama-api-ps.json"), read("ollama-api-version.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/ps":
			_, _ = w.Write(ps)
		case "/api/version":
			_, _ = w.Write(version)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRunLiveOllamaText: on Ollama, -url names the engine, its version and
// its context length, says where it read them, and which flags supply what
// Ollama does not publish; with -max-num-seqs the KV tokens follow.
func TestRunLiveOllamaText(t *testing.T) {
	srv := ollamaServer(t)
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"-url", srv.URL + "/v1", "-contexts", "0,4K", "-concurrency", "1,8", "-max-tokens", "128"}, &out, &out))
	text := out.String()
	assert.Contains(t, text, "Server     ollama 0.17.4")
	assert.Contains(t, text, "Found      max_model_len 4,096 (from ollama /api/ps context_length)")
	assert.Contains(t, text, "Not found  max_running: pass -max-num-seqs N (Ollama's OLLAMA_NUM_PARALLEL)")
	assert.Contains(t, text, "/api/version 200")
	assert.Regexp(t, `(?m)^\s+4K\s+len\s+len\s+0\s*$`, text)

	r := runJSON(t, "-url", srv.URL, "-contexts", "1K", "-concurrency", "1,4,8", "-max-tokens", "128", "-max-num-seqs", "4")
	assert.Equal(t, capacity.EngineOllama, r.Engine)
	assert.Equal(t, "0.17.4", r.Version)
	assert.Equal(t, 4*4096, r.KVTokens, "a context per slot")
	assert.True(t, cellAt(t, r, 1024, 4).Fits)
	queued := cellAt(t, r, 1024, 8)
	assert.True(t, queued.Fits, "beyond the slots requests queue; they are not over capacity")
	assert.Equal(t, capacity.OverMaxRunning, queued.Reason)
}

// TestRunLiveUnknownText: a server that publishes nothing is named
// unknown, and every limit comes with the flag that gives it.
func TestRunLiveUnknownText(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"-url", srv.URL, "-contexts", "0", "-concurrency", "1"}, &out, &out))
	text := out.String()
	assert.Contains(t, text, "Server     unknown engine")
	for _, flag := range []string{"-max-num-seqs", "-kv-tokens", "-max-model-len"} {
		assert.Contains(t, text, flag)
	}
}

// TestRunURLPasswordNeverPrinted: a password in -url used to be printed in
// the errors and the probes of the JSON output; it is redacted everywhere.
func TestRunURLPasswordNeverPrinted(t *testing.T) {
	const secret = "s3cret-pa55"
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer failing.Close()
	for name, u := range map[string]string{
		"unreachable":   strings.Replace(closed.URL, "://", "://user:"+secret+"@", 1),
		"status errors": strings.Replace(failing.URL, "://", "://user:"+secret+"@", 1) + "/v1",
		"not a URL":     "http://user:" + secret + "@[::1",
	} {
		t.Run(name, func(t *testing.T) {
			for _, format := range [][]string{nil, {"-json"}} {
				var out, errOut bytes.Buffer
				err := run(t.Context(), append([]string{"-url", u}, format...), &out, &errOut)
				all := out.String() + errOut.String()
				if err != nil {
					all += err.Error()
				}
				assert.NotContains(t, all, secret)
				assert.NotEmpty(t, all, "something was printed or returned")
				if strings.Contains(all, "user") {
					assert.Contains(t, all, "xxxxx", "the user is shown, the password redacted")
				}
			}
		})
	}
}

// TestRunServerTextCleaned reads the capacity of servers reached with a
// password in -url: one whose errors echo the password and carry escape
// sequences, one where nothing listens. The password is sent, and
// printed nowhere; no escape sequence is printed.
func TestRunServerTextCleaned(t *testing.T) {
	const password = "pw-capacity-4e5f6a7b"
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, p, _ := r.BasicAuth()
		got.Store(p)
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte("broken \x1b]0;title\x07 " + password))
	}))
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	defer srv.Close()
	for _, base := range []string{srv.URL, dead.URL} {
		u := strings.Replace(base, "http://", "http://carol:"+password+"@", 1)
		for _, asJSON := range []bool{false, true} {
			args := []string{"-url", u, "-timeout", "5s"}
			if asJSON {
				args = append(args, "-json")
			}
			var out, errOut bytes.Buffer
			err := run(t.Context(), args, &out, &errOut)
			all := out.String() + errOut.String()
			if err != nil {
				all += err.Error()
			}
			assert.NotContains(t, all, password, "%s json=%v", base, asJSON)
			assert.NotContains(t, all, "\x1b", "%s json=%v", base, asJSON)
		}
	}
	assert.Equal(t, password, got.Load(), "the password is sent")
}

// TestRunEstimateWithServerVersion: -config with -url estimates with the
// vLLM version the server reports at GET /version, and the server's own
// figures decide the grid.
func TestRunEstimateWithServerVersion(t *testing.T) {
	metrics := `vllm:cache_config_info{block_size="2048",kv_cache_size_tokens="707789",num_gpu_blocks="362"} 1.0` + "\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			_, _ = w.Write([]byte(metrics))
		case "/version":
			_, _ = w.Write([]byte(`{"version":"0.19.0"}`))
		case "/v1/models":
			_, _ = w.Write([]byte(`{"data":[{"id":"bench","max_model_len":262144}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	r := runJSON(t, append(seedArgs[4:], "-config", "../../capacity/testdata/qwen3.5-4b-awq", "-url", srv.URL)...)
	require.NotNil(t, r.Estimate)
	assert.Equal(t, "0.19.0", r.Estimate.Version, "the server's version")
	assert.Zero(t, r.Estimate.Budget.CUDAGraphs.Bytes, "not charged before 0.21")
	assert.Equal(t, 707789, r.KVTokens, "the server's figure beats the estimate")
	assert.Zero(t, r.KVTokensLow, "a live figure has no range")

	r = runJSON(t, append(seedArgs[4:], "-config", "../../capacity/testdata/qwen3.5-4b-awq", "-url", srv.URL, "-vllm-version", "0.30.0")...)
	assert.Equal(t, "0.30.0", r.Estimate.Version, "the flag beats the server")
}

// TestRunEstimateWithoutVersion: without -vllm-version (and no server to
// ask) the range spans every version's profile, and the text says so.
func TestRunEstimateWithoutVersion(t *testing.T) {
	var args []string
	for i := 0; i < len(seedArgs); i++ {
		if seedArgs[i] == "-vllm-version" {
			i++
			continue
		}
		args = append(args, seedArgs[i])
	}
	given := runJSON(t, seedArgs...)
	r := runJSON(t, args...)
	assert.Equal(t, given.KVTokens, r.KVTokens, "the default version's estimate")
	assert.Less(t, r.KVTokensLow, given.KVTokensLow+1)
	assert.Greater(t, r.KVTokensHigh, given.KVTokensHigh, "older versions charge no CUDA graphs: more room")
	require.NotEmpty(t, r.Estimate.Expected.Reasons)
	assert.Contains(t, r.Estimate.Expected.Reasons[0], "vLLM version not given")
}

// TestRunLiveTrickling: against a server that answers and then trickles
// its body, -timeout ends the discovery, and the error names the request
// it ended, how far it got, and the flag that sets the deadline.
func TestRunLiveTrickling(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for {
			if _, err := w.Write([]byte("#")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(20 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	}))
	defer srv.Close()
	var out bytes.Buffer
	start := time.Now()
	err := run(t.Context(), []string{"-url", srv.URL, "-timeout", "300ms"}, &out, &out)
	assert.Less(t, time.Since(start), 5*time.Second)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Regexp(t, `GET http://127\.0\.0\.1:\d+/metrics: \d+ bytes of the answer read when the caller's deadline passed: context deadline exceeded \(-timeout 300ms bounds the whole discovery: raise it for a slow server\)$`, err.Error())
}

// TestRunLiveCredentials reads the capacity of a server behind a gateway
// that wants an API key and a header of its own, given as the other
// commands take them: -api-key-env and -header. Both reach the server; the
// key is printed nowhere; without them the server's refusals are what
// the report shows.
func TestRunLiveCredentials(t *testing.T) {
	const key = "sk-capacity-k3y"
	open := vllmServer(t)
	var asked atomic.Int32
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+key || r.Header.Get("X-Gateway-Tenant") != "bench" {
			http.Error(w, "missing credentials", http.StatusUnauthorized)
			return
		}
		r2, err := http.NewRequestWithContext(r.Context(), r.Method, open.URL+r.URL.Path, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		resp, err := http.DefaultClient.Do(r2)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		_, _ = w.Write(b.Bytes())
	}))
	t.Cleanup(gateway.Close)
	t.Setenv("CAPACITY_TEST_KEY", key)

	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"-url", gateway.URL + "/v1", "-max-num-seqs", "128",
		"-api-key-env", "CAPACITY_TEST_KEY", "-header", "X-Gateway-Tenant: bench", "-transport", "http"}, &out, &errOut)
	require.NoError(t, err, errOut.String())
	assert.Contains(t, out.String(), "kv_tokens 707,789", "the server's figures came through the gateway")
	assert.NotContains(t, out.String()+errOut.String(), key)
	assert.Positive(t, asked.Load())

	out.Reset()
	errOut.Reset()
	require.NoError(t, run(t.Context(), []string{"-url", gateway.URL + "/v1", "-json"}, &out, &errOut), errOut.String())
	var r report
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	assert.Zero(t, r.KVTokens, "without credentials the gateway tells nothing")
	require.NotEmpty(t, r.Discovery.Probes)
	assert.Equal(t, http.StatusUnauthorized, r.Discovery.Probes[0].Status, "and says why")

	err = run(t.Context(), []string{"-url", gateway.URL, "-api-key-env", "CAPACITY_TEST_UNSET"}, &out, &errOut)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CAPACITY_TEST_UNSET is empty")
}

// TestRunJSONFitsIsThePointVerdict: in -json, a cell's fits is what the
// point estimate says and at_risk what its range says. 29 × (16K + 8K) =
// 712,704 tokens is more than the 712,092 KV tokens estimated but within
// the range's optimistic end: it does not fit, at risk; 28 × 24K =
// 688,128 fits, at risk; 24 × 24K = 589,824, under the pessimistic end,
// fits without risk; 40 × 24K = 983,040, past the optimistic end, neither.
func TestRunJSONFitsIsThePointVerdict(t *testing.T) {
	r := runJSON(t, append(seedArgs, "-contexts", "16K", "-concurrency", "24,28,29,40")...)
	require.Equal(t, 712092, r.KVTokens)
	require.Greater(t, r.KVTokensHigh, 29*(16384+8192))
	over := cellAt(t, r, 16384, 29)
	assert.False(t, over.Fits, "its own point estimate says it does not fit: %s", over.Detail)
	assert.True(t, over.AtRisk, "the range says it may: %s", over.Detail)
	assert.Equal(t, capacity.OverKVTokens, over.Reason)
	under := cellAt(t, r, 16384, 28)
	assert.True(t, under.Fits, under.Detail)
	assert.True(t, under.AtRisk, under.Detail)
	safe := cellAt(t, r, 16384, 24)
	assert.True(t, safe.Fits && !safe.AtRisk, safe.Detail)
	far := cellAt(t, r, 16384, 40)
	assert.False(t, far.Fits || far.AtRisk, far.Detail)
	for _, c := range r.Cells {
		need := c.Concurrency * (c.ContextTokens + 8192)
		assert.Equal(t, need <= r.KVTokens, c.Fits, "%d × %d: %s", c.ContextTokens, c.Concurrency, c.Detail)
	}
}

// TestRunGPUName: -gpu-name reaches the estimate, and an 80 GB A100 is
// profiled with vLLM's small scheduler defaults.
func TestRunGPUName(t *testing.T) {
	args := []string{"-config", "../../capacity/testdata/qwen3.5-4b-awq", "-vllm-version", "0.10.1",
		"-gpu-mem-gib", "79.15", "-gpu-memory-utilization", "0.5", "-max-model-len", "32768", "-language-model-only",
		"-contexts", "16K", "-concurrency", "1"}
	h100 := runJSON(t, args...)
	assert.Equal(t, 8192, h100.Estimate.MaxNumBatchedTokens)
	a100 := runJSON(t, append(args, "-gpu-name", "NVIDIA A100-SXM4-80GB")...)
	assert.Equal(t, 2048, a100.Estimate.MaxNumBatchedTokens)
	assert.Equal(t, 256, a100.Estimate.MaxNumSeqs)
	assert.Greater(t, a100.KVTokens, h100.KVTokens)
}
