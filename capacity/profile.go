package capacity

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// DefaultVLLMVersion is the vLLM version whose estimate EstimateVLLM gives
// when VLLM.Version is empty (with a range spanning every version's
// profile): the newest one this package knows (the seed run's).
// vLLM's memory profile changed often enough that the version is worth
// giving: a running server tells it at GET /version.
const DefaultVLLMVersion = "0.32.0"

// memoryModel holds the parameters of the memory terms vLLM measures in its
// profile run, which the package cannot read from a config: how many bytes
// the sampler and the forward pass keep per logit and per token, what vLLM
// finds outside PyTorch's allocator, and what its CUDA-graph estimate
// charges. They are fitted to the start-up logs of testdata/startup_logs.json
// (TestMemoryModelFit refits them and fails if these drift from the table),
// and each comes with the range its leave-one-out residuals span.
type memoryModel struct {
	// SamplerLogprobs is the sampler's peak in bytes per logit (rows ×
	// vocabulary) from vLLM 0.8 to 0.16, whose dummy sampler run also
	// computes 20 logprobs per row.
	SamplerLogprobs float64
	// Sampler is the same from vLLM 0.17 on.
	Sampler float64
	// SamplerV0 is the V0 engine's (before 0.8), where the forward pass over
	// max_num_batched_tokens dominates; no log in the table shows it, so it
	// is a prior, not a fit.
	SamplerV0 float64
	// ForwardMLP and ForwardHidden are the forward pass's peak per token, in
	// elements of the model dtype per MLP-width (intermediate_size ÷ TP)
	// and per hidden-size element, for the V1 engine (torch.compile); the V0
	// engine's are ForwardV0 times as large.
	ForwardMLP, ForwardHidden float64
	ForwardV0                 float64
	// MoEWorkspace scales the fused-MoE workspace (tokens × top-k ×
	// (2 × expert width ÷ TP + hidden) in 16 bits) that stays allocated
	// through the sampler run.
	MoEWorkspace float64
	// NonTorch* are the non-torch memory vLLM adds during profiling: one GPU,
	// and the extra of tensor parallelism (NCCL and custom all-reduce
	// buffers), for V0, vLLM 0.8–0.17 and vLLM 0.18 on.
	NonTorchV0, NonTorch, NonTorchTP, NonTorchNew, NonTorchTPNew int64
	// GraphBase and GraphPerLayer model vLLM's CUDA-graph estimate (charged
	// since 0.21): GraphBase + GraphPerLayer × layers per rank × (graphs − 2),
	// from the 'Estimated CUDA graph memory' lines vLLM 0.19 logs.
	GraphBase, GraphPerLayer float64

	// The ranges, as the 5th and 95th percentiles of the leave-one-out
	// residuals on the table: the activation and the CUDA-graph estimate as
	// ratios of logged to predicted, non-torch memory in bytes, and the
	// weights estimated from an architecture (no checkpoint) as ratios of
	// logged to estimated.
	ActivationLow, ActivationHigh float64
	NonTorchLow, NonTorchHigh     int64
	GraphLow, GraphHigh           float64
	WeightsLow, WeightsHigh       float64
	// HybridGraphLow and HybridGraphHigh are the share of the KV pool vLLM
	// 0.26 and later charge as CUDA-graph memory on hybrid Gated DeltaNet
	// models: 18–24% (vllm-project/vllm#50780).
	HybridGraphLow, HybridGraphHigh float64
	// TableOldest and TableNewest are the oldest and newest vLLM versions
	// with a whole budget in the table, TableVersions every major.minor
	// among them.
	TableOldest, TableNewest string
	TableVersions            []string
	// TableGPUGiB are the table's GPUs' total memory, TableUtilLow and
	// TableUtilHigh the span of its gpu_memory_utilization, TableTP its
	// tensor-parallel sizes.
	TableGPUGiB                 []float64
	TableUtilLow, TableUtilHigh float64
	TableTP                     []int

	// Spread is how far, as a share of the estimated activation and
	// non-torch memory, the KV memory the table's start-up logs logged lies
	// from the prediction of the terms fitted without each: the conformal
	// quantile of those leave-one-out misses that covers rangeCoverage of
	// them. SpreadPerDistance is how much wider the range grows for each
	// unit of a launch's distance from the table's rows (see distance):
	// calibrated by holding out whole settings — every row of one
	// utilization, one GPU, one vLLM version, one tensor-parallel size — and
	// predicting them from the rest, the smallest rate at which Spread +
	// rate × distance covers rangeCoverage of them.
	Spread, SpreadPerDistance float64
}

// rangeCoverage is the share of held-out start-up logs a printed range
// covers.
const rangeCoverage = 0.9

// profileVersions are one vLLM version from each span whose memory profile
// or reporting differs (the version boundaries EstimateVLLM knows), oldest
// first: an estimate without a version spans them all.
var profileVersions = []string{"0.6.4", "0.8.0", "0.17.0", "0.18.0", "0.20.0", "0.21.0", "0.26.0", DefaultVLLMVersion}

// fittedModel is memoryModel fitted to testdata/startup_logs.json.
var fittedModel = memoryModel{
	SamplerLogprobs:   38.92,
	Sampler:           15.45,
	SamplerV0:         20,
	ForwardMLP:        3.5,
	ForwardHidden:     4.5,
	ForwardV0:         0.81,
	MoEWorkspace:      0.5,
	NonTorchV0:        358 * mebibyte,
	NonTorch:          133 * mebibyte,
	NonTorchTP:        425 * mebibyte,
	NonTorchNew:       256 * mebibyte,
	NonTorchTPNew:     1874 * mebibyte,
	GraphBase:         411 * mebibyte,
	GraphPerLayer:     0.154 * mebibyte,
	ActivationLow:     0.85,
	ActivationHigh:    1.11,
	NonTorchLow:       -20 * mebibyte,
	NonTorchHigh:      143 * mebibyte,
	GraphLow:          0.64,
	GraphHigh:         1.62,
	WeightsLow:        0.99,
	WeightsHigh:       1.03,
	HybridGraphLow:    0.18,
	HybridGraphHigh:   0.24,
	TableOldest:       "0.6.4",
	TableNewest:       "0.19.0",
	TableVersions:     []string{"0.6", "0.11", "0.15", "0.16", "0.17", "0.18", "0.19"},
	TableGPUGiB:       []float64{23.58, 79.19},
	TableUtilLow:      0.9,
	TableUtilHigh:     0.95,
	TableTP:           []int{1, 2, 4},
	Spread:            0.13,
	SpreadPerDistance: 0.15,
}

// profileRun is what vLLM's profile run does for one launch.
type profileRun struct {
	v0          bool    // the V0 engine (before 0.8)
	tokens      int     // tokens in the dummy forward pass
	rows        int     // rows of logits the dummy sampler sees
	sampler     float64 // sampler bytes per logit
	samplerNote string
	dtypeSize   int // bytes of one activation element
}

// newProfileRun describes the profile run of vLLM version v for the launch.
func (mm *memoryModel) newProfileRun(v string, e *Estimate, dtypeSize int) profileRun {
	p := profileRun{tokens: e.MaxNumBatchedTokens, dtypeSize: dtypeSize}
	switch {
	case before(v, 0, 8):
		p.v0 = true
		p.sampler = mm.SamplerV0
		p.samplerNote = fmt.Sprintf("%.0f B/logit (V0 engine; no V0 log in the table shows its sampler, a prior)", mm.SamplerV0)
	case before(v, 0, 17):
		p.sampler = mm.SamplerLogprobs
		p.samplerNote = fmt.Sprintf("%.2f B/logit (vLLM 0.8–0.16 profile 20 logprobs a row)", mm.SamplerLogprobs)
	default:
		p.sampler = mm.Sampler
		p.samplerNote = fmt.Sprintf("%.2f B/logit (vLLM ≥ 0.17)", mm.Sampler)
	}
	p.rows = min(e.MaxNumSeqs, p.tokens)
	return p
}

// activationShape returns the quantities the profile run's peak scales
// with: the forward pass's bytes per unit of ForwardMLP and of
// ForwardHidden, the sampler's logits, and the fused-MoE workspace's bytes
// per unit of MoEWorkspace.
func activationShape(m *Model, p profileRun, tp int) (fwdMLP, fwdHidden, logits, moe float64) {
	tp = max(tp, 1)
	width := float64(m.IntermediateSize) / float64(tp)
	if g := m.GatedDeltaNet; g != nil {
		width = max(width, float64(2*g.NumKeyHeads*g.KeyHeadDim+2*g.NumValueHeads*g.ValueHeadDim)/float64(tp))
	}
	if mb := m.Mamba2; mb != nil {
		width = max(width, float64(2*mb.NumHeads*mb.HeadDim+2*mb.NumGroups*mb.StateSize)/float64(tp))
	}
	tokens := float64(p.tokens) * float64(p.dtypeSize)
	fwdMLP, fwdHidden = tokens*width, tokens*float64(m.HiddenSize)
	logits = float64(p.rows) * float64(m.VocabSize)
	if e := m.MoE; e != nil && e.ExpertsPerToken > 0 {
		moe = float64(p.tokens) * float64(e.ExpertsPerToken) * (2*float64(e.IntermediateSize)/float64(tp) + float64(m.HiddenSize)) * 2
	}
	return fwdMLP, fwdHidden, logits, moe
}

// activation returns the profile run's torch peak beyond the weights, and how
// it was obtained: the larger of the forward pass over the batched tokens and
// the sampler over its rows of logits (plus, for MoE models, the fused-MoE
// workspace, which is still allocated when the sampler runs).
func (mm *memoryModel) activation(m *Model, p profileRun, tp int) (int64, string) {
	fwdMLP, fwdHidden, logits, moeUnit := activationShape(m, p, tp)
	forward := mm.ForwardMLP*fwdMLP + mm.ForwardHidden*fwdHidden
	if p.v0 {
		forward *= mm.ForwardV0
	}
	sampler := p.sampler * logits
	moe := mm.MoEWorkspace * moeUnit
	if forward >= sampler+moe {
		return int64(forward), fmt.Sprintf("forward pass of %s tokens", commaInt(p.tokens))
	}
	detail := fmt.Sprintf("sampler over %s rows × %s vocabulary at %s", commaInt(p.rows), commaInt(m.VocabSize), p.samplerNote)
	if moe > 0 {
		detail += fmt.Sprintf(" + fused-MoE workspace of %s tokens × top-%d", commaInt(p.tokens), m.MoE.ExpertsPerToken)
	}
	return int64(sampler + moe), detail
}

// nonTorch returns the non-torch memory vLLM version v adds during profiling.
func (mm *memoryModel) nonTorch(v string, tp int) (int64, string) {
	switch {
	case before(v, 0, 8):
		n, d := mm.NonTorchV0, "V0 engine"
		if tp > 1 {
			n += mm.NonTorchTP
			d += fmt.Sprintf(", + %.2f GiB for tensor parallelism as vLLM 0.8–0.17 (no V0 log with it in the table)", float64(mm.NonTorchTP)/gibibyte)
		}
		return n, d
	case before(v, 0, 18):
		if tp > 1 {
			return mm.NonTorch + mm.NonTorchTP, "vLLM 0.8–0.17, tensor parallel (NCCL and custom all-reduce buffers)"
		}
		return mm.NonTorch, "vLLM 0.8–0.17, one GPU"
	}
	if tp > 1 {
		return mm.NonTorchNew + mm.NonTorchTPNew, "vLLM ≥ 0.18, tensor parallel (NCCL and custom all-reduce buffers)"
	}
	return mm.NonTorchNew, "vLLM ≥ 0.18, one GPU"
}

// cudaGraphs returns vLLM's CUDA-graph estimate for piecewise and full graphs
// of a model with layers layers on each rank.
func (mm *memoryModel) cudaGraphs(layers, piecewise, full int) int64 {
	n := max(piecewise+full-2, 0)
	return int64(mm.GraphBase + mm.GraphPerLayer*float64(layers)*float64(n))
}

// scaled returns n × f, for ranges.
func scaled(n int64, f float64) int64 { return int64(math.Round(float64(n) * f)) }

// quantile returns the q-quantile of xs (linear interpolation between
// order statistics); xs is sorted in place.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	sort.Float64s(xs)
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	return xs[i] + (pos-float64(i))*(xs[i+1]-xs[i])
}

// commaInt formats n with thousands separators.
func commaInt(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
