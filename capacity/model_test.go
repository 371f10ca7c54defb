package capacity

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadModelQwen35(t *testing.T) {
	m, err := LoadModel("testdata/qwen3.5-4b-awq/config.json")
	require.NoError(t, err)
	assert.Equal(t, "Qwen3_5ForConditionalGeneration", m.Architecture)
	assert.Len(t, m.Layers, 32)
	assert.Equal(t, 8, m.count(fullAttention))
	assert.Equal(t, 24, m.count(linearAttention))
	assert.Equal(t, fullAttention, m.Layers[3], "every 4th layer is full attention")
	assert.True(t, m.hybrid())
	assert.Equal(t, 16, m.NumAttentionHeads)
	assert.Equal(t, 4, m.NumKVHeads)
	assert.Equal(t, 256, m.HeadDim)
	assert.Equal(t, 2560, m.HiddenSize)
	assert.Equal(t, 248320, m.VocabSize)
	assert.Equal(t, 262144, m.DerivedMaxModelLen)
	assert.Equal(t, &GatedDeltaNet{NumKeyHeads: 16, NumValueHeads: 32, KeyHeadDim: 128, ValueHeadDim: 128, ConvKernel: 4, StateDType: "float32"}, m.GatedDeltaNet)
	assert.Equal(t, Quantization{Method: "compressed-tensors", Bits: 4, GroupSize: 128}, m.Quantization)
	require.NotNil(t, m.Vision)
	assert.Equal(t, 24, m.Vision.Depth)
	assert.True(t, m.TieWordEmbeddings)
	assert.Nil(t, m.Weights, "a config.json file alone: weights are estimated")
	assert.Equal(t, "Qwen3_5ForConditionalGeneration, 32 layers: 8 full_attention, 24 linear_attention", m.String())

	// The AWQ checkpoint's text weights are about 3 GB; the vision
	// encoder adds ~0.6 GB unless --language-model-only drops it.
	text, _ := m.estimateWeights(m.Quantization, true)
	all, _ := m.estimateWeights(m.Quantization, false)
	assert.InDelta(t, 3.0e9, float64(text), 0.3e9)
	assert.Greater(t, all, text)
}

func TestParseConfigLayouts(t *testing.T) {
	tests := []struct {
		name   string
		config string
		want   []layerKind
		check  func(t *testing.T, m *Model)
	}{
		{
			name:   "dense with llama3 rope keeps its positions",
			config: `{"hidden_size":4096,"num_attention_heads":32,"num_key_value_heads":8,"num_hidden_layers":2,"max_position_embeddings":131072,"rope_scaling":{"rope_type":"llama3","factor":8.0,"original_max_position_embeddings":8192}}`,
			want:   []layerKind{fullAttention, fullAttention},
			check: func(t *testing.T, m *Model) {
				assert.Equal(t, 128, m.HeadDim, "hidden ÷ heads")
				assert.Equal(t, 131072, m.DerivedMaxModelLen)
				assert.Equal(t, "bfloat16", m.DType)
			},
		},
		{
			name:   "yarn scales the original positions",
			config: `{"hidden_size":2048,"num_attention_heads":16,"num_hidden_layers":1,"max_position_embeddings":32768,"rope_scaling":{"type":"yarn","factor":4,"original_max_position_embeddings":32768}}`,
			want:   []layerKind{fullAttention},
			check:  func(t *testing.T, m *Model) { assert.Equal(t, 131072, m.DerivedMaxModelLen) },
		},
		{
			name:   "layer_types with a sliding window",
			config: `{"hidden_size":2880,"num_attention_heads":64,"num_key_value_heads":8,"head_dim":64,"num_hidden_layers":4,"sliding_window":128,"layer_types":["sliding_attention","full_attention","sliding_attention","full_attention"]}`,
			want:   []layerKind{slidingAttention, fullAttention, slidingAttention, fullAttention},
		},
		{
			name:   "a window on every layer",
			config: `{"hidden_size":4096,"num_attention_heads":32,"num_key_value_heads":8,"num_hidden_layers":2,"sliding_window":4096}`,
			want:   []layerKind{slidingAttention, slidingAttention},
		},
		{
			name:   "a window that is switched off",
			config: `{"hidden_size":4096,"num_attention_heads":32,"num_hidden_layers":2,"sliding_window":131072,"use_sliding_window":false}`,
			want:   []layerKind{fullAttention, fullAttention},
		},
		{
			name:   "gemma-style sliding_window_pattern",
			config: `{"hidden_size":2560,"num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,"num_hidden_layers":6,"sliding_window":1024,"sliding_window_pattern":3}`,
			want:   []layerKind{slidingAttention, slidingAttention, fullAttention, slidingAttention, slidingAttention, fullAttention},
		},
		{
			name:   "full_attention_interval",
			config: `{"hidden_size":2048,"num_attention_heads":16,"num_key_value_heads":2,"head_dim":256,"num_hidden_layers":4,"full_attention_interval":2,"linear_num_key_heads":16,"linear_num_value_heads":32,"linear_key_head_dim":128,"linear_value_head_dim":128,"linear_conv_kernel_dim":4}`,
			want:   []layerKind{linearAttention, fullAttention, linearAttention, fullAttention},
			check:  func(t *testing.T, m *Model) { assert.Empty(t, m.GatedDeltaNet.StateDType, "model dtype") },
		},
		{
			name:   "nemotron-h pattern",
			config: `{"model_type":"nemotron_h","hidden_size":4096,"num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,"num_hidden_layers":5,"hybrid_override_pattern":"M-M*E","mamba_num_heads":128,"mamba_head_dim":64,"ssm_state_size":128,"n_groups":8,"conv_kernel":4}`,
			want:   []layerKind{mambaLayer, noCache, mambaLayer, fullAttention, noCache},
			check: func(t *testing.T, m *Model) {
				assert.Equal(t, &Mamba2{NumHeads: 128, HeadDim: 64, StateSize: 128, NumGroups: 8, ConvKernel: 4}, m.Mamba2)
			},
		},
		{
			name:   "mla and moe",
			config: `{"hidden_size":2048,"num_attention_heads":16,"num_hidden_layers":2,"kv_lora_rank":512,"qk_rope_head_dim":64,"qk_nope_head_dim":128,"v_head_dim":128,"q_lora_rank":null,"n_routed_experts":64,"n_shared_experts":2,"num_experts_per_tok":6,"moe_intermediate_size":1408,"first_k_dense_replace":1}`,
			want:   []layerKind{fullAttention, fullAttention},
			check: func(t *testing.T, m *Model) {
				assert.Equal(t, &MLA{KVLoraRank: 512, QKRopeHeadDim: 64, QKNopeHeadDim: 128, VHeadDim: 128}, m.MLA)
				assert.Equal(t, &MoE{NumExperts: 64, ExpertsPerToken: 6, IntermediateSize: 1408, SharedIntermediateSize: 2816, DenseLayers: 1}, m.MoE)
			},
		},
		{
			name:   "multimodal nesting falls back to the top level",
			config: `{"architectures":["Gemma3ForConditionalGeneration"],"text_config":{"hidden_size":2560,"num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,"num_hidden_layers":1},"max_position_embeddings":131072,"vision_config":{"num_hidden_layers":27,"hidden_size":1152,"intermediate_size":4304},"quantization_config":{"quant_method":"fp8"}}`,
			want:   []layerKind{fullAttention},
			check: func(t *testing.T, m *Model) {
				assert.Equal(t, 131072, m.MaxPositionEmbeddings)
				assert.Equal(t, &Vision{Depth: 27, HiddenSize: 1152, IntermediateSize: 4304}, m.Vision)
				assert.Equal(t, Quantization{Method: "fp8", Bits: 8}, m.Quantization)
			},
		},
		{
			name:   "modelopt nvfp4",
			config: `{"hidden_size":64,"num_attention_heads":4,"num_hidden_layers":1,"quantization_config":{"quant_method":"modelopt","quant_algo":"NVFP4"}}`,
			want:   []layerKind{fullAttention},
			check: func(t *testing.T, m *Model) {
				assert.Equal(t, Quantization{Method: "nvfp4", Bits: 4, GroupSize: 16}, m.Quantization)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseConfig([]byte(tc.config))
			require.NoError(t, err)
			assert.Equal(t, tc.want, m.Layers)
			if tc.check != nil {
				tc.check(t, m)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	for name, config := range map[string]string{
		"not json":            `{`,
		"no layers":           `{"hidden_size":1,"num_attention_heads":1}`,
		"no heads":            `{"hidden_size":1,"num_hidden_layers":1}`,
		"short layer_types":   `{"hidden_size":8,"num_attention_heads":1,"num_hidden_layers":2,"layer_types":["full_attention"]}`,
		"unknown layer type":  `{"hidden_size":8,"num_attention_heads":1,"num_hidden_layers":1,"layer_types":["retention"]}`,
		"linear without dims": `{"hidden_size":8,"num_attention_heads":1,"num_hidden_layers":2,"full_attention_interval":2}`,
		"mamba without dims":  `{"hidden_size":8,"num_attention_heads":1,"num_hidden_layers":1,"hybrid_override_pattern":"M"}`,
		"bad pattern":         `{"hidden_size":8,"num_attention_heads":1,"num_hidden_layers":1,"hybrid_override_pattern":"?"}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseConfig([]byte(config))
			require.ErrorAs(t, err, new(*InputError))
		})
	}
	_, err := LoadModel(filepath.Join(t.TempDir(), "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// writeSafetensors writes a safetensors file whose header lists tensors of
// the given byte sizes (the data itself is not needed to size them).
func writeSafetensors(t *testing.T, path string, tensors map[string]int64) {
	t.Helper()
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var off int64
	for name, size := range tensors {
		header[name] = map[string]any{"dtype": "BF16", "shape": []int64{size / 2}, "data_offsets": []int64{off, off + size}}
		off += size
	}
	h, err := json.Marshal(header)
	require.NoError(t, err)
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, binary.Write(f, binary.LittleEndian, uint64(len(h))))
	_, err = f.Write(h)
	require.NoError(t, err)
}

func TestLoadModelDirectoryWeights(t *testing.T) {
	config, err := os.ReadFile("testdata/qwen3.5-4b-awq/config.json")
	require.NoError(t, err)

	t.Run("safetensors headers", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), config, 0o644))
		writeSafetensors(t, filepath.Join(dir, "model-00001-of-00002.safetensors"), map[string]int64{
			"model.language_model.embed_tokens.weight": 1000,
			"model.language_model.layers.0.mlp.w":      500,
			"model.visual.blocks.0.attn.qkv.weight":    300,
		})
		writeSafetensors(t, filepath.Join(dir, "model-00002-of-00002.safetensors"), map[string]int64{
			"mtp.layers.0.mlp.w": 200,
			"lm_head.weight":     1000,
		})
		m, err := LoadModel(dir)
		require.NoError(t, err)
		require.NotNil(t, m.Weights)
		assert.Equal(t, int64(2500), m.Weights.LanguageBytes)
		assert.Equal(t, int64(300), m.Weights.VisionBytes)
		assert.Equal(t, int64(200), m.Weights.SkippedBytes)
		n, _ := m.estimateWeights(m.Quantization, true)
		assert.Equal(t, int64(2500), n)
		n, _ = m.estimateWeights(m.Quantization, false)
		assert.Equal(t, int64(2800), n)
		n, detail := m.estimateWeights(Quantization{Method: "fp8", Bits: 8}, true)
		assert.Greater(t, n, int64(1e9), "quantized at load: the files do not tell")
		assert.Contains(t, detail, "estimated")
	})
	t.Run("index total_size", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), config, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"),
			[]byte(`{"metadata":{"total_size":3123456789},"weight_map":{}}`), 0o644))
		m, err := LoadModel(dir)
		require.NoError(t, err)
		assert.Equal(t, int64(3123456789), m.Weights.LanguageBytes)
		assert.True(t, strings.Contains(m.Weights.Source, "total_size"))
	})
	t.Run("config only", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), config, 0o644))
		m, err := LoadModel(dir)
		require.NoError(t, err)
		assert.Nil(t, m.Weights)
	})
	t.Run("corrupt header", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), config, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "x.safetensors"), []byte{1, 2, 3}, 0o644))
		_, err := LoadModel(dir)
		require.Error(t, err)
	})
}

// TestLoadModelRefusesHugeFiles: a config.json that is a link to
// /dev/zero, a sparse file of 3 GiB, a named pipe no one writes to, an
// index or a safetensors header beyond its limit — each is refused at once
// with an *InputError naming the file (and the limit), without reading it
// into memory.
func TestLoadModelRefusesHugeFiles(t *testing.T) {
	refused := func(t *testing.T, path, want string) {
		t.Helper()
		start := time.Now()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := LoadModel(path)
		runtime.ReadMemStats(&after)
		var ce *InputError
		require.ErrorAs(t, err, &ce)
		assert.Contains(t, ce.File, filepath.Base(path))
		assert.Contains(t, err.Error(), want)
		assert.Less(t, time.Since(start), 5*time.Second)
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(32<<20), "bytes allocated refusing it")
	}
	t.Run("a link to /dev/zero", func(t *testing.T) {
		if _, err := os.Stat("/dev/zero"); err != nil {
			t.Skip("no /dev/zero")
		}
		dir := t.TempDir()
		require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "config.json")))
		refused(t, dir, "config.json: a device, not a file: not read")
		refused(t, filepath.Join(dir, "config.json"), "a device, not a file")
	})
	t.Run("a sparse 3 GiB config.json", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.json")
		f, err := os.Create(path)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(3<<30))
		require.NoError(t, f.Close())
		refused(t, path, "larger than 16 MiB")
	})
	t.Run("a named pipe", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.json")
		if err := mkfifo(path); err != nil {
			t.Skip("no named pipes here:", err)
		}
		refused(t, path, "config.json: a named pipe, not a file: not read")
	})
	t.Run("a sparse index beyond its limit", func(t *testing.T) {
		dir := t.TempDir()
		cfg, err := os.ReadFile("testdata/qwen3.5-4b-awq/config.json")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600))
		f, err := os.Create(filepath.Join(dir, "model.safetensors.index.json"))
		require.NoError(t, err)
		require.NoError(t, f.Truncate(1<<30))
		require.NoError(t, f.Close())
		refused(t, dir, "model.safetensors.index.json: larger than 64 MiB")
	})
	t.Run("a safetensors header beyond the format's limit", func(t *testing.T) {
		dir := t.TempDir()
		cfg, err := os.ReadFile("testdata/qwen3.5-4b-awq/config.json")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600))
		var header [8]byte
		binary.LittleEndian.PutUint64(header[:], 100_000_001)
		path := filepath.Join(dir, "model.safetensors")
		require.NoError(t, os.WriteFile(path, header[:], 0o600))
		require.NoError(t, os.Truncate(path, 1<<30)) // sparse: the header's claimed bytes are there, as zeros
		start := time.Now()
		_, err = LoadModel(dir)
		requireBadHeader(t, err, nil)
		assert.Contains(t, err.Error(), "a header of 100000001 bytes")
		assert.Contains(t, err.Error(), "model.safetensors")
		assert.Less(t, time.Since(start), 5*time.Second)
	})
}
