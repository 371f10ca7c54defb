package capacity

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/llmload/llmload/internal/gib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEstimateWriteText: the seed run's derivation, term by term, each
// estimated term with its range, the KV tokens with theirs, and why.
func TestEstimateWriteText(t *testing.T) {
	m, err := LoadModel("testdata/qwen3.5-4b-awq")
	require.NoError(t, err)
	launch := seedLaunch
	launch.WeightsBytes = gib.Bytes(3)
	e, err := EstimateVLLM(m, launch)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, e.WriteText(&b))
	text := b.String()
	for _, want := range []string{
		"Model      Qwen3_5ForConditionalGeneration, 32 layers: 8 full_attention, 24 linear_attention\n",
		"           4 KV heads × head dim 256\n",
		"int4_per_token_head: 1,056 bytes per token",
		"2,146,304 bytes per sequence",
		"Memory of one GPU (vllm 0.32.0)",
		"  total                             11.76 GiB\n",
		"  × utilization 0.94                11.05 GiB\n",
		"− weights                          3.00 GiB                given",
		"− activation peak                  0.46 GiB     0.39–0.51  estimated: sampler over 128 rows",
		"= available for the KV cache       5.80 GiB     5.04–6.57",
		"block size           2,048 tokens",
		"groups               4 of up to 8 layers: 3 linear_attention, 1 full_attention",
		"per request          134 blocks at max_model_len 262,144 (2 + 2 + 2 + 128)",
		"kv_cache_size_tokens 704,267, max concurrency 2.69\n                       expected 610,365–796,213 (-13.3% … +13.1%)",
		"legacy (vLLM < 0.20): 360 ÷ 4 groups × 2,048 = 184,320",
		"Expected error\n  activation: 0.46 GiB, -15% … +11% on the table (leave-one-out)",
		"wider: vLLM 0.32.0 is newer than every calibrated row (newest 0.19.0)",
		"; a GPU of 11.76 GiB is unlike every calibrated one (23.58, 79.19 GiB)",
		"the range: ±77% of the estimated activation and non-torch memory (±0.54 GiB): 13% for a launch like the table's rows, + 15% for each unit of distance from them (4.25 here), what covers 90% of the table's rows predicted with their utilization, GPU, version or tensor parallelism held out",
	} {
		assert.Contains(t, text, want)
	}
	assert.NotContains(t, text, " \n", "no trailing spaces")

	// Without its model (an estimate read back from JSON), the derivation
	// starts at the KV cache.
	e.Model = nil
	b.Reset()
	require.NoError(t, e.WriteText(&b))
	assert.NotContains(t, b.String(), "Model")
	assert.Contains(t, b.String(), "KV cache   int4_per_token_head")
}

func TestEstimateWriteTextSGLang(t *testing.T) {
	m, err := LoadModel("testdata/qwen3.5-4b-awq")
	require.NoError(t, err)
	e, err := EstimateSGLang(m, SGLang{GPUMemoryBytes: gib.Bytes(11.76), MaxRunningRequests: 16, ContextLength: 32768})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, e.WriteText(&b))
	text := b.String()
	assert.Contains(t, text, "Memory of one GPU (sglang)\n")
	assert.Contains(t, text, "× utilization 0.88")
	assert.NotContains(t, text, "activation peak", "SGLang's budget has no such term")
	assert.Contains(t, text, "max_total_num_tokens "+commaInt(e.KVTokens)+" = available ÷ 32,768 bytes per token")
	assert.NotContains(t, text, "num_blocks")
}

// failingWriter fails every write after the first n bytes.
type failingWriter struct{ n int }

var errWrite = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		n := w.n
		w.n = 0
		return n, errWrite
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteTextErrors(t *testing.T) {
	e := seedEstimate(t)
	grid := e.Limits().Grid([]int{0, 16384}, []int{1, 2}, seedMaxOutput)
	for _, n := range []int{0, 100, 400} {
		require.ErrorIs(t, e.WriteText(&failingWriter{n: n}), errWrite, "after %d bytes", n)
		require.ErrorIs(t, grid.WriteText(&failingWriter{n: n}), errWrite, "after %d bytes", n)
	}
	grid.Cells = grid.Cells[:3]
	require.Error(t, grid.WriteText(&bytes.Buffer{}), "a grid short of a cell is refused, not indexed past its end")
}

// TestGrid: every cell of contexts × concurrency, in row order, with the
// verdict Check gives it, and the printed marks.
func TestGrid(t *testing.T) {
	limits := Limits{KVTokens: 100_000, KVTokensLow: 90_000, KVTokensHigh: 110_000, MaxRunning: 4, MaxModelLen: 64_000, TemplateOverhead: -1, Source: "a test"}
	contexts, concurrency := []int{0, 16384, 32768, 65536}, []int{1, 4, 8}
	g := limits.Grid(contexts, concurrency, 8192)
	require.Len(t, g.Cells, 12)
	i := 0
	for _, c := range contexts {
		for _, n := range concurrency {
			assert.Equal(t, Cell{ContextTokens: c, Concurrency: n, Verdict: limits.Check(c, n, 8192)}, g.Cells[i])
			i++
		}
	}
	var b bytes.Buffer
	require.NoError(t, g.WriteText(&b))
	assert.Equal(t, `Limits     kv_tokens 100,000 (expected 90,000–110,000), max_running 4, max_model_len 64,000, template overhead 0
           from a test

Predicted grid: rows are context tokens, columns concurrent requests, 8,192 output tokens each
  context    1     4      8  at once
        0   ok    ok  queue        4
      16K   ok  risk   risk  4 (3–4)
      32K   ok    KV     KV        2
      64K  len   len    len        0
at once: how many requests of the row's size run together with none queued, and the range the estimate gives; ok: fits; ok?: fits the known limits, others unknown; risk: within the estimate's range, which may hold it or not; queue: fits, more requests than run at once wait in the server's queue; KV: over the KV tokens; len: over max_model_len
`, b.String())

	var unknown Limits
	b.Reset()
	require.NoError(t, unknown.Grid([]int{1 << 20}, []int{1}, 0).WriteText(&b))
	assert.Contains(t, b.String(), "kv_tokens unknown, max_running unknown, max_model_len unknown, template overhead 16\n")
	assert.Contains(t, b.String(), "\n    1024K  ok?        ?\n")

	empty := limits.Grid(nil, nil, 8192)
	assert.Empty(t, empty.Cells)
	require.NoError(t, empty.WriteText(&b))
}

// TestEstimateJSON: the engine is marshalled by name and reads back.
func TestEstimateJSON(t *testing.T) {
	e := seedEstimate(t)
	b, err := json.Marshal(e)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"engine":"vllm"`)
	assert.NotContains(t, string(b), `"Model"`)
	var back Estimate
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, EngineVLLM, back.Engine)
	assert.Equal(t, e.KVTokens, back.KVTokens)
}
