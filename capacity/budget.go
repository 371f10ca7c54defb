package capacity

// gibibyte is 2³⁰ bytes, the unit vLLM's logs use.
const gibibyte = 1 << 30

// mebibyte is 2²⁰ bytes.
const mebibyte = 1 << 20

// defaultNonTorchBytes is the memory outside PyTorch's allocator that
// EstimateSGLang reserves (cuBLAS and Triton workspaces). vLLM's is fitted
// per version from start-up logs (see EstimateVLLM).
const defaultNonTorchBytes = 256 * mebibyte

// Term is one term of the memory budget: its bytes, the range they are
// expected to fall in, whether they were estimated (false: given by the
// caller, typically from a start-up log, and then Low = Bytes = High), and
// how they were obtained.
type Term struct {
	Bytes     int64  `json:"bytes"`            // the term's size
	Low       int64  `json:"low"`              // the smallest it is expected to be
	High      int64  `json:"high"`             // the largest it is expected to be
	Estimated bool   `json:"estimated"`        // false when the caller gave it
	Detail    string `json:"detail,omitempty"` // how it was obtained
}

// given returns a Term the caller gave.
func given(n int64) Term { return Term{Bytes: n, Low: n, High: n, Detail: "given"} }

// estimated returns an estimated Term of n bytes, expected between low and high.
func estimated(n, low, high int64, detail string) Term {
	return Term{Bytes: n, Low: min(low, n), High: max(high, n), Estimated: true, Detail: detail}
}

// Budget is vLLM's memory budget for the KV cache on one GPU:
// TotalBytes × Utilization − Weights − Activation − CUDAGraphs − NonTorch.
type Budget struct {
	TotalBytes     int64   `json:"total_bytes"`            // one GPU's memory
	Utilization    float64 `json:"gpu_memory_utilization"` // the fraction vLLM may use (SGLang: mem_fraction_static)
	RequestedBytes int64   `json:"requested_bytes"`        // TotalBytes × Utilization
	Weights        Term    `json:"weights"`                // the weights on one GPU
	Activation     Term    `json:"activation"`             // the profile run's torch peak beyond the weights
	CUDAGraphs     Term    `json:"cuda_graphs"`            // CUDA-graph memory, charged since vLLM 0.21
	NonTorch       Term    `json:"non_torch"`              // memory outside PyTorch's allocator added by the profile run
	// AvailableKV is what is left for the KV cache, or the caller's figure
	// (Estimated false) when VLLM.AvailableKVBytes is set. Its Low and High
	// take every other term at the other end of its range.
	AvailableKV Term `json:"available_kv"`
}

// request sets the budget's GPU memory, the fraction of it the engine may
// use (def where utilization is not positive, the engine's default) and
// the bytes that makes.
func (b *Budget) request(total int64, utilization, def float64) {
	b.TotalBytes = total
	b.Utilization = utilization
	if b.Utilization <= 0 {
		b.Utilization = def
	}
	b.RequestedBytes = int64(float64(total) * b.Utilization)
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
