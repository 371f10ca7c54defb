package capacity

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Bounds on what a real model or launch can be. They are far above every
// published model (the largest have ~128 layers, hidden sizes of ~16K, 512
// experts, 256K vocabularies and 10M-token contexts) and far below where
// the arithmetic on them could overflow, so that input that cannot be true
// is refused rather than computed.
const (
	maxLayers       = 1 << 10 // decoder layers
	maxHidden       = 1 << 16 // hidden_size, vision hidden_size
	maxIntermediate = 1 << 18 // an MLP's or one expert's width
	maxHeads        = 1 << 12 // attention, key/value, linear-attention and Mamba group heads
	maxMambaHeads   = 1 << 16 // Mamba heads (expand × hidden ÷ head dim)
	maxHeadDim      = 1 << 12 // any per-head dimension or state size
	maxLatent       = 1 << 16 // MLA ranks
	maxConvKernel   = 1 << 10 // convolution kernels
	maxVocab        = 1 << 22 // vocab_size
	maxExperts      = 1 << 12 // routed experts
	maxModelLen     = 1 << 30 // positions, windows, max_model_len
	maxWeightBytes  = 1 << 48 // one checkpoint's tensors (256 TiB)
	maxGPUBytes     = 1 << 44 // one GPU's memory (16 TiB)
	maxGPUs         = 1 << 10 // tensor or pipeline parallel size
	maxNumSeqs      = 1 << 16 // max_num_seqs
	maxBatched      = 1 << 24 // max_num_batched_tokens
	maxBlockSize    = 1 << 20 // block_size
	maxGPUBlocks    = 1 << 31 // num_gpu_blocks_override
)

// InputError reports an input no real model or server has: a model
// config field whose value is missing where it is required, not an
// integer, out of range, or at odds with another field; a model file
// refused whole (Field empty): too large, not a regular file, or a
// safetensors header that cannot be true; or a launch flag (Flag true: a
// field of VLLM or SGLang) out of range, or that the estimate cannot size
// (a KV-cache dtype it does not know, or one the engine does not take for
// the model).
type InputError struct {
	File string // the file, when LoadModel read one
	// Field is config.json's name for the field, e.g.
	// "num_attention_heads" or "text_config.hidden_size", or the launch
	// flag's as the engine spells it, e.g. "max_num_seqs"; empty when the
	// file is not JSON.
	Field  string
	Value  string // the value as given ("missing" when absent)
	Reason string // what is wrong with it
	Flag   bool   // Field is a launch flag, not a config field
}

// Error names the file or the flag, the field, its value and what is
// wrong with it.
func (e *InputError) Error() string {
	if e.Flag {
		return fmt.Sprintf("capacity: launch flag %s = %s: %s", e.Field, e.Value, e.Reason)
	}
	where := "model config"
	if e.File != "" {
		where = e.File
	}
	if e.Field == "" {
		return fmt.Sprintf("capacity: %s: %s", where, e.Reason)
	}
	return fmt.Sprintf("capacity: %s: %s = %s: %s", where, e.Field, e.Value, e.Reason)
}

// fieldCheck collects the first out-of-range field.
type fieldCheck struct{ err error }

// in requires lo ≤ v ≤ hi for config field name.
func (c *fieldCheck) in(name string, v, lo, hi int) {
	if c.err != nil || (v >= lo && v <= hi) {
		return
	}
	reason := fmt.Sprintf("want %d to %d", lo, hi)
	if v > hi {
		reason += "; no real model has this much"
	}
	c.err = &InputError{Field: name, Value: strconv.Itoa(v), Reason: reason}
}

// validate checks every field of m against what a real model can be and
// returns an *InputError naming the first that is not: counts and sizes
// within bounds no published model comes near, at least one key/value head
// and no more than the query heads, a positive head dimension, the
// parameters of each kind of layer present when such layers are. ParseConfig
// calls it; EstimateVLLM and EstimateSGLang call it on models built by hand.
func (m *Model) validate() error {
	if m == nil {
		return &InputError{Field: "model", Value: "nil", Reason: "no model"}
	}
	var c fieldCheck
	c.in("num_hidden_layers", len(m.Layers), 1, maxLayers)
	for i, k := range m.Layers {
		if c.err == nil && !slices.Contains(everyLayerKind[:], k) {
			c.err = &InputError{Field: fmt.Sprintf("layers[%d]", i), Value: strconv.Quote(string(k)), Reason: "not a layer kind"}
		}
	}
	c.in("hidden_size", m.HiddenSize, 1, maxHidden)
	c.in("intermediate_size", m.IntermediateSize, 0, maxIntermediate)
	c.in("vocab_size", m.VocabSize, 0, maxVocab)
	c.in("num_attention_heads", m.NumAttentionHeads, 1, maxHeads)
	c.in("num_key_value_heads", m.NumKVHeads, 1, max(m.NumAttentionHeads, 1))
	c.in("head_dim", m.HeadDim, 1, maxHeadDim)
	c.in("max_position_embeddings", m.MaxPositionEmbeddings, 0, maxModelLen)
	c.in("derived max_model_len", m.DerivedMaxModelLen, 0, maxModelLen)
	c.in("sliding_window", m.SlidingWindow, 0, maxModelLen)
	if m.count(slidingAttention) > 0 {
		c.in("sliding_window", m.SlidingWindow, 1, maxModelLen)
	}
	if a := m.MLA; a != nil {
		c.in("kv_lora_rank", a.KVLoraRank, 1, maxLatent)
		c.in("qk_rope_head_dim", a.QKRopeHeadDim, 0, maxHeadDim)
		c.in("qk_nope_head_dim", a.QKNopeHeadDim, 0, maxHeadDim)
		c.in("v_head_dim", a.VHeadDim, 0, maxHeadDim)
		c.in("q_lora_rank", a.QLoraRank, 0, maxLatent)
	}
	if m.count(linearAttention) > 0 && m.GatedDeltaNet == nil && c.err == nil {
		c.err = &InputError{Field: "linear_num_key_heads", Value: "missing", Reason: "linear_attention layers need the Gated DeltaNet dimensions"}
	}
	if g := m.GatedDeltaNet; g != nil {
		c.in("linear_num_key_heads", g.NumKeyHeads, 1, maxHeads)
		c.in("linear_num_value_heads", g.NumValueHeads, 1, maxHeads)
		c.in("linear_key_head_dim", g.KeyHeadDim, 1, maxHeadDim)
		c.in("linear_value_head_dim", g.ValueHeadDim, 1, maxHeadDim)
		c.in("linear_conv_kernel_dim", g.ConvKernel, 1, maxConvKernel)
	}
	if m.count(mambaLayer) > 0 && m.Mamba2 == nil && c.err == nil {
		c.err = &InputError{Field: "mamba_num_heads", Value: "missing", Reason: "mamba layers need the Mamba2 dimensions"}
	}
	if mb := m.Mamba2; mb != nil {
		c.in("mamba_num_heads", mb.NumHeads, 1, maxMambaHeads)
		c.in("mamba_head_dim", mb.HeadDim, 1, maxHeadDim)
		c.in("ssm_state_size", mb.StateSize, 1, maxHeadDim)
		c.in("n_groups", mb.NumGroups, 1, maxHeads)
		c.in("conv_kernel", mb.ConvKernel, 1, maxConvKernel)
	}
	if e := m.MoE; e != nil {
		c.in("num_experts", e.NumExperts, 1, maxExperts)
		c.in("num_experts_per_tok", e.ExpertsPerToken, 0, max(e.NumExperts, 1))
		c.in("moe_intermediate_size", e.IntermediateSize, 0, maxIntermediate)
		c.in("shared_expert_intermediate_size", e.SharedIntermediateSize, 0, maxIntermediate)
		c.in("first_k_dense_replace", e.DenseLayers, 0, len(m.Layers))
	}
	if v := m.Vision; v != nil {
		c.in("vision_config.depth", v.Depth, 0, maxLayers)
		c.in("vision_config.hidden_size", v.HiddenSize, 0, maxHidden)
		c.in("vision_config.intermediate_size", v.IntermediateSize, 0, maxIntermediate)
	}
	c.in("quantization_config.bits", m.Quantization.Bits, 0, 32)
	c.in("quantization_config.group_size", m.Quantization.GroupSize, -1, maxIntermediate)
	if w := m.Weights; w != nil {
		for _, f := range []struct {
			name string
			n    int64
		}{{"language weights", w.LanguageBytes}, {"vision weights", w.VisionBytes}, {"skipped weights", w.SkippedBytes}} {
			if c.err == nil && (f.n < 0 || f.n > maxWeightBytes) {
				c.err = &InputError{Field: f.name, Value: strconv.FormatInt(f.n, 10) + " bytes", Reason: fmt.Sprintf("want 0 to %d bytes", int64(maxWeightBytes))}
			}
		}
	}
	return c.err
}

// launchCheck collects the first out-of-range launch flag.
type launchCheck struct{ err error }

func (c *launchCheck) in(name string, v, lo, hi int64) {
	if c.err == nil && (v < lo || v > hi) {
		c.err = &InputError{Flag: true, Field: name, Value: strconv.FormatInt(v, 10), Reason: fmt.Sprintf("want %d to %d", lo, hi)}
	}
}

func (c *launchCheck) fraction(name string, v float64) {
	if c.err == nil && !(v >= 0 && v <= 1) { // also refuses NaN
		c.err = &InputError{Flag: true, Field: name, Value: strconv.FormatFloat(v, 'g', -1, 64), Reason: "want a fraction between 0 and 1 (0: the default)"}
	}
}

// validate checks the launch flags' ranges (zero means the default for
// every one of them).
func (l *VLLM) validate() error {
	var c launchCheck
	c.in("gpu_memory_bytes", l.GPUMemoryBytes, 0, maxGPUBytes)
	c.fraction("gpu_memory_utilization", l.GPUMemoryUtilization)
	c.in("max_model_len", int64(l.MaxModelLen), 0, maxModelLen)
	c.in("max_num_seqs", int64(l.MaxNumSeqs), 0, maxNumSeqs)
	c.in("max_num_batched_tokens", int64(l.MaxNumBatchedTokens), 0, maxBatched)
	c.in("tensor_parallel_size", int64(l.TensorParallelSize), 0, maxGPUs)
	c.in("pipeline_parallel_size", int64(l.PipelineParallelSize), 0, maxGPUs)
	c.in("block_size", int64(l.BlockSize), 0, maxBlockSize)
	c.in("kernel_block_size", int64(l.KernelBlockSize), 0, maxBlockSize)
	c.in("weight_bits", int64(l.WeightBits), 0, 32)
	c.in("weights_bytes", l.WeightsBytes, 0, maxGPUBytes)
	c.in("activation_bytes", l.ActivationBytes, 0, maxGPUBytes)
	c.in("cuda_graph_bytes", l.CUDAGraphBytes, 0, maxGPUBytes)
	c.in("non_torch_bytes", l.NonTorchBytes, 0, maxGPUBytes)
	c.in("available_kv_bytes", l.AvailableKVBytes, 0, maxGPUBytes)
	c.in("num_gpu_blocks_override", int64(l.NumGPUBlocksOverride), 0, maxGPUBlocks)
	return c.err
}

// validate checks the launch flags' ranges.
func (l *SGLang) validate() error {
	var c launchCheck
	c.in("gpu_memory_bytes", l.GPUMemoryBytes, 0, maxGPUBytes)
	c.fraction("mem_fraction_static", l.MemFractionStatic)
	c.in("tp_size", int64(l.TensorParallelSize), 0, maxGPUs)
	c.in("context_length", int64(l.ContextLength), 0, maxModelLen)
	c.in("max_running_requests", int64(l.MaxRunningRequests), 0, maxNumSeqs)
	c.in("max_mamba_cache_size", int64(l.MaxMambaCacheSize), 0, maxNumSeqs)
	c.in("weights_bytes", l.WeightsBytes, 0, maxGPUBytes)
	c.in("non_torch_bytes", l.NonTorchBytes, 0, maxGPUBytes)
	c.in("available_kv_bytes", l.AvailableKVBytes, 0, maxGPUBytes)
	return c.err
}

// clampInt converts f to an int, saturating at the int range (NaN is 0).
func clampInt(f float64) int {
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt
	case f <= math.MinInt64:
		return math.MinInt
	}
	return int(f)
}

// mulSat returns a × b for non-negative a and b, or math.MaxInt when the
// product overflows.
func mulSat(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt/b {
		return math.MaxInt
	}
	return a * b
}

// addSat returns a + b for non-negative a and b, or math.MaxInt when the sum
// overflows.
func addSat(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}
