package capacity

import (
	"fmt"
	"math"
)

// GiB is 2³⁰ bytes, the unit vLLM's logs use.
const GiB = 1 << 30

// MiB is 2²⁰ bytes.
const MiB = 1 << 20

// GiBToBytes converts a figure in GiB, as vLLM logs it ("Available KV cache
// memory: 6.01 GiB"), to bytes.
func GiBToBytes(gib float64) int64 { return int64(math.Round(gib * GiB)) }

// Defaults of the memory estimate. They are fitted to published vLLM
// start-up logs (see testdata/startup_logs.json) and are overridable by
// VLLM's fields, because a start-up log beats them.
const (
	// DefaultNonTorchBytes is memory outside PyTorch's allocator that vLLM
	// finds in its profile run (cuBLAS and Triton workspaces): 0.35 GiB in
	// vllm-project/vllm#10517, 0.20 GiB in #14447.
	DefaultNonTorchBytes = 256 * MiB
	// DefaultCollectiveBytes is added to the non-torch memory of each rank
	// when the model is split over GPUs (NCCL buffers, custom all-reduce).
	DefaultCollectiveBytes = 256 * MiB
	// DefaultCUDAGraphBytes is the memory one captured CUDA graph costs in
	// vLLM's CUDA-graph profiling: 1.62 GiB for 86 graphs
	// (vllm-project/vllm#39559), 0.13 GiB for 5 and 0.17 GiB for 7
	// (noonghunna/club-3090#104, #44).
	DefaultCUDAGraphBytes = 20 * MiB
	// samplerBytesPerLogit is the peak bytes per logit of vLLM's dummy
	// sampler run: float32 logits, a sorted copy, int64 indices and a
	// cumulative sum for top-p/top-k.
	samplerBytesPerLogit = 20
)

// Term is one term of the memory budget: its bytes, whether they were
// estimated (false: given by the caller, typically from a start-up log), and
// how they were obtained.
type Term struct {
	Bytes     int64  `json:"bytes"`            // the term's size
	Estimated bool   `json:"estimated"`        // false when the caller gave it
	Detail    string `json:"detail,omitempty"` // how it was obtained
}

// Budget is vLLM's memory budget for the KV cache on one GPU:
// TotalBytes × Utilization − Weights − Activation − CUDAGraphs − NonTorch.
type Budget struct {
	TotalBytes     int64   `json:"total_bytes"`            // one GPU's memory
	Utilization    float64 `json:"gpu_memory_utilization"` // the fraction vLLM may use (SGLang: mem_fraction_static)
	RequestedBytes int64   `json:"requested_bytes"`        // TotalBytes × Utilization
	Weights        Term    `json:"weights"`                // the weights on one GPU
	Activation     Term    `json:"activation"`             // the profile run's torch peak beyond the weights
	CUDAGraphs     Term    `json:"cuda_graphs"`            // CUDA graph memory, profiled since vLLM 0.21
	NonTorch       Term    `json:"non_torch"`              // memory outside PyTorch's allocator
	// AvailableKV is what is left for the KV cache, or the caller's figure
	// (Estimated false) when VLLM.AvailableKVBytes is set.
	AvailableKV Term `json:"available_kv"`
}

// activationBytes estimates the torch peak of vLLM's profile run beyond the
// weights: the larger of a forward pass over maxBatchedTokens tokens (the
// widest intermediate of a layer plus three hidden-size tensors per token,
// which matches the 2.07 and 2.99 GiB peaks vllm-project/vllm#10517 logged
// for Llama-3.1-8B at 20,000 and 29,000 tokens) and the dummy sampler run
// over maxSeqs rows of the vocabulary.
func activationBytes(m *Model, maxBatchedTokens, maxSeqs, tp int) (int64, string) {
	size, err := dtypeSize(m.DType)
	if err != nil {
		size = 2
	}
	tp = max(tp, 1)
	wide := 3 * m.IntermediateSize / tp // gate_up output and activation output of the MLP
	if e := m.MoE; e != nil {
		moe := 3*e.ExpertsPerToken*e.IntermediateSize/tp + 3*e.SharedIntermediateSize/tp
		wide = max(wide, moe)
	}
	if g := m.GatedDeltaNet; g != nil {
		wide = max(wide, (2*g.NumKeyHeads*g.KeyHeadDim+2*g.NumValueHeads*g.ValueHeadDim)/tp)
	}
	if mb := m.Mamba2; mb != nil {
		wide = max(wide, (2*mb.NumHeads*mb.HeadDim+2*mb.NumGroups*mb.StateSize)/tp)
	}
	forward := int64(maxBatchedTokens) * int64(wide+3*m.HiddenSize) * int64(size)
	sampler := int64(maxSeqs) * int64(m.VocabSize) * samplerBytesPerLogit
	if forward >= sampler {
		return forward, fmt.Sprintf("estimated: forward pass of %d tokens", maxBatchedTokens)
	}
	return sampler, fmt.Sprintf("estimated: sampler over %d sequences × %d vocab", maxSeqs, m.VocabSize)
}

// captureSizes returns the batch sizes vLLM captures CUDA graphs for by
// default: 1, 2, 4, then every 8 up to 256, then every 16, up to max.
func captureSizes(maxSize int) []int {
	var s []int
	for _, n := range []int{1, 2, 4} {
		if n <= maxSize {
			s = append(s, n)
		}
	}
	for n := 8; n < 256 && n <= maxSize; n += 8 {
		s = append(s, n)
	}
	for n := 256; n <= maxSize; n += 16 {
		s = append(s, n)
	}
	return s
}

// cudaGraphCount returns how many CUDA graphs vLLM captures by default
// (FULL_AND_PIECEWISE): piecewise graphs for every capture size up to
// min(2 × max_num_seqs, 512), and full decode graphs for those up to
// max_num_seqs.
func cudaGraphCount(maxSeqs int) (piecewise, full int) {
	maxCapture := min(2*maxSeqs, 512)
	for _, n := range captureSizes(maxCapture) {
		piecewise++
		if n <= maxSeqs {
			full++
		}
	}
	return piecewise, full
}
