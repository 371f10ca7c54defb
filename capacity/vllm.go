package capacity

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// vLLM's defaults for the flags VLLM leaves at zero.
const (
	// DefaultGPUMemoryUtilization is vLLM's --gpu-memory-utilization.
	DefaultGPUMemoryUtilization = 0.9
	// DefaultBlockSize is vLLM's --block-size for attention.
	DefaultBlockSize = 16
	// DefaultKernelBlockSize is the block-size alignment of vLLM's CUDA
	// attention backends (FlashAttention, FlashInfer and Triton take
	// multiples of 16).
	DefaultKernelBlockSize = 16
	// largeGPUBytes is where vLLM's scheduler defaults grow: GPUs with at
	// least 70 GiB default to 8192 batched tokens and 1024 sequences, smaller
	// ones to 2048 and 256.
	largeGPUBytes = 70 * GiB
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
	// Version is the vLLM version ("0.32.0"); it picks the formulas. Empty
	// means the current ones.
	Version string `json:"version,omitempty"`
	// GPUMemoryBytes is the total memory of one GPU as PyTorch reports it
	// (11.76 GiB for a 12 GB RTX 3060). Required unless AvailableKVBytes or
	// NumGPUBlocksOverride is set.
	GPUMemoryBytes       int64   `json:"gpu_memory_bytes,omitempty"`
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization,omitempty"` // 0 means DefaultGPUMemoryUtilization
	KVCacheDType         string  `json:"kv_cache_dtype,omitempty"`         // one of KVCacheDTypes; "" means "auto"
	MaxModelLen          int     `json:"max_model_len,omitempty"`          // 0 means the model's DerivedMaxModelLen
	MaxNumSeqs           int     `json:"max_num_seqs,omitempty"`           // 0 means 256, or 1024 on a GPU of 70 GiB or more
	MaxNumBatchedTokens  int     `json:"max_num_batched_tokens,omitempty"` // 0 means 2048, or 8192 on a GPU of 70 GiB or more
	TensorParallelSize   int     `json:"tensor_parallel_size,omitempty"`   // 0 means 1
	PipelineParallelSize int     `json:"pipeline_parallel_size,omitempty"` // 0 means 1
	// BlockSize is --block-size; hybrid models raise it so that one
	// attention block is at least one layer's state. 0 means
	// DefaultBlockSize.
	BlockSize int `json:"block_size,omitempty"`
	// KernelBlockSize is the attention backend's block alignment;
	// 0 means DefaultKernelBlockSize.
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
	Kind      LayerKind `json:"kind"`       // what the group's layers keep
	Layers    int       `json:"layers"`     // layers in the group; the last group of a kind may be short (padded)
	BlockSize int       `json:"block_size"` // tokens per block as vLLM records it (max_model_len for state groups without prefix caching)
	// BlocksPerRequest is what one request of max_model_len holds in this
	// group: its tokens in blocks for attention, fixed state blocks for
	// linear attention and Mamba.
	BlocksPerRequest int `json:"blocks_per_request"`
}

// Estimate is a predicted KV-cache configuration and how it was derived.
type Estimate struct {
	Engine       string `json:"engine"`         // "vllm" or "sglang"
	KVCacheDType string `json:"kv_cache_dtype"` // as normalized ("auto", "bfloat16", "fp8", ...)
	Budget       Budget `json:"budget"`         // the memory derivation

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

	KVTokens       int     `json:"kv_tokens"`       // kv_cache_size_tokens as this vLLM version reports it
	MaxConcurrency float64 `json:"max_concurrency"` // kv_cache_max_concurrency: NumBlocks ÷ BlocksPerRequest
	// GroupAwareKVTokens is int(MaxConcurrency × MaxModelLen), what vLLM
	// ≥ 0.20 reports; LegacyKVTokens is NumBlocks ÷ len(Groups) × the
	// smallest group block size, what earlier versions logged as "GPU KV
	// cache size".
	GroupAwareKVTokens int `json:"group_aware_kv_tokens"`
	LegacyKVTokens     int `json:"legacy_kv_tokens"` // see GroupAwareKVTokens

	MaxModelLen         int      `json:"max_model_len"`          // effective max_model_len
	MaxNumSeqs          int      `json:"max_num_seqs"`           // effective max_num_seqs (SGLang: max_running_requests, 0 if not given)
	MaxNumBatchedTokens int      `json:"max_num_batched_tokens"` // effective max_num_batched_tokens
	Notes               []string `json:"notes,omitempty"`        // padding, caveats and version differences
}

// Limits returns the estimate as the limits a cell is checked against.
func (e *Estimate) Limits() Limits {
	return Limits{
		KVTokens:    e.KVTokens,
		MaxRunning:  e.MaxNumSeqs,
		MaxModelLen: e.MaxModelLen,
		Source:      "estimate (" + e.Engine + ")",
	}
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
// version is the current one.
func before(v string, major, minor int) bool {
	ma, mi, ok := version(v)
	return ok && (ma < major || ma == major && mi < minor)
}

// EstimateVLLM sizes vLLM's KV cache for model m launched with l.
//
// It follows vLLM's v1 engine: the budget is total memory × utilization
// minus weights, the profile run's activation peak, CUDA graphs (profiled
// since 0.21) and non-torch memory. Attention layers store
// AttentionBytesPerToken per token; in a hybrid model the attention block
// grows to kernel alignment × ⌈state ÷ (alignment × bytes per token)⌉ tokens
// so one block covers one layer's state, and the state page is padded to
// the attention page. Layers are split into groups of equal size (the
// smallest layer count per kind, or the largest when it is under 1.5× the
// smallest); the blocks are pages × group size, and the pool has
// ⌊available ÷ page ÷ group size⌋ of them, shared by all groups. A request
// of max_model_len holds ⌈max_model_len ÷ block⌉ blocks in each attention
// group and one (two with prefix caching) in each state group;
// kv_cache_max_concurrency is blocks ÷ that, and kv_cache_size_tokens is
// int(concurrency × max_model_len) — before 0.20 it was blocks ÷ groups ×
// block size.
func EstimateVLLM(m *Model, l VLLM) (*Estimate, error) {
	if err := m.Validate(); err != nil {
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
	e := &Estimate{Engine: "vllm", KVCacheDType: normalizeKVCacheDType(l.KVCacheDType)}
	if e.KVCacheDType != "auto" && !isKnownKVCacheDType(e.KVCacheDType) {
		return nil, fmt.Errorf("%w: %q (known: %s)", ErrKVCacheDType, l.KVCacheDType, strings.Join(KVCacheDTypes, ", "))
	}

	e.MaxModelLen = l.MaxModelLen
	if e.MaxModelLen <= 0 {
		e.MaxModelLen = m.DerivedMaxModelLen
	}
	if e.MaxModelLen <= 0 {
		return nil, &ConfigError{Field: "max_position_embeddings", Value: "missing", Reason: "max_model_len follows from it; set MaxModelLen"}
	}
	large := l.GPUMemoryBytes >= largeGPUBytes
	e.MaxNumSeqs = l.MaxNumSeqs
	if e.MaxNumSeqs <= 0 {
		e.MaxNumSeqs = 256
		if large {
			e.MaxNumSeqs = 1024
		}
	}
	e.MaxNumBatchedTokens = l.MaxNumBatchedTokens
	if e.MaxNumBatchedTokens <= 0 {
		e.MaxNumBatchedTokens = 2048
		if large {
			e.MaxNumBatchedTokens = 8192
		}
	}

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
	e.budget(m, l, tp, pp)

	e.NumBlocks = l.NumGPUBlocksOverride
	if e.NumBlocks <= 0 && e.Budget.AvailableKV.Bytes > 0 {
		e.NumBlocks = -1
		for _, gs := range groupSizes {
			n := int(e.Budget.AvailableKV.Bytes / int64(e.PageBytes) / int64(gs))
			if e.NumBlocks < 0 || n < e.NumBlocks {
				e.NumBlocks = n
			}
		}
	}
	e.NumBlocks = max(e.NumBlocks, 0)
	e.report(l.Version)

	switch {
	case e.Budget.AvailableKV.Bytes <= 0 && l.NumGPUBlocksOverride <= 0:
		return e, fmt.Errorf("%w: %.2f GiB requested, %.2f GiB needed before the KV cache", ErrInsufficientMemory,
			float64(e.Budget.RequestedBytes)/GiB, float64(e.Budget.RequestedBytes-e.Budget.AvailableKV.Bytes)/GiB)
	case e.NumBlocks < e.BlocksPerRequest:
		return e, fmt.Errorf("%w: %d blocks hold no request of max_model_len %d, which needs %d; lower max_model_len or raise gpu_memory_utilization",
			ErrInsufficientMemory, e.NumBlocks, e.MaxModelLen, e.BlocksPerRequest)
	}
	return e, nil
}

func isKnownKVCacheDType(d string) bool {
	for _, k := range KVCacheDTypes {
		if k == d {
			return true
		}
	}
	return false
}

// geometry sets the per-token and per-sequence sizes, the block size and the
// page size.
func (e *Estimate) geometry(m *Model, l VLLM, tp int) error {
	hasAttention := m.Count(FullAttention)+m.Count(SlidingAttention) > 0
	if hasAttention {
		b, err := AttentionBytesPerToken(m, e.KVCacheDType, tp)
		if err != nil {
			return err
		}
		e.AttentionBytesPerToken = b
	}
	stateKind := LayerUnset
	switch {
	case m.Count(LinearAttention) > 0:
		stateKind = LinearAttention
	case m.Count(Mamba) > 0:
		stateKind = Mamba
	}
	if stateKind != LayerUnset {
		conv, ssm, err := StateBytes(m, stateKind, tp, l.MambaCacheDType, l.MambaSSMCacheDType)
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
		e.BlockSize = DefaultBlockSize
	}
	switch {
	case !hasAttention:
		// An attention-free model: one state block per sequence and layer.
		e.PageBytes = e.StateBytes
		e.BlockSize = e.MaxModelLen
	case e.StateBytes > 0:
		k := max(l.KernelBlockSize, DefaultKernelBlockSize)
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
		kind   LayerKind
		layers []int
	}
	var kinds []*kindLayers
	byKind := map[LayerKind]*kindLayers{}
	for i, k := range m.Layers {
		if k == NoCache {
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

func (e *Estimate) newGroup(k LayerKind, layers int, m *Model) Group {
	g := Group{Kind: k, Layers: layers, BlockSize: e.BlockSize}
	L := e.MaxModelLen
	switch k {
	case FullAttention:
		g.BlocksPerRequest = ceilDiv(L, e.BlockSize)
	case SlidingAttention:
		n := min(m.SlidingWindow-1+e.MaxNumBatchedTokens, L)
		g.BlocksPerRequest = ceilDiv(n, e.BlockSize) + 1
	case LinearAttention, Mamba:
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

// budget fills in the memory budget.
func (e *Estimate) budget(m *Model, l VLLM, tp, pp int) {
	b := &e.Budget
	b.TotalBytes = l.GPUMemoryBytes
	b.Utilization = l.GPUMemoryUtilization
	if b.Utilization <= 0 {
		b.Utilization = DefaultGPUMemoryUtilization
	}
	b.RequestedBytes = int64(float64(b.TotalBytes) * b.Utilization)

	if l.WeightsBytes > 0 {
		b.Weights = Term{Bytes: l.WeightsBytes, Detail: "given"}
	} else {
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
		n, detail := m.estimateWeights(q, l.LanguageModelOnly)
		if m.Vision != nil && !l.LanguageModelOnly {
			e.Notes = append(e.Notes, "the vision encoder's profiling peak is not in the activation estimate; --language-model-only or -activation-gib from the log removes the doubt")
		}
		if tp*pp > 1 {
			n /= int64(tp * pp)
			detail += fmt.Sprintf(", ÷ %d GPUs", tp*pp)
		}
		b.Weights = Term{Bytes: n, Estimated: true, Detail: detail}
	}
	if l.ActivationBytes > 0 {
		b.Activation = Term{Bytes: l.ActivationBytes, Detail: "given"}
	} else {
		n, detail := activationBytes(m, e.MaxNumBatchedTokens, min(e.MaxNumSeqs, e.MaxNumBatchedTokens), tp)
		b.Activation = Term{Bytes: n, Estimated: true, Detail: detail}
	}
	switch {
	case l.CUDAGraphBytes > 0:
		b.CUDAGraphs = Term{Bytes: l.CUDAGraphBytes, Detail: "given"}
	case l.EnforceEager:
		b.CUDAGraphs = Term{Estimated: true, Detail: "none: enforce_eager"}
	case before(l.Version, 0, 21):
		b.CUDAGraphs = Term{Estimated: true, Detail: "not profiled before vLLM 0.21: graphs use the memory left by gpu_memory_utilization"}
	default:
		pw, full := cudaGraphCount(e.MaxNumSeqs)
		b.CUDAGraphs = Term{
			Bytes:     int64(pw+full) * DefaultCUDAGraphBytes,
			Estimated: true,
			Detail:    fmt.Sprintf("estimated: %d piecewise + %d full graphs × %d MiB", pw, full, DefaultCUDAGraphBytes/MiB),
		}
	}
	if l.NonTorchBytes > 0 {
		b.NonTorch = Term{Bytes: l.NonTorchBytes, Detail: "given"}
	} else {
		n := int64(DefaultNonTorchBytes)
		detail := "estimated: cuBLAS and Triton workspaces"
		if tp*pp > 1 {
			n += DefaultCollectiveBytes
			detail += " and collective buffers"
		}
		b.NonTorch = Term{Bytes: n, Estimated: true, Detail: detail}
	}
	if l.AvailableKVBytes > 0 {
		b.AvailableKV = Term{Bytes: l.AvailableKVBytes, Detail: "given"}
		return
	}
	if b.TotalBytes <= 0 {
		b.AvailableKV = Term{Detail: "unknown: no GPU memory given"}
		return
	}
	avail := b.RequestedBytes - b.Weights.Bytes - b.Activation.Bytes - b.CUDAGraphs.Bytes - b.NonTorch.Bytes
	b.AvailableKV = Term{Bytes: avail, Estimated: true, Detail: "requested − weights − activation − CUDA graphs − non-torch"}
}

// report applies vLLM's reporting formulas.
func (e *Estimate) report(v string) {
	if e.BlocksPerRequest > 0 {
		e.MaxConcurrency = float64(e.NumBlocks) / float64(e.BlocksPerRequest)
	}
	e.GroupAwareKVTokens = clampInt(e.MaxConcurrency * float64(e.MaxModelLen))
	minBlock := 0
	for _, g := range e.Groups {
		if minBlock == 0 || g.BlockSize < minBlock {
			minBlock = g.BlockSize
		}
	}
	if len(e.Groups) > 0 {
		e.LegacyKVTokens = mulSat(e.NumBlocks/len(e.Groups), minBlock)
	}
	e.KVTokens = e.GroupAwareKVTokens
	if before(v, 0, 20) {
		e.KVTokens = e.LegacyKVTokens
		if len(e.Groups) > 1 {
			e.Notes = append(e.Notes, "vLLM < 0.20 reports num_blocks ÷ groups × block size, which misstates hybrid models; the group-aware figure is also given")
		}
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
