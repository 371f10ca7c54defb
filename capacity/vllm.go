package capacity

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// vLLM's defaults for the flags VLLM leaves at zero.
const (
	// defaultGPUMemoryUtilization is vLLM's --gpu-memory-utilization.
	defaultGPUMemoryUtilization = 0.9
	// defaultBlockSize is vLLM's --block-size for attention.
	defaultBlockSize = 16
	// defaultKernelBlockSize is the block-size alignment of vLLM's CUDA
	// attention backends (FlashAttention, FlashInfer and Triton take
	// multiples of 16).
	defaultKernelBlockSize = 16
	// largeGPUBytes is where vLLM's scheduler defaults grow: GPUs with at
	// least 70 GiB default to 8192 batched tokens and 1024 sequences, smaller
	// ones to 2048 and 256.
	largeGPUBytes = 70 * gibibyte
)

// ErrInsufficientMemory reports a budget that leaves no room for the KV
// cache, or too little for one request of max_model_len (vLLM refuses to
// start then). The Estimate returned with it is filled in, so its derivation
// can still be shown.
var ErrInsufficientMemory = errors.New("capacity: not enough GPU memory for the KV cache")

// ErrNoGPUMemory reports an estimate asked for without the memory to size
// the cache from: neither the GPU's total memory nor the memory available
// for the KV cache (nor a block count) was given.
var ErrNoGPUMemory = errors.New("capacity: no GPU memory given: set the GPU's total memory or the memory available for the KV cache")

// ErrUnsupported reports a configuration the estimate does not model.
var ErrUnsupported = errors.New("capacity: not supported by the estimate")

// VLLM is a vLLM server's launch flags that decide its KV cache, named after
// vllm serve's flags. Zero values mean vLLM's defaults. The fields ending in
// Bytes override one term of the memory estimate each (zero: estimate it);
// they are what a start-up log tells: "Model loading took X GiB" is
// WeightsBytes, "Available KV cache memory: Y GiB" is AvailableKVBytes.
type VLLM struct {
	// Version is the vLLM version ("0.32.0", as GET /version tells it); it
	// picks the formulas and the memory terms of the profile run. Empty
	// means DefaultVLLMVersion's estimate with a range spanning every
	// version's profile.
	Version string `json:"version,omitempty"`
	// DType is --dtype ("bfloat16", "float16", "float32"); empty or "auto"
	// means the config's, except that vLLM serves float32 checkpoints in
	// bfloat16.
	DType string `json:"dtype,omitempty"`
	// GPUMemoryBytes is the total memory of one GPU as PyTorch reports it
	// (11.76 GiB for a 12 GB RTX 3060). Required unless AvailableKVBytes or
	// NumGPUBlocksOverride is set.
	GPUMemoryBytes int64 `json:"gpu_memory_bytes,omitempty"`
	// GPUName is the GPU's name as PyTorch reports it ("NVIDIA
	// A100-SXM4-80GB"); empty means unknown. vLLM picks its scheduler
	// defaults by it: an A100 keeps the small ones whatever its memory.
	GPUName              string  `json:"gpu_name,omitempty"`
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization,omitempty"` // 0 means vLLM's default, 0.9
	KVCacheDType         string  `json:"kv_cache_dtype,omitempty"`         // one of kvCacheDTypes; "" means "auto"
	MaxModelLen          int     `json:"max_model_len,omitempty"`          // 0 means the model's DerivedMaxModelLen
	MaxNumSeqs           int     `json:"max_num_seqs,omitempty"`           // 0 means 256, or 1024 on a GPU of 70 GiB or more other than an A100 (V0 engine, before 0.8: 256)
	MaxNumBatchedTokens  int     `json:"max_num_batched_tokens,omitempty"` // 0 means 2048, or 8192 on a GPU of 70 GiB or more other than an A100 (V0 engine: max_model_len, at least 2048, or 512 past 32,768 where chunked prefill turns on)
	TensorParallelSize   int     `json:"tensor_parallel_size,omitempty"`   // 0 means 1
	PipelineParallelSize int     `json:"pipeline_parallel_size,omitempty"` // 0 means 1
	// BlockSize is --block-size; hybrid models raise it so that one
	// attention block is at least one layer's state. 0 means
	// 16, vLLM's default.
	BlockSize int `json:"block_size,omitempty"`
	// KernelBlockSize is the attention backend's block alignment;
	// 0 means 16, the alignment of vLLM's CUDA attention backends.
	KernelBlockSize     int  `json:"kernel_block_size,omitempty"`
	EnablePrefixCaching bool `json:"enable_prefix_caching,omitempty"` // --enable-prefix-caching
	// MambaCacheMode is "none" (one state block per sequence and layer
	// group) or "align" (two); empty means "align" for a hybrid model with
	// prefix caching, as vLLM sets it, and "none" otherwise.
	MambaCacheMode     string `json:"mamba_cache_mode,omitempty"`
	MambaCacheDType    string `json:"mamba_cache_dtype,omitempty"`     // convolution state; "" means the model dtype
	MambaSSMCacheDType string `json:"mamba_ssm_cache_dtype,omitempty"` // recurrent state; "" means config.json's mamba_ssm_dtype, else the model dtype
	EnforceEager       bool   `json:"enforce_eager,omitempty"`         // no CUDA graphs
	// LanguageModelOnly drops a multimodal model's vision encoder.
	LanguageModelOnly bool `json:"language_model_only,omitempty"`
	// Quantization is --quantization ("fp8" quantizes a 16-bit checkpoint
	// at load); empty means the config's quantization_config.
	Quantization string `json:"quantization,omitempty"`
	WeightBits   int    `json:"weight_bits,omitempty"` // bits per quantized weight; 0 means the config's

	WeightsBytes         int64 `json:"weights_bytes,omitempty"`           // weights on one GPU ("Model loading took")
	ActivationBytes      int64 `json:"activation_bytes,omitempty"`        // the profile run's torch peak beyond the weights
	CUDAGraphBytes       int64 `json:"cuda_graph_bytes,omitempty"`        // "Estimated CUDA graph memory"
	NonTorchBytes        int64 `json:"non_torch_bytes,omitempty"`         // memory outside PyTorch's allocator
	AvailableKVBytes     int64 `json:"available_kv_bytes,omitempty"`      // "Available KV cache memory"; replaces the whole budget
	NumGPUBlocksOverride int   `json:"num_gpu_blocks_override,omitempty"` // --num-gpu-blocks-override; replaces the budget
}

// Group is one KV-cache group of vLLM's hybrid allocator: layers of one kind
// that share a block table. All groups draw their blocks from one pool.
type Group struct {
	Kind      string `json:"kind"`       // what the group's layers keep, as [Model.Layers] names it
	Layers    int    `json:"layers"`     // layers in the group; the last group of a kind may be short (padded)
	BlockSize int    `json:"block_size"` // tokens per block as vLLM records it (max_model_len for state groups without prefix caching)
	// BlocksPerRequest is what one request of max_model_len holds in this
	// group: its tokens in blocks for attention, fixed state blocks for
	// linear attention and Mamba.
	BlocksPerRequest int `json:"blocks_per_request"`
}

// Estimate is a predicted KV-cache configuration and how it was derived.
type Estimate struct {
	// Model is the model estimated. It is not marshalled: a report keeps
	// the model beside the estimate.
	Model *Model `json:"-"`

	Engine       Engine `json:"engine"`                 // EngineVLLM or EngineSGLang: whose rules were applied
	Version      string `json:"vllm_version,omitempty"` // the vLLM version whose rules were applied
	KVCacheDType string `json:"kv_cache_dtype"`         // as normalized ("auto", "bfloat16", "fp8", ...)
	Budget       Budget `json:"budget"`                 // the memory derivation

	AttentionBytesPerToken int `json:"attention_bytes_per_token"`       // one token in one attention layer on one GPU
	ConvStateBytes         int `json:"conv_state_bytes,omitempty"`      // one sequence's convolution state in one state layer
	RecurrentStateBytes    int `json:"recurrent_state_bytes,omitempty"` // one sequence's recurrent (SSM) state in one state layer
	StateBytes             int `json:"state_bytes,omitempty"`           // ConvStateBytes + RecurrentStateBytes

	BlockSize int `json:"block_size"` // attention tokens per block, after hybrid alignment (SGLang: 1)
	PageBytes int `json:"page_bytes"` // one layer's share of one block (SGLang: one token in all attention layers)
	// LayersPerBlock is how many layers one block spans: the group size, the
	// number of memory pools each shared by one layer of every group.
	LayersPerBlock   int     `json:"layers_per_block"`
	Groups           []Group `json:"groups"`                     // the KV-cache groups, one block pool
	MambaCacheMode   string  `json:"mamba_cache_mode,omitempty"` // "none" or "align" for models with state layers
	NumBlocks        int     `json:"num_blocks"`                 // blocks in the pool (vLLM's num_gpu_blocks)
	BlocksPerRequest int     `json:"blocks_per_request"`         // blocks one request of MaxModelLen holds, over all groups

	KVTokens      int     `json:"kv_tokens"`       // kv_cache_size_tokens as this vLLM version reports it
	KVConcurrency float64 `json:"max_concurrency"` // kv_cache_max_concurrency, vLLM's "Maximum concurrency": NumBlocks ÷ BlocksPerRequest, requests of MaxModelLen the cache holds
	// GroupAwareKVTokens is int(KVConcurrency × MaxModelLen), what vLLM
	// ≥ 0.20 reports; LegacyKVTokens is NumBlocks ÷ len(Groups) × the
	// smallest group block size, what earlier versions logged as "GPU KV
	// cache size".
	GroupAwareKVTokens int `json:"group_aware_kv_tokens"`
	LegacyKVTokens     int `json:"legacy_kv_tokens"` // see GroupAwareKVTokens

	MaxModelLen         int      `json:"max_model_len"`          // effective max_model_len
	MaxNumSeqs          int      `json:"max_num_seqs"`           // effective max_num_seqs (SGLang: max_running_requests, 0 if not given)
	MaxNumBatchedTokens int      `json:"max_num_batched_tokens"` // effective max_num_batched_tokens
	Notes               []string `json:"notes,omitempty"`        // padding, caveats and version differences
	// Expected is the range KVTokens is expected to fall in, from the ranges
	// of the budget's estimated terms.
	Expected Range `json:"expected_error"`
}

// Range is the range an estimate's KV capacity is expected to fall
// in, 90% of the time: calibrated by leave-one-out on the start-up-log table
// (see testdata/startup_logs.json), and wider the farther a launch lies
// from the table's rows in utilization, GPU memory, vLLM version and tensor
// parallelism (calibrated by holding those settings out), spanning every
// version's profile when the version is not given.
// A budget the caller gave has no range.
type Range struct {
	KVTokensLow   int     `json:"kv_tokens_low"`   // KVTokens with every estimated term at its largest
	KVTokensHigh  int     `json:"kv_tokens_high"`  // KVTokens with every estimated term at its smallest
	NumBlocksLow  int     `json:"num_blocks_low"`  // NumBlocks likewise
	NumBlocksHigh int     `json:"num_blocks_high"` // NumBlocks likewise
	LowPercent    float64 `json:"low_percent"`     // (KVTokensLow − KVTokens) ÷ KVTokens × 100, at most 0
	HighPercent   float64 `json:"high_percent"`    // (KVTokensHigh − KVTokens) ÷ KVTokens × 100, at least 0
	// Reasons say which terms could not be known and the range each takes.
	Reasons []string `json:"reasons,omitempty"`
}

// Limits returns the estimate as the limits a cell is checked against.
func (e *Estimate) Limits() Limits {
	l := Limits{
		KVTokens:    e.KVTokens,
		MaxRunning:  e.MaxNumSeqs,
		MaxModelLen: e.MaxModelLen,
		Source:      "estimate (" + string(e.Engine) + ")",
	}
	if x := e.Expected; x.KVTokensLow < x.KVTokensHigh {
		l.KVTokensLow, l.KVTokensHigh = x.KVTokensLow, x.KVTokensHigh
	}
	return l
}

// version returns major and minor of a version like "0.32.0" or
// "v0.19.1rc2"; ok is false for an empty or unparsable one.
func version(v string) (major, minor int, ok bool) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	digits := strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
	minor, err2 := strconv.Atoi(digits)
	return major, minor, err1 == nil && err2 == nil
}

// before reports whether vLLM version v is older than major.minor; an empty
// version is DefaultVLLMVersion.
func before(v string, major, minor int) bool {
	if v == "" {
		v = DefaultVLLMVersion
	}
	ma, mi, ok := version(v)
	return ok && (ma < major || ma == major && mi < minor)
}

// versionBefore reports whether vLLM version a is older than b (by major
// and minor).
func versionBefore(a, b string) bool {
	ma, mi, _ := version(b)
	return before(a, ma, mi)
}

// EstimateVLLM sizes vLLM's KV cache for model m launched with l.
//
// The budget is total memory × utilization minus the weights, the profile
// run's activation peak, CUDA graphs (charged since vLLM 0.21) and the
// non-torch memory the profile run adds, each as vLLM l.Version computes it:
// the activation is the larger of the forward pass over
// max_num_batched_tokens and the sampler over min(max_num_seqs,
// max_num_batched_tokens) rows of the vocabulary (plus the fused-MoE
// workspace), at bytes per token and per logit fitted to published start-up
// logs for each version range; non-torch memory is fitted per version and
// tensor-parallel or not; the CUDA-graph term follows vLLM's own estimate.
// Each estimated term carries the range its fit's leave-one-out residuals
// span. Estimate.Expected is the range of KV tokens that held the logged
// figure for 90% of the table's start-up logs, each predicted without it,
// widened with the launch's distance from the table's rows (a utilization,
// GPU memory, version or tensor-parallel size no row has; the reasons name
// each), spanning every version's profile when l.Version is empty. A
// term given in l replaces the estimate and its range.
//
// Attention layers store AttentionBytesPerToken per token; in a hybrid
// model the attention block grows to kernel alignment × ⌈state ÷ (alignment
// × bytes per token)⌉ tokens so one block covers one layer's state, and the
// state page is padded to the attention page. Layers are split into groups
// of equal size (the smallest layer count per kind, or the largest when it
// is under 1.5× the smallest); the blocks are pages × group size, and the
// pool has ⌊available ÷ page ÷ group size⌋ of them, shared by all groups. A
// request of max_model_len holds ⌈max_model_len ÷ block⌉ blocks in each
// attention group and one (two with prefix caching) in each state group;
// kv_cache_max_concurrency is blocks ÷ that, and kv_cache_size_tokens is
// int(concurrency × max_model_len) — before 0.20 it was blocks ÷ groups ×
// block size.
func EstimateVLLM(m *Model, l VLLM) (*Estimate, error) {
	return fittedModel.estimateVLLM(m, l)
}

// estimateVLLM is EstimateVLLM with the memory terms of mm. Without a
// version, the estimate is DefaultVLLMVersion's and its range spans every
// version's profile.
func (mm *memoryModel) estimateVLLM(m *Model, l VLLM) (*Estimate, error) {
	e, err := mm.estimateVersion(m, l)
	if e == nil || l.Version != "" || l.AvailableKVBytes > 0 || l.NumGPUBlocksOverride > 0 || l.GPUMemoryBytes <= 0 {
		return e, err
	}
	x := &e.Expected
	lo, hi := x.NumBlocksLow, x.NumBlocksHigh
	for _, v := range profileVersions {
		l.Version = v
		if ev, _ := mm.estimateVersion(m, l); ev != nil {
			lo, hi = min(lo, ev.Expected.NumBlocksLow), max(hi, ev.Expected.NumBlocksHigh)
		}
	}
	x.NumBlocksLow, x.NumBlocksHigh = lo, hi
	x.KVTokensLow, x.KVTokensHigh = e.tokens(lo), e.tokens(hi)
	x.percents(e.KVTokens)
	x.Reasons = append([]string{fmt.Sprintf("vLLM version not given: the estimate is %s's, and the range spans the memory profiles of vLLM %s to %s (%s–%s blocks); the version (GET /version on the server tells it) narrows it",
		DefaultVLLMVersion, profileVersions[0], profileVersions[len(profileVersions)-1], commaInt(lo), commaInt(hi))}, x.Reasons...)
	return e, err
}

// percents sets LowPercent and HighPercent from the token range around kv.
func (x *Range) percents(kv int) {
	if kv > 0 {
		x.LowPercent = 100 * float64(x.KVTokensLow-kv) / float64(kv)
		x.HighPercent = 100 * float64(x.KVTokensHigh-kv) / float64(kv)
	}
}

// estimateVersion is estimateVLLM for one version (empty: the default).
func (mm *memoryModel) estimateVersion(m *Model, l VLLM) (*Estimate, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	if err := l.validate(); err != nil {
		return nil, err
	}
	if l.GPUMemoryBytes <= 0 && l.AvailableKVBytes <= 0 && l.NumGPUBlocksOverride <= 0 {
		return nil, ErrNoGPUMemory
	}
	tp := max(l.TensorParallelSize, 1)
	pp := max(l.PipelineParallelSize, 1)
	e := &Estimate{Engine: EngineVLLM, Model: m, KVCacheDType: normalizeKVCacheDType(l.KVCacheDType)}
	if e.KVCacheDType != "auto" && !isKnownKVCacheDType(e.KVCacheDType) {
		return nil, &InputError{Flag: true, Field: "kv_cache_dtype", Value: l.KVCacheDType, Reason: "not a KV-cache dtype this package sizes (" + strings.Join(kvCacheDTypes, ", ") + ")"}
	}
	e.Version = l.Version
	if _, _, ok := version(e.Version); !ok || strings.Contains(e.Version, ".dev") {
		if e.Version != "" {
			e.Notes = append(e.Notes, fmt.Sprintf("vLLM version %q has no release number; %s's rules are applied", e.Version, DefaultVLLMVersion))
		}
		e.Version = DefaultVLLMVersion
	}
	served, err := servedDType(m.DType, l.DType)
	if err != nil {
		return nil, err
	}
	if served != m.DType {
		mc := *m
		mc.DType = served
		m = &mc
	}

	e.MaxModelLen = l.MaxModelLen
	if e.MaxModelLen <= 0 {
		e.MaxModelLen = m.DerivedMaxModelLen
	}
	if e.MaxModelLen <= 0 {
		return nil, &InputError{Field: "max_position_embeddings", Value: "missing", Reason: "max_model_len follows from it; set MaxModelLen"}
	}
	e.schedulerDefaults(l)

	if err := e.geometry(m, l, tp); err != nil {
		return nil, err
	}
	groupSizes, err := e.group(m, pp)
	if err != nil {
		return nil, err
	}
	if e.PageBytes <= 0 {
		return nil, fmt.Errorf("%w: a block of %d tokens takes no memory", ErrUnsupported, e.BlockSize)
	}
	var reasons []string
	if l.NumGPUBlocksOverride <= 0 {
		reasons = mm.budget(e, m, l, tp, pp)
	}

	blocks := func(avail int64) int {
		if l.NumGPUBlocksOverride > 0 {
			return l.NumGPUBlocksOverride
		}
		if avail <= 0 {
			return 0
		}
		n := -1
		for _, gs := range groupSizes {
			if b := int(avail / int64(e.PageBytes) / int64(gs)); n < 0 || b < n {
				n = b
			}
		}
		return max(n, 0)
	}
	e.NumBlocks = blocks(e.Budget.AvailableKV.Bytes)
	e.report()
	x := &e.Expected
	x.NumBlocksLow, x.NumBlocksHigh = blocks(e.Budget.AvailableKV.Low), blocks(e.Budget.AvailableKV.High)
	x.KVTokensLow, x.KVTokensHigh = e.tokens(x.NumBlocksLow), e.tokens(x.NumBlocksHigh)
	x.percents(e.KVTokens)
	x.Reasons = reasons
	if l.NumGPUBlocksOverride > 0 {
		x.Reasons = []string{"num_gpu_blocks_override given: no budget term estimated"}
	}

	switch {
	case e.Budget.AvailableKV.Bytes <= 0 && l.NumGPUBlocksOverride <= 0:
		return e, fmt.Errorf("%w: %.2f GiB requested, %.2f GiB needed before the KV cache", ErrInsufficientMemory,
			float64(e.Budget.RequestedBytes)/gibibyte, float64(e.Budget.RequestedBytes-e.Budget.AvailableKV.Bytes)/gibibyte)
	case e.NumBlocks < e.BlocksPerRequest:
		return e, fmt.Errorf("%w: %d blocks hold no request of max_model_len %d, which needs %d; lower max_model_len or raise gpu_memory_utilization",
			ErrInsufficientMemory, e.NumBlocks, e.MaxModelLen, e.BlocksPerRequest)
	}
	return e, nil
}

// servedDType returns the dtype vLLM serves a model of config dtype in for
// --dtype flag: the flag's, else the config's, except that float32
// checkpoints are served in bfloat16.
func servedDType(config, flag string) (string, error) {
	switch d := normalizeDType(flag); d {
	case "", "auto":
		if config == "float32" {
			return "bfloat16", nil
		}
		return config, nil
	case "bfloat16", "float16", "float32":
		return d, nil
	}
	return "", &InputError{Flag: true, Field: "dtype", Value: flag, Reason: "want auto, bfloat16, float16 or float32"}
}

// schedulerDefaults sets max_num_seqs and max_num_batched_tokens as vLLM
// e.Version defaults them: the V1 engine (0.8 on) by GPU size and name, the
// V0 engine by max_model_len.
func (e *Estimate) schedulerDefaults(l VLLM) {
	v0 := before(e.Version, 0, 8)
	large := l.GPUMemoryBytes >= largeGPUBytes
	if large && !v0 && smallDefaultsGPU(l.GPUName, e.Version) {
		large = false
		if l.MaxNumSeqs <= 0 || l.MaxNumBatchedTokens <= 0 {
			e.Notes = append(e.Notes, "an A100 keeps vLLM's small scheduler defaults (2048 batched tokens, 256 sequences) whatever its memory, so its profile run is a quarter of an H100's (vllm-project/vllm#17885)")
		}
	}
	e.MaxNumSeqs = l.MaxNumSeqs
	if e.MaxNumSeqs <= 0 {
		e.MaxNumSeqs = 256
		if large && !v0 {
			e.MaxNumSeqs = 1024
		}
	}
	e.MaxNumBatchedTokens = l.MaxNumBatchedTokens
	switch {
	case e.MaxNumBatchedTokens > 0:
	case v0 && e.MaxModelLen > 32768:
		e.MaxNumBatchedTokens = 512
		e.Notes = append(e.Notes, "V0 engine: chunked prefill turns on past 32,768 tokens, with 512 batched tokens")
	case v0:
		e.MaxNumBatchedTokens = max(e.MaxModelLen, 2048)
	case large:
		e.MaxNumBatchedTokens = 8192
	default:
		e.MaxNumBatchedTokens = 2048
	}
}

// smallDefaultsGPU reports whether vLLM version v gives a GPU named name
// the small scheduler defaults (2048 batched tokens, 256 sequences) though
// it has 70 GiB or more. vLLM's engine arguments pick the large defaults by
// GPU: from 0.7.1 only for a name holding "h100" or "h200"
// (vllm-project/vllm#12369), in 0.8.5 for any GPU of 70 GiB or more
// (vllm-project/vllm#17073), and from 0.9 for those whose name does not
// hold "a100" (vllm-project/vllm#17885: large batches cost an A100
// throughput). So an 80 GB A100 profiles a quarter of the tokens and rows
// an H100 does, and keeps gigabytes more for the KV cache, most visible
// where the pool is small (a low gpu_memory_utilization).
func smallDefaultsGPU(name, v string) bool {
	if !strings.Contains(strings.ToLower(name), "a100") {
		return false
	}
	ma, mi, _ := version(v)
	return !(ma == 0 && mi == 8 && patchOf(v) >= 5)
}

// patchOf returns the patch number of a version like "0.8.5" or
// "v0.8.5.post1"; 0 when it has none.
func patchOf(v string) int {
	parts := strings.SplitN(strings.TrimPrefix(strings.TrimSpace(v), "v"), ".", 4)
	if len(parts) < 3 {
		return 0
	}
	digits := strings.TrimRightFunc(parts[2], func(r rune) bool { return r < '0' || r > '9' })
	if i := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		digits = digits[:i]
	}
	n, _ := strconv.Atoi(digits)
	return n
}

func isKnownKVCacheDType(d string) bool {
	for _, k := range kvCacheDTypes {
		if k == d {
			return true
		}
	}
	return false
}

// geometry sets the per-token and per-sequence sizes, the block size and the
// page size.
func (e *Estimate) geometry(m *Model, l VLLM, tp int) error {
	hasAttention := m.count(fullAttention)+m.count(slidingAttention) > 0
	if hasAttention {
		b, err := attentionBytesPerToken(m, e.KVCacheDType, tp)
		if err != nil {
			return err
		}
		e.AttentionBytesPerToken = b
	}
	stateKind := layerUnset
	switch {
	case m.count(linearAttention) > 0:
		stateKind = linearAttention
	case m.count(mambaLayer) > 0:
		stateKind = mambaLayer
	}
	if stateKind != layerUnset {
		conv, ssm, err := stateBytes(m, stateKind, tp, l.MambaCacheDType, l.MambaSSMCacheDType)
		if err != nil {
			return err
		}
		e.ConvStateBytes, e.RecurrentStateBytes, e.StateBytes = conv, ssm, conv+ssm
		e.MambaCacheMode = l.MambaCacheMode
		if e.MambaCacheMode == "" {
			e.MambaCacheMode = "none"
			if l.EnablePrefixCaching && hasAttention {
				e.MambaCacheMode = "align"
			}
		}
		if e.MambaCacheMode != "none" && e.MambaCacheMode != "align" {
			return fmt.Errorf("%w: mamba_cache_mode %q", ErrUnsupported, e.MambaCacheMode)
		}
	}
	e.BlockSize = l.BlockSize
	if e.BlockSize <= 0 {
		e.BlockSize = defaultBlockSize
	}
	switch {
	case !hasAttention:
		// An attention-free model: one state block per sequence and layer.
		e.PageBytes = e.StateBytes
		e.BlockSize = e.MaxModelLen
	case e.StateBytes > 0:
		k := max(l.KernelBlockSize, defaultKernelBlockSize)
		k = max(k, e.BlockSize)
		need := k * ceilDiv(e.StateBytes, k*e.AttentionBytesPerToken)
		if e.BlockSize < need {
			e.BlockSize = need
		}
		e.PageBytes = e.BlockSize * e.AttentionBytesPerToken
		if pad := e.PageBytes - e.StateBytes; pad > 0 {
			e.Notes = append(e.Notes, fmt.Sprintf("state page padded by %.2f%% to the attention page", 100*float64(pad)/float64(e.StateBytes)))
		}
	default:
		e.PageBytes = e.BlockSize * e.AttentionBytesPerToken
	}
	return nil
}

// group splits the layers into vLLM's KV-cache groups, sets each group's
// blocks per request, and returns, per pipeline stage, the number of layers
// that share one block (the stage's largest group).
func (e *Estimate) group(m *Model, pp int) ([]int, error) {
	type kindLayers struct {
		kind   layerKind
		layers []int
	}
	var kinds []*kindLayers
	byKind := map[layerKind]*kindLayers{}
	for i, k := range m.Layers {
		if k == noCache {
			continue
		}
		kl := byKind[k]
		if kl == nil {
			kl = &kindLayers{kind: k}
			byKind[k] = kl
			kinds = append(kinds, kl)
		}
		kl.layers = append(kl.layers, i)
	}
	if len(kinds) == 0 {
		return nil, fmt.Errorf("%w: no layer keeps a cache", ErrUnsupported)
	}
	lo, hi := len(kinds[0].layers), len(kinds[0].layers)
	for _, kl := range kinds {
		lo, hi = min(lo, len(kl.layers)), max(hi, len(kl.layers))
	}
	size := lo
	if float64(hi) < 1.5*float64(lo) {
		size = hi
	}
	if len(kinds) == 1 {
		size = hi
	}
	e.LayersPerBlock = size
	var members [][]int
	for _, kl := range kinds {
		n := ceilDiv(len(kl.layers), size)
		for g := range n {
			var ls []int
			for j := g; j < len(kl.layers); j += n {
				ls = append(ls, kl.layers[j])
			}
			members = append(members, ls)
			e.Groups = append(e.Groups, e.newGroup(kl.kind, len(ls), m))
		}
		if pad := n*size - len(kl.layers); pad > 0 {
			e.Notes = append(e.Notes, fmt.Sprintf("%d padding layers in the %s groups", pad, kl.kind))
		}
	}
	e.BlocksPerRequest = 0
	for _, g := range e.Groups {
		e.BlocksPerRequest += g.BlocksPerRequest
	}
	if pp == 1 {
		return []int{size}, nil
	}
	// Each pipeline stage holds a slice of the layers, split as vLLM's
	// get_pp_indices does; its block spans its largest group's layers.
	first, sizes := 0, []int{}
	for _, n := range ppPartition(len(m.Layers), pp) {
		largest := 0
		for _, ls := range members {
			c := 0
			for _, i := range ls {
				if i >= first && i < first+n {
					c++
				}
			}
			largest = max(largest, c)
		}
		if largest > 0 {
			sizes = append(sizes, largest)
		}
		first += n
	}
	e.Notes = append(e.Notes, fmt.Sprintf("pipeline stages hold %v layers; every stage is given the same available memory", ppPartition(len(m.Layers), pp)))
	return sizes, nil
}

func (e *Estimate) newGroup(k layerKind, layers int, m *Model) Group {
	g := Group{Kind: k, Layers: layers, BlockSize: e.BlockSize}
	L := e.MaxModelLen
	switch k {
	case fullAttention:
		g.BlocksPerRequest = ceilDiv(L, e.BlockSize)
	case slidingAttention:
		n := min(m.SlidingWindow-1+e.MaxNumBatchedTokens, L)
		g.BlocksPerRequest = ceilDiv(n, e.BlockSize) + 1
	case linearAttention, mambaLayer:
		g.BlocksPerRequest = 1
		if e.MambaCacheMode == "align" {
			g.BlocksPerRequest = 2
		} else if e.AttentionBytesPerToken > 0 {
			g.BlockSize = L // vLLM sets mamba_block_size to max_model_len
		}
	}
	return g
}

// ppPartition splits n layers over pp stages as vLLM's get_pp_indices does:
// the remainder goes to the stages before the last.
func ppPartition(n, pp int) []int {
	parts := make([]int, pp)
	for i := range parts {
		parts[i] = n / pp
	}
	for i := 2; i < n%pp+2; i++ {
		parts[pp-i]++
	}
	return parts
}

// budget fills in e's memory budget with the terms of mm and returns the
// reasons for the ranges of the terms it estimated.
func (mm *memoryModel) budget(e *Estimate, m *Model, l VLLM, tp, pp int) []string {
	b := &e.Budget
	b.request(l.GPUMemoryBytes, l.GPUMemoryUtilization, defaultGPUMemoryUtilization)
	if l.AvailableKVBytes > 0 {
		b.AvailableKV = given(l.AvailableKVBytes)
		return []string{"the memory for the KV cache was given: no budget term estimated"}
	}
	var reasons []string
	pct := func(lo, hi float64) string { return fmt.Sprintf("%+.0f%% … %+.0f%%", 100*(lo-1), 100*(hi-1)) }
	gib := func(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/gibibyte) }

	switch {
	case l.WeightsBytes > 0:
		b.Weights = given(l.WeightsBytes)
	default:
		q := m.Quantization
		if l.Quantization != "" {
			q.Method = strings.ToLower(l.Quantization)
			switch {
			case strings.HasPrefix(q.Method, "fp8") && q.Bits == 0:
				q.Bits = 8
			case q.Method == "bitsandbytes" && q.Bits == 0:
				q.Bits = 4
			}
		}
		if l.WeightBits > 0 {
			q.Bits = l.WeightBits
		}
		n, detail := m.weightsPerGPU(q, l.LanguageModelOnly, tp, pp)
		fromFiles := m.Weights != nil && m.Weights.LanguageBytes > 0 && q == m.Quantization
		if m.Vision != nil && !l.LanguageModelOnly {
			e.Notes = append(e.Notes, "the vision encoder's profiling peak is not in the activation estimate; LanguageModelOnly (vLLM's --language-model-only), or ActivationBytes read from the start-up log, removes the doubt")
		}
		if fromFiles {
			b.Weights = estimated(n, n, n, detail)
			reasons = append(reasons, "weights: the checkpoint's tensor sizes; vLLM's \"Model loading took\" may differ by its own buffers")
		} else {
			b.Weights = estimated(n, scaled(n, mm.WeightsLow), scaled(n, mm.WeightsHigh), detail)
			reasons = append(reasons, fmt.Sprintf("weights: estimated from the architecture (no checkpoint headers), %s (%s on the table's logged weights); WeightsBytes read from the start-up log (\"Model loading took\") removes the doubt", gib(n), pct(mm.WeightsLow, mm.WeightsHigh)))
		}
	}

	run := mm.newProfileRun(e.Version, e, dtypeSizeOr(m.DType, 2))
	if l.ActivationBytes > 0 {
		b.Activation = given(l.ActivationBytes)
	} else {
		n, detail := mm.activation(m, run, tp)
		b.Activation = estimated(n, scaled(n, mm.ActivationLow), scaled(n, mm.ActivationHigh), "estimated: "+detail)
		reasons = append(reasons, fmt.Sprintf("activation: %s, %s on the table (leave-one-out)", gib(n), pct(mm.ActivationLow, mm.ActivationHigh)))
	}
	if l.NonTorchBytes > 0 {
		b.NonTorch = given(l.NonTorchBytes)
	} else {
		n, detail := mm.nonTorch(e.Version, tp)
		b.NonTorch = estimated(n, max(n+mm.NonTorchLow, 0), n+mm.NonTorchHigh, "estimated: "+detail)
		reasons = append(reasons, fmt.Sprintf("non-torch memory: %s, %+.2f … %+.2f GiB on the table (leave-one-out)", gib(n), float64(mm.NonTorchLow)/gibibyte, float64(mm.NonTorchHigh)/gibibyte))
	}
	hybrid := m.count(linearAttention) > 0
	switch {
	case l.CUDAGraphBytes > 0:
		b.CUDAGraphs = given(l.CUDAGraphBytes)
	case l.EnforceEager:
		b.CUDAGraphs = estimated(0, 0, 0, "none: enforce_eager")
	case before(e.Version, 0, 21):
		b.CUDAGraphs = estimated(0, 0, 0, "not charged before vLLM 0.21: graphs use the memory gpu_memory_utilization leaves")
	case hybrid && !before(e.Version, 0, 26):
		pool := b.RequestedBytes - b.Weights.Bytes - b.Activation.Bytes - b.NonTorch.Bytes
		mid := (mm.HybridGraphLow + mm.HybridGraphHigh) / 2
		b.CUDAGraphs = estimated(scaled(max(pool, 0), mid), scaled(max(pool, 0), mm.HybridGraphLow), scaled(max(pool, 0), mm.HybridGraphHigh),
			fmt.Sprintf("estimated: vLLM ≥ 0.26 charges hybrid Gated DeltaNet models %.0f–%.0f%% of the pool as CUDA-graph memory (vllm-project/vllm#50780)",
				100*mm.HybridGraphLow, 100*mm.HybridGraphHigh))
		reasons = append(reasons, fmt.Sprintf("CUDA graphs: vLLM ≥ 0.26 charges a profiling transient on hybrid Gated DeltaNet models, %.0f–%.0f%% of the KV pool (vllm-project/vllm#50780); no start-up log in the table shows it",
			100*mm.HybridGraphLow, 100*mm.HybridGraphHigh))
	default:
		pw, full := cudaGraphCount(e.MaxNumSeqs)
		layers := ceilDiv(len(m.Layers), pp)
		n := mm.cudaGraphs(layers, pw, full)
		b.CUDAGraphs = estimated(n, scaled(n, mm.GraphLow), scaled(n, mm.GraphHigh),
			fmt.Sprintf("estimated: vLLM's estimate for %d piecewise + %d full graphs of %d layers", pw, full, layers))
		reasons = append(reasons, fmt.Sprintf("CUDA graphs: %s, %s against the estimates vLLM 0.19 logs (no log in the table shows them charged)", gib(n), pct(mm.GraphLow, mm.GraphHigh)))
	}
	if b.TotalBytes <= 0 {
		b.AvailableKV = Term{Detail: "unknown: no GPU memory given"}
		return reasons
	}
	b.AvailableKV = Term{
		Bytes:     b.RequestedBytes - b.Weights.Bytes - b.Activation.Bytes - b.CUDAGraphs.Bytes - b.NonTorch.Bytes,
		Estimated: true,
		Detail:    "requested − weights − activation − CUDA graphs − non-torch",
	}
	reasons = append(reasons, mm.availableRange(e.Version, b, tp)...)
	if pp > 1 {
		reasons = append(reasons, "pipeline parallelism: every stage is given the last stage's terms")
	}
	return reasons
}

// dtypeSizeOr returns dtype's size, or def for an unknown dtype.
func dtypeSizeOr(dtype string, def int) int {
	n, err := dtypeSize(dtype)
	if err != nil {
		return def
	}
	return n
}

// report applies vLLM's reporting formulas.
func (e *Estimate) report() {
	if e.BlocksPerRequest > 0 {
		e.KVConcurrency = float64(e.NumBlocks) / float64(e.BlocksPerRequest)
	}
	e.GroupAwareKVTokens = e.groupAwareTokens(e.NumBlocks)
	e.LegacyKVTokens = e.legacyTokens(e.NumBlocks)
	e.KVTokens = e.tokens(e.NumBlocks)
	if before(e.Version, 0, 20) && len(e.Groups) > 1 {
		e.Notes = append(e.Notes, "vLLM < 0.20 reports num_blocks ÷ groups × block size, which misstates hybrid models; the group-aware figure is also given")
	}
}

// tokens returns kv_cache_size_tokens for blocks as e.Version reports it.
func (e *Estimate) tokens(blocks int) int {
	if before(e.Version, 0, 20) {
		return e.legacyTokens(blocks)
	}
	return e.groupAwareTokens(blocks)
}

func (e *Estimate) groupAwareTokens(blocks int) int {
	if e.BlocksPerRequest <= 0 {
		return 0
	}
	return clampInt(float64(blocks) / float64(e.BlocksPerRequest) * float64(e.MaxModelLen))
}

func (e *Estimate) legacyTokens(blocks int) int {
	minBlock := 0
	for _, g := range e.Groups {
		if minBlock == 0 || g.BlockSize < minBlock {
			minBlock = g.BlockSize
		}
	}
	if len(e.Groups) == 0 {
		return 0
	}
	return mulSat(blocks/len(e.Groups), minBlock)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
