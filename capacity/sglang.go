package capacity

import (
	"fmt"
	"strings"
)

// defaultMemFractionStatic is the --mem-fraction-static SGLang picks for a
// mid-size GPU when none is given; SGLang adjusts it by GPU memory and
// parallelism, so pass the server's value where it is known.
const defaultMemFractionStatic = 0.88

// SGLang is an SGLang server's launch flags that decide its KV cache, named
// after sglang.launch_server's flags. Zero values mean defaults.
type SGLang struct {
	// GPUMemoryBytes is the total memory of one GPU. Required unless
	// AvailableKVBytes is set.
	GPUMemoryBytes    int64   `json:"gpu_memory_bytes,omitempty"`
	MemFractionStatic float64 `json:"mem_fraction_static,omitempty"` // 0 means 0.88, what SGLang picks for a mid-size GPU
	// KVCacheDType is "auto", "bf16", "fp8_e4m3" or "fp8_e5m2".
	KVCacheDType       string `json:"kv_cache_dtype,omitempty"`
	TensorParallelSize int    `json:"tp_size,omitempty"`              // 0 means 1
	ContextLength      int    `json:"context_length,omitempty"`       // 0 means the model's
	MaxRunningRequests int    `json:"max_running_requests,omitempty"` // 0 means unknown
	// MaxMambaCacheSize is the number of per-sequence states a hybrid
	// model's state pool holds; 0 means MaxRunningRequests.
	MaxMambaCacheSize int  `json:"max_mamba_cache_size,omitempty"`
	LanguageModelOnly bool `json:"language_model_only,omitempty"` // drop a multimodal model's vision encoder

	WeightsBytes     int64 `json:"weights_bytes,omitempty"`      // weights on one GPU; 0 means estimate
	NonTorchBytes    int64 `json:"non_torch_bytes,omitempty"`    // memory outside PyTorch; 0 means estimate
	AvailableKVBytes int64 `json:"available_kv_bytes,omitempty"` // memory for the KV cache and state pool; replaces the budget
}

// EstimateSGLang sizes SGLang's KV cache for model m launched with l, with
// SGLang's rule (ModelRunner.profile_max_num_token): the memory left after
// the weights, less total × (1 − mem_fraction_static) kept for activations,
// divided by the bytes of one token in every attention layer (KV heads per
// rank × head dim × 2 × element size per layer; for MLA the latent
// kv_lora_rank + qk_rope_head_dim once). A hybrid model's per-sequence state
// pool comes out of the same memory first. There are no blocks: the result's
// BlockSize is 1 and NumBlocks the token count.
func EstimateSGLang(m *Model, l SGLang) (*Estimate, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	if err := l.validate(); err != nil {
		return nil, err
	}
	if l.GPUMemoryBytes <= 0 && l.AvailableKVBytes <= 0 {
		return nil, ErrNoGPUMemory
	}
	tp := max(l.TensorParallelSize, 1)
	e := &Estimate{Engine: EngineSGLang, Model: m, KVCacheDType: strings.ToLower(l.KVCacheDType), BlockSize: 1}
	if e.KVCacheDType == "" {
		e.KVCacheDType = "auto"
	}
	switch e.KVCacheDType {
	case "auto", "bf16", "bfloat16", "fp8_e4m3", "fp8_e5m2":
	default:
		return nil, &InputError{Flag: true, Field: "kv_cache_dtype", Value: l.KVCacheDType, Reason: "not one SGLang takes (auto, bf16, fp8_e4m3, fp8_e5m2)"}
	}
	perLayer, err := attentionBytesPerToken(m, e.KVCacheDType, tp)
	if err != nil {
		return nil, err
	}
	e.AttentionBytesPerToken = perLayer
	attention := m.count(fullAttention) + m.count(slidingAttention)
	cell := perLayer * attention
	e.PageBytes = cell
	e.MaxModelLen = l.ContextLength
	if e.MaxModelLen <= 0 {
		e.MaxModelLen = m.DerivedMaxModelLen
	}
	e.MaxNumSeqs = l.MaxRunningRequests

	b := &e.Budget
	b.request(l.GPUMemoryBytes, l.MemFractionStatic, defaultMemFractionStatic)
	if l.WeightsBytes > 0 {
		b.Weights = given(l.WeightsBytes)
	} else {
		n, detail := m.weightsPerGPU(m.Quantization, l.LanguageModelOnly, tp, 1)
		b.Weights = estimated(n, n, n, detail)
	}
	if l.NonTorchBytes > 0 {
		b.NonTorch = given(l.NonTorchBytes)
	} else {
		b.NonTorch = estimated(defaultNonTorchBytes, defaultNonTorchBytes, defaultNonTorchBytes, "estimated: CUDA workspaces")
	}
	b.Activation = Term{Detail: "inside 1 − mem_fraction_static"}
	b.CUDAGraphs = Term{Detail: "inside 1 − mem_fraction_static"}
	if l.AvailableKVBytes > 0 {
		b.AvailableKV = given(l.AvailableKVBytes)
		e.Expected.Reasons = []string{"the memory for the KV cache was given: no budget term estimated"}
	} else {
		n := b.RequestedBytes - b.Weights.Bytes - b.NonTorch.Bytes
		b.AvailableKV = estimated(n, n, n, "total × mem_fraction_static − weights − non-torch")
		e.Expected.Reasons = []string{"SGLang: no start-up log in the table checks its budget, so the range of this estimate is unknown (shown as none)"}
	}
	avail := b.AvailableKV.Bytes
	if states := m.count(linearAttention) + m.count(mambaLayer); states > 0 {
		kind := linearAttention
		if m.count(mambaLayer) > 0 {
			kind = mambaLayer
		}
		conv, ssm, err := stateBytes(m, kind, tp, "", "")
		if err != nil {
			return nil, err
		}
		e.ConvStateBytes, e.RecurrentStateBytes, e.StateBytes = conv, ssm, conv+ssm
		n := l.MaxMambaCacheSize
		if n <= 0 {
			n = l.MaxRunningRequests
		}
		if n <= 0 {
			return nil, fmt.Errorf("%w: a hybrid model's state pool needs MaxMambaCacheSize or MaxRunningRequests", ErrUnsupported)
		}
		pool := int64(n) * int64(e.StateBytes) * int64(states)
		avail -= pool
		e.Notes = append(e.Notes, fmt.Sprintf("state pool: %d sequences × %d layers × %d bytes", n, states, e.StateBytes))
	}
	if cell <= 0 {
		return nil, fmt.Errorf("%w: no attention layer", ErrUnsupported)
	}
	e.Groups = []Group{{Kind: fullAttention, Layers: attention, BlockSize: 1, BlocksPerRequest: e.MaxModelLen}}
	e.LayersPerBlock = attention
	if avail <= 0 {
		return e, fmt.Errorf("%w: %.2f GiB left for the KV cache", ErrInsufficientMemory, float64(avail)/gibibyte)
	}
	e.NumBlocks = int(avail / int64(cell))
	e.KVTokens, e.GroupAwareKVTokens, e.LegacyKVTokens = e.NumBlocks, e.NumBlocks, e.NumBlocks
	e.Expected.KVTokensLow, e.Expected.KVTokensHigh = e.KVTokens, e.KVTokens
	e.Expected.NumBlocksLow, e.Expected.NumBlocksHigh = e.NumBlocks, e.NumBlocks
	e.BlocksPerRequest = e.MaxModelLen
	if e.MaxModelLen > 0 {
		e.KVConcurrency = float64(e.KVTokens) / float64(e.MaxModelLen)
	}
	return e, nil
}
