package capacity

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"testing"
)

// FuzzParseConfig parses arbitrary config.json bytes and, when they parse,
// estimates vLLM's and SGLang's caches from them under a few launches. No
// input may panic, hang or allocate without bound; a parsed model must pass
// Validate; an estimate never has negative blocks or tokens.
func FuzzParseConfig(f *testing.F) {
	for _, path := range []string{"testdata/qwen3.5-4b-awq/config.json"} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	data, err := os.ReadFile("testdata/startup_logs.json")
	if err != nil {
		f.Fatal(err)
	}
	var doc struct {
		Rows []struct {
			Config json.RawMessage `json:"config"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		f.Fatal(err)
	}
	for _, r := range doc.Rows {
		f.Add([]byte(r.Config))
	}
	f.Add([]byte(denseConfig))
	f.Add([]byte(mlaConfig))

	launches := []VLLM{
		{GPUMemoryBytes: 80 * gibibyte},
		{GPUMemoryBytes: 24 * gibibyte, TensorParallelSize: 4, PipelineParallelSize: 2, EnablePrefixCaching: true, KVCacheDType: "fp8", MaxModelLen: 4096},
		{AvailableKVBytes: 1 * gibibyte, KVCacheDType: "int4_per_token_head", MaxModelLen: 1 << 20, Version: "0.19.0"},
		{NumGPUBlocksOverride: 1000, MaxModelLen: 100},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseConfig(data)
		if err != nil {
			if m != nil {
				t.Fatalf("a model with the error %v", err)
			}
			return
		}
		if err := m.validate(); err != nil {
			t.Fatalf("ParseConfig returned a model Validate refuses: %v", err)
		}
		_ = m.String()
		for _, l := range launches {
			e, err := EstimateVLLM(m, l)
			if e == nil {
				continue
			}
			if e.NumBlocks < 0 || e.KVTokens < 0 || e.LegacyKVTokens < 0 || e.KVConcurrency < 0 || e.BlocksPerRequest < 0 {
				t.Fatalf("negative capacity (error %v): %+v", err, e)
			}
		}
		e, err := EstimateSGLang(m, SGLang{GPUMemoryBytes: 80 * gibibyte, MaxRunningRequests: 64})
		if err == nil && (e.KVTokens < 0 || e.NumBlocks < 0) {
			t.Fatalf("negative SGLang capacity: %+v", e)
		}
	})
}

// FuzzSafetensorsHeader reads arbitrary bytes as a safetensors header. No
// input may panic or allocate beyond the header bound; every size returned
// lies between 0 and the largest checkpoint.
func FuzzSafetensorsHeader(f *testing.F) {
	header := func(h string) []byte {
		var b bytes.Buffer
		_ = binary.Write(&b, binary.LittleEndian, uint64(len(h)))
		b.WriteString(h)
		return b.Bytes()
	}
	f.Add(header(`{"__metadata__":{"format":"pt"},"model.embed_tokens.weight":{"dtype":"BF16","shape":[151936,2048],"data_offsets":[0,622329856]}}`))
	f.Add(header(`{"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"b":{"dtype":"I8","shape":[3],"data_offsets":[4,7]}}`))
	f.Add(header(`{"a":{"dtype":"F4","shape":[8],"data_offsets":[0,4]}}`))
	f.Add(header(`{"a":{"dtype":"BF16","shape":[4],"data_offsets":[0,-8]}}`))
	f.Add(header(`{}`))
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, data []byte) {
		sizes, err := readSafetensorsHeader(bytes.NewReader(data))
		if err != nil {
			return
		}
		for name, n := range sizes {
			if n < 0 || n > maxWeightBytes {
				t.Fatalf("tensor %q of %d bytes", name, n)
			}
		}
	})
}

// FuzzConfigNumbers writes fuzzed numbers into the fields of a hybrid
// config — the counts and sizes whose products size the cache — so that
// the arithmetic is explored, not only the JSON syntax. The same
// properties as FuzzParseConfig hold.
func FuzzConfigNumbers(f *testing.F) {
	f.Add(int64(32), int64(2560), int64(16), int64(4), int64(256), int64(248320), int64(9216), int64(4), int64(0), int64(16), int64(32), int64(128), int64(4), uint8(0))
	f.Add(int64(2), int64(7), int64(8), int64(0), int64(0), int64(0), int64(0), int64(0), int64(0), int64(1), int64(1), int64(1), int64(1), uint8(1))
	f.Add(int64(1e12), int64(4096), int64(1e12), int64(-8), int64(128), int64(128256), int64(14336), int64(2), int64(4096), int64(16), int64(32), int64(128), int64(4), uint8(2))
	f.Fuzz(func(t *testing.T, layers, hidden, heads, kvHeads, headDim, vocab, inter, interval, window, linKeyHeads, linValueHeads, linDim, conv int64, flags uint8) {
		c := map[string]any{
			"num_hidden_layers":       layers,
			"hidden_size":             hidden,
			"num_attention_heads":     heads,
			"vocab_size":              vocab,
			"intermediate_size":       inter,
			"max_position_embeddings": 262144,
			"full_attention_interval": interval,
			"linear_num_key_heads":    linKeyHeads,
			"linear_num_value_heads":  linValueHeads,
			"linear_key_head_dim":     linDim,
			"linear_value_head_dim":   linDim,
			"linear_conv_kernel_dim":  conv,
			"mamba_ssm_dtype":         "float32",
		}
		if kvHeads != 0 {
			c["num_key_value_heads"] = kvHeads
		}
		if headDim != 0 {
			c["head_dim"] = headDim
		}
		if window != 0 {
			c["sliding_window"] = window
		}
		if flags&1 != 0 {
			c["num_experts"], c["num_experts_per_tok"], c["moe_intermediate_size"] = linKeyHeads, conv, inter
		}
		if flags&2 != 0 {
			c["kv_lora_rank"], c["qk_rope_head_dim"] = linDim, conv
		}
		data, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ParseConfig(data)
		if err != nil {
			return
		}
		for _, l := range []VLLM{
			{GPUMemoryBytes: 80 * gibibyte, EnablePrefixCaching: flags&4 != 0, TensorParallelSize: 1 + int(flags>>4)},
			{AvailableKVBytes: 1 << 40, KVCacheDType: "int4_per_token_head", MaxModelLen: 1 << 30},
		} {
			e, err := EstimateVLLM(m, l)
			if e != nil && (e.NumBlocks < 0 || e.KVTokens < 0 || e.LegacyKVTokens < 0 || e.KVConcurrency < 0) {
				t.Fatalf("negative capacity (error %v): %+v", err, e)
			}
		}
	})
}
