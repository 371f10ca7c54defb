package capacity

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseConfigRefusesImpossibleFields feeds configs no real model has.
// Before they were validated, the first two divided by zero in EstimateVLLM,
// 1e12 layers ran out of memory, 1e18 panicked in makeslice, and -8 KV heads
// gave an estimate with an absurd capacity. Each is now an *InputError
// naming the field.
func TestParseConfigRefusesImpossibleFields(t *testing.T) {
	const base = `"hidden_size":4096,"intermediate_size":14336,"vocab_size":128256,"max_position_embeddings":8192`
	tests := []struct {
		name, config, field string
	}{
		{"heads beyond any model", `{` + base + `,"num_attention_heads":1e12,"num_hidden_layers":2}`, "num_attention_heads"},
		{"hidden size smaller than the heads", `{"hidden_size":7,"num_attention_heads":8,"num_hidden_layers":2}`, "head_dim"},
		{"a trillion layers", `{` + base + `,"num_attention_heads":32,"num_hidden_layers":1e12}`, "num_hidden_layers"},
		{"1e18 layers", `{` + base + `,"num_attention_heads":32,"num_hidden_layers":1e18}`, "num_hidden_layers"},
		{"negative KV heads", `{` + base + `,"num_attention_heads":32,"num_key_value_heads":-8,"num_hidden_layers":2}`, "num_key_value_heads"},
		{"zero KV heads", `{` + base + `,"num_attention_heads":32,"num_key_value_heads":0,"num_hidden_layers":2}`, "num_key_value_heads"},
		{"more KV heads than heads", `{` + base + `,"num_attention_heads":32,"num_key_value_heads":64,"num_hidden_layers":2}`, "num_key_value_heads"},
		{"negative layers", `{` + base + `,"num_attention_heads":32,"num_hidden_layers":-2}`, "num_hidden_layers"},
		{"a string for a number", `{"hidden_size":"4096","num_attention_heads":32,"num_hidden_layers":2}`, "hidden_size"},
		{"a fraction", `{"hidden_size":4096.5,"num_attention_heads":32,"num_hidden_layers":2}`, "hidden_size"},
		{"in text_config", `{"text_config":{"hidden_size":4096,"num_attention_heads":32,"num_hidden_layers":2,"head_dim":-128}}`, "text_config.head_dim"},
		{"negative vocabulary", `{` + base[:len(base)-len(`,"vocab_size":128256,"max_position_embeddings":8192`)] + `,"vocab_size":-1,"num_attention_heads":32,"num_hidden_layers":2}`, "vocab_size"},
		{"negative window", `{` + base + `,"num_attention_heads":32,"num_hidden_layers":2,"sliding_window":-4096}`, "sliding_window"},
		{"rope factor past any context", `{` + base + `,"num_attention_heads":32,"num_hidden_layers":2,"rope_scaling":{"type":"yarn","factor":1e300}}`, "rope_scaling.factor"},
		{"negative experts", `{` + base + `,"num_attention_heads":32,"num_hidden_layers":2,"num_experts":-64}`, "num_experts"},
		{"more experts per token than experts", `{` + base + `,"num_attention_heads":32,"num_hidden_layers":2,"num_experts":8,"num_experts_per_tok":9}`, "num_experts_per_tok"},
		{"negative MLA rank", `{` + base + `,"num_attention_heads":32,"num_hidden_layers":2,"kv_lora_rank":-512}`, "kv_lora_rank"},
		{"linear attention without heads", `{` + base + `,"num_attention_heads":32,"num_hidden_layers":2,"full_attention_interval":2,"linear_num_key_heads":16,"linear_num_value_heads":-32,"linear_key_head_dim":128,"linear_value_head_dim":128,"linear_conv_kernel_dim":4}`, "linear_num_value_heads"},
		{"mamba with a huge state", `{` + base + `,"num_attention_heads":32,"num_hidden_layers":1,"hybrid_override_pattern":"M","mamba_num_heads":128,"mamba_head_dim":64,"ssm_state_size":1e9,"conv_kernel":4}`, "ssm_state_size"},
		{"negative vision depth", `{` + base + `,"num_attention_heads":32,"num_hidden_layers":2,"vision_config":{"depth":-24}}`, "vision_config.depth"},
		{"a bad layer type", `{` + base + `,"num_attention_heads":32,"num_hidden_layers":2,"layer_types":["full_attention",7]}`, "layer_types[1]"},
		{"quantization bits", `{` + base + `,"num_attention_heads":32,"num_hidden_layers":2,"quantization_config":{"quant_method":"gptq","bits":-4}}`, "quantization_config.bits"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseConfig([]byte(tc.config))
			require.Error(t, err, "parsed %+v", m)
			assert.ErrorAs(t, err, new(*InputError))
			var ce *InputError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.field, ce.Field, err.Error())
			assert.Contains(t, err.Error(), tc.field)
			assert.Nil(t, m)
		})
	}
}

// TestEstimateValidatesHandBuiltModels: a Model built in code, not parsed,
// is checked too: a zero head dimension used to divide by zero.
func TestEstimateValidatesHandBuiltModels(t *testing.T) {
	m := mustParse(t, denseConfig)
	m.HeadDim = 0
	_, err := EstimateVLLM(m, VLLM{GPUMemoryBytes: 80 * gibibyte})
	var ce *InputError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "head_dim", ce.Field)
	_, err = EstimateSGLang(m, SGLang{GPUMemoryBytes: 80 * gibibyte})
	require.ErrorAs(t, err, &ce)

	m = mustParse(t, denseConfig)
	m.Layers = append(m.Layers, layerUnset)
	_, err = EstimateVLLM(m, VLLM{GPUMemoryBytes: 80 * gibibyte})
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "layers[32]", ce.Field)

	_, err = EstimateVLLM(nil, VLLM{GPUMemoryBytes: 80 * gibibyte})
	require.ErrorAs(t, err, new(*InputError))
}

// TestEstimateRefusesImpossibleLaunches: flags out of any real range are a
// *InputError naming the flag, not an estimate (a negative utilization
// used to mean the default, a NaN one a NaN budget).
func TestEstimateRefusesImpossibleLaunches(t *testing.T) {
	m := mustParse(t, denseConfig)
	tests := []struct {
		field  string
		launch VLLM
	}{
		{"gpu_memory_utilization", VLLM{GPUMemoryBytes: 80 * gibibyte, GPUMemoryUtilization: -0.5}},
		{"gpu_memory_utilization", VLLM{GPUMemoryBytes: 80 * gibibyte, GPUMemoryUtilization: math.NaN()}},
		{"gpu_memory_utilization", VLLM{GPUMemoryBytes: 80 * gibibyte, GPUMemoryUtilization: 1.5}},
		{"gpu_memory_bytes", VLLM{GPUMemoryBytes: -80 * gibibyte}},
		{"gpu_memory_bytes", VLLM{GPUMemoryBytes: math.MaxInt64}},
		{"max_num_seqs", VLLM{GPUMemoryBytes: 80 * gibibyte, MaxNumSeqs: 1e9}},
		{"max_num_batched_tokens", VLLM{GPUMemoryBytes: 80 * gibibyte, MaxNumBatchedTokens: -1}},
		{"max_model_len", VLLM{GPUMemoryBytes: 80 * gibibyte, MaxModelLen: math.MaxInt}},
		{"tensor_parallel_size", VLLM{GPUMemoryBytes: 80 * gibibyte, TensorParallelSize: -2}},
		{"weights_bytes", VLLM{GPUMemoryBytes: 80 * gibibyte, WeightsBytes: -1}},
		{"num_gpu_blocks_override", VLLM{NumGPUBlocksOverride: math.MaxInt}},
	}
	for _, tc := range tests {
		t.Run(tc.field, func(t *testing.T) {
			e, err := EstimateVLLM(m, tc.launch)
			require.Error(t, err, "estimated %+v", e)
			assert.ErrorAs(t, err, new(*InputError))
			var le *InputError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, tc.field, le.Field)
		})
	}
	_, err := EstimateSGLang(m, SGLang{GPUMemoryBytes: 80 * gibibyte, MemFractionStatic: -1})
	require.ErrorAs(t, err, new(*InputError))
}

// safetensorsFile returns the bytes of a safetensors header holding one
// tensor entry.
func safetensorsFile(t *testing.T, entry any) []byte {
	t.Helper()
	h, err := json.Marshal(map[string]any{"model.layers.0.mlp.weight": entry})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, binary.Write(&b, binary.LittleEndian, uint64(len(h))))
	b.Write(h)
	return b.Bytes()
}

// TestReadWeightsRefusesImpossibleHeaders: negative or reversed offsets
// used to subtract from the weights, giving an absurd capacity; each is now
// an *InputError (bad safetensors header), as are offsets beyond any
// checkpoint and shapes that disagree with their bytes.
func TestReadWeightsRefusesImpossibleHeaders(t *testing.T) {
	config, err := os.ReadFile("testdata/qwen3.5-4b-awq/config.json")
	require.NoError(t, err)
	for name, entry := range map[string]any{
		"negative offsets":      map[string]any{"dtype": "BF16", "shape": []int{4}, "data_offsets": []int64{0, -8}},
		"negative begin":        map[string]any{"data_offsets": []int64{-1 << 40, 0}},
		"reversed offsets":      map[string]any{"data_offsets": []int64{100, 10}},
		"beyond any checkpoint": map[string]any{"data_offsets": []int64{0, 1 << 62}},
		"three offsets":         map[string]any{"data_offsets": []int64{0, 2, 4}},
		"fractional offsets":    map[string]any{"data_offsets": []float64{0, 2.5}},
		"shape disagrees":       map[string]any{"dtype": "BF16", "shape": []int{4, 4}, "data_offsets": []int64{0, 8}},
		"negative shape":        map[string]any{"dtype": "F32", "shape": []int{-4}, "data_offsets": []int64{0, 16}},
		"shape overflows":       map[string]any{"dtype": "F32", "shape": []int64{1 << 40, 1 << 40}, "data_offsets": []int64{0, 16}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), config, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), safetensorsFile(t, entry), 0o644))
			m, err := LoadModel(dir)
			requireBadHeader(t, err, m)
			assert.Contains(t, err.Error(), "model.safetensors")
		})
	}
	t.Run("a good entry", func(t *testing.T) {
		sizes, err := readSafetensorsHeader(bytes.NewReader(safetensorsFile(t,
			map[string]any{"dtype": "BF16", "shape": []int{4, 4}, "data_offsets": []int64{64, 96}})))
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{"model.layers.0.mlp.weight": 32}, sizes)
	})
	t.Run("index total_size", func(t *testing.T) {
		for _, size := range []string{"-5", "1e30", `"many"`} {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), config, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"),
				[]byte(`{"metadata":{"total_size":`+size+`}}`), 0o644))
			_, err := LoadModel(dir)
			require.Error(t, err, size)
		}
	})
}

// TestCheckSaturates: cells whose need overflows int used to wrap around
// (negative, so "fits"); they are now over capacity.
func TestCheckSaturates(t *testing.T) {
	l := Limits{KVTokens: 1 << 20, MaxRunning: 1 << 40, MaxModelLen: math.MaxInt}
	v := l.Check(math.MaxInt/2, 1<<30, 8192)
	assert.False(t, v.Fits, v.Detail)
	assert.Equal(t, OverKVTokens, v.Reason)
	assert.Equal(t, math.MaxInt, v.Need)

	v = Limits{MaxModelLen: 1 << 20}.Check(math.MaxInt-10, 1, 100)
	assert.Equal(t, OverMaxModelLen, v.Reason)

	v = Limits{KVTokens: 100, MaxRunning: 10, MaxModelLen: 100}.Check(-50, -3, -1)
	assert.True(t, v.Fits, "negative counts count as zero: %s", v.Detail)
}

// TestConfigErrorMessage shows the message a user reads.
func TestConfigErrorMessage(t *testing.T) {
	_, err := ParseConfig([]byte(`{"hidden_size":4096,"num_attention_heads":32,"num_key_value_heads":-8,"num_hidden_layers":2}`))
	require.Error(t, err)
	assert.Equal(t, "capacity: model config: num_key_value_heads = -8: want 1 to 32", err.Error())
	assert.ErrorAs(t, err, new(*InputError))
}

// requireLaunchField requires err to be an *InputError about field.
func requireLaunchField(t *testing.T, err error, field string) {
	t.Helper()
	var le *InputError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, field, le.Field, le.Error())
}

// requireBadHeader requires err to be an *InputError refusing a
// safetensors file's header; m is what was loaded instead, if anything.
func requireBadHeader(t *testing.T, err error, m *Model) {
	t.Helper()
	var ce *InputError
	require.ErrorAs(t, err, &ce, "loaded %+v", m)
	assert.Contains(t, ce.Reason, "bad safetensors header")
	assert.Contains(t, ce.File, ".safetensors")
}
