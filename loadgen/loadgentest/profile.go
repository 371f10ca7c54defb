package loadgentest

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// DefaultModel is the model name a [Profile] serves when it names none:
// the seed run's served model name.
const DefaultModel = "bench"

// Defaults for a [Profile]'s other zero fields.
const (
	defaultMaxModelLen         = 32768
	defaultMaxNumSeqs          = 256  // vLLM's default --max-num-seqs
	defaultMaxNumBatchedTokens = 8192 // vLLM's default for its API server
	defaultBlockSize           = 16   // vLLM's default --block-size
	defaultTruthBytes          = 32 << 20
)

// A Profile describes the simulated server: its limits, the cost of each
// engine step, and how much faster than real time it runs. It is a plain
// value; the zero value of each field is documented beside it.
//
// Costs are in seconds of the profile's own time, before [Profile.Speed]
// divides them. A step that prefills a chunk of p prompt tokens starting at
// offset o costs PrefillPerToken·p + PrefillPerTokenSquared·((o+p)² − o²), so
// a whole P-token prompt, in one chunk or many, costs
// P·(PrefillPerToken + PrefillPerTokenSquared·P). A step that decodes one
// token for each of B requests holding C_i context tokens costs
// base(B) + DecodePerContextToken·ΣC_i + DecodePerMaxContextToken·max C_i.
// A step that does both costs the sum.
type Profile struct {
	// Name identifies the profile in reports. Optional.
	Name string
	// Model is the served model name, as /v1/models lists it; "" means
	// DefaultModel. A request naming another model gets vLLM's 404; one
	// naming none is served. The name may carry fault selectors (see the
	// package documentation).
	Model string
	// Adapters are LoRA adapters served beside Model, as vLLM serves
	// --lora-modules: a request may name any of them and is served as
	// Model's (its usage and answer name the adapter); /v1/models lists
	// each after Model, with Model as its parent.
	Adapters []string
	// Speed divides every cost: 10 runs the model ten times faster than
	// real time. Everything the server reports uses the wall clock, so
	// clients see throughputs Speed times the profile's. 0 means 1.
	Speed float64

	// MaxModelLen is the longest prompt plus max_tokens accepted; 0 means
	// 32768. It is lowered to KVCacheTokens if larger, as vLLM
	// refuses to start when one request cannot fit.
	MaxModelLen int
	// MaxNumSeqs caps the running requests; 0 means 256, vLLM's default.
	MaxNumSeqs int
	// MaxNumBatchedTokens is the per-step token budget shared by decodes
	// (one token each) and prefill chunks; 0 means
	// 8192, vLLM's default for its API server. It is raised to MaxNumSeqs if smaller.
	MaxNumBatchedTokens int
	// BlockSize is the number of tokens in one KV-cache block; 0 means
	// 16, vLLM's default.
	BlockSize int
	// KVCacheTokens is the KV-cache capacity in tokens, rounded down to
	// whole blocks; 0 means room for MaxNumSeqs requests of MaxModelLen.
	KVCacheTokens int
	// DisablePrefixCaching turns prefix caching off; by default full
	// prompt blocks are cached by hash, as with vLLM's
	// --enable-prefix-caching.
	DisablePrefixCaching bool
	// PromptTokensDetails adds prompt_tokens_details.cached_tokens to
	// usage: the prompt tokens served from the prefix cache, as vLLM
	// reports them with --enable-prompt-tokens-details. Without it,
	// prompt_tokens_details is null, as vLLM's default.
	PromptTokensDetails bool

	// PrefillPerToken is the linear prefill cost, in seconds per token.
	PrefillPerToken float64
	// PrefillPerTokenSquared is the quadratic (attention) prefill cost, in
	// seconds per token².
	PrefillPerTokenSquared float64
	// DecodeBase gives base(B), a decode step's cost without context, at
	// some batch sizes, in ascending order of Batch. Between points the
	// cost is interpolated linearly, beyond the last point it is
	// extrapolated along the last segment, and below the first it is the
	// first point's cost. Empty means 0.
	DecodeBase []BatchCost
	// DecodePerContextToken is a decode step's cost per context token held
	// by the batch, in seconds.
	DecodePerContextToken float64
	// DecodePerMaxContextToken is a decode step's cost per token of the
	// batch's longest context, in seconds.
	DecodePerMaxContextToken float64

	// ReasoningTokens makes the first ReasoningTokens output tokens of
	// every response (or all of them, for a shorter one) reasoning, as a
	// reasoning model thinks before it answers: streamed as reasoning
	// deltas in ReasoningField, apart from the answer's content, and
	// counted in usage as completion_tokens_details.reasoning_tokens, as
	// OpenAI reports them. 0 means no reasoning.
	ReasoningTokens int
	// ReasoningField names the chat delta's reasoning field: "reasoning",
	// as vLLM sends it since it renamed the field, or "reasoning_content",
	// as SGLang and earlier vLLM do. "" means "reasoning".
	ReasoningField string

	// PoolStep and PoolPerToken are the costs of the pooling model that
	// serves /v1/embeddings and /v1/rerank (a rerank request's tokens are
	// its query's and a document's, for each document): a step takes every
	// waiting request whose input tokens fit MaxNumBatchedTokens (at least
	// one), in order of arrival, and costs PoolStep + PoolPerToken·(its
	// input tokens), in seconds. Zero PoolPerToken means PrefillPerToken,
	// and zero PoolStep the cost of a decode step of one request: a
	// pooling model's forward pass is a prefill without decoding.
	PoolStep, PoolPerToken float64
	// EmbeddingSize is the length of each embedding; 0 means 64.
	EmbeddingSize int
	// VisionPatch is the side, in pixels, of the square patch one image
	// token stands for: an image of W×H pixels costs
	// ceil(W/VisionPatch)·ceil(H/VisionPatch) prompt tokens, as Qwen2-VL
	// counts them (14-pixel patches merged 2×2), but at least
	// VisionMinTokens and at most VisionMaxTokens (where Qwen resizes the
	// image). 0 means 28, 4 and 16384. Images come as data URLs of PNG
	// or JPEG pictures; their size is read from their headers.
	VisionPatch                      int
	VisionMinTokens, VisionMaxTokens int
	// VisionEncodePerToken is the vision encoder's cost per image token,
	// in seconds, paid in the step that admits a request (not when the
	// prefix cache holds its whole prompt). 0 means none.
	VisionEncodePerToken float64
	// IdleWatts, BusyWatts, RunningWatts and MaxWatts are the power
	// model of the simulated GPUs, which /dcgm/metrics publishes as an
	// NVIDIA DCGM exporter does: the GPUs draw IdleWatts, plus BusyWatts
	// while any request runs and RunningWatts for each running request,
	// at most MaxWatts (0: no cap), in the profile's own time. A server
	// at Speed does Speed times the work a second, so it draws Speed
	// times the power and the energy of a token stays the profile's. All
	// zero: no power model, and /dcgm/metrics answers 404.
	IdleWatts, BusyWatts, RunningWatts, MaxWatts float64
	// GPUs is how many GPUs the power is split over, each a series of
	// /dcgm/metrics; 0 means 1.
	GPUs int

	// TruthBytes caps the memory of the ground truth the server records
	// (about 16 bytes a chunk and 256 a request); 0 means
	// 32 MiB, negative records nothing. See [Truth].
	TruthBytes int64
}

// BatchCost is one point of a decode step's base cost: Seconds for a step
// that decodes Batch requests.
type BatchCost struct {
	Batch   int
	Seconds float64
}

// SeedProfile returns the profile calibrated to the seed run: a 4B model,
// AWQ 4-bit, on one RTX 3060 12 GB, served by vLLM with prefix caching and an
// int4 KV cache (see the project's seed/README.md).
//
// Its KV cache holds 720,896 tokens (45,056 blocks of 16). The seed bounds it
// to [655,360, 786,432): 16 × (32K + 8K) ran and 32 × (16K + 8K) did not.
// 720,896 is block-aligned and near the middle of that range, so every cell
// of the seed's grid gets the seed's verdict with room to spare for chat
// template tokens and block rounding.
func SeedProfile() Profile {
	return Profile{
		Name:                   "seed",
		Model:                  DefaultModel,
		MaxModelLen:            262144,
		MaxNumSeqs:             128,
		MaxNumBatchedTokens:    2048, // vLLM's default on a GPU under 70 GB
		BlockSize:              16,
		KVCacheTokens:          45056 * 16,
		PrefillPerToken:        3.4e-4,
		PrefillPerTokenSquared: 1.0e-8,
		DecodeBase: []BatchCost{
			{1, 12.07e-3}, {2, 12.45e-3}, {4, 13.28e-3}, {8, 14.92e-3},
			{16, 18.63e-3}, {32, 28.44e-3}, {64, 47.78e-3},
		},
		DecodePerContextToken:    0.0945e-6,
		DecodePerMaxContextToken: 0.0405e-6,
		// A vision encoder of about 0.6B parameters: a 448×448 image,
		// 256 tokens, takes 26 ms.
		VisionEncodePerToken: 0.1e-3,
		// An RTX 3060's draw: about 15 W idle with the model loaded,
		// about 100 W decoding one stream, its 170 W limit from about
		// 25 streams.
		IdleWatts: 15, BusyWatts: 85, RunningWatts: 3, MaxWatts: 170,
	}
}

// FastProfile returns a profile with simple costs and room for a soak of
// 10,000 concurrent streams: every decode step takes 10 ms whatever the
// batch (100 tokens/s per stream), prefill takes 10 µs a token, and the KV
// cache holds 2^25 tokens for up to 16,384 running requests of at most
// 32,768 tokens. It records no ground truth (TruthBytes -1), so memory stays
// flat however long it runs.
func FastProfile() Profile {
	return Profile{
		Name:                "fast",
		Model:               DefaultModel,
		MaxModelLen:         32768,
		MaxNumSeqs:          16384,
		MaxNumBatchedTokens: 32768,
		BlockSize:           16,
		KVCacheTokens:       1 << 25,
		PrefillPerToken:     10e-6,
		DecodeBase:          []BatchCost{{1, 10e-3}},
		TruthBytes:          -1,
		IdleWatts:           60, BusyWatts: 240, RunningWatts: 0.05, MaxWatts: 700,
	}
}

// profiles returns the built-in profiles by name.
func profiles() map[string]Profile {
	return map[string]Profile{
		"seed": SeedProfile(),
		"fast": FastProfile(),
	}
}

// ProfileByName returns the built-in profile called name: "seed"
// ([SeedProfile]) or "fast" ([FastProfile]).
func ProfileByName(name string) (Profile, error) {
	all := profiles()
	p, ok := all[name]
	if !ok {
		return Profile{}, fmt.Errorf("loadgentest: no profile %q; built-in profiles are %q", name, slices.Sorted(maps.Keys(all)))
	}
	return p, nil
}

// PrefillTime is the time to prefill a promptTokens-token prompt from an
// empty cache, in the profile's own time (divide by Speed for wall time).
func (p Profile) PrefillTime(promptTokens int) time.Duration {
	return seconds(p.prefillCost(0, promptTokens))
}

// prefillChunkTime is the cost of prefilling tokens prompt tokens that start
// at offset (tokens already in the cache, from earlier chunks or a prefix
// cache hit), in the profile's own time.
func (p Profile) prefillChunkTime(offset, tokens int) time.Duration {
	return seconds(p.prefillCost(offset, tokens))
}

// DecodeStepTime is the time of one step that decodes one token for each of
// batch requests, whose contexts (prompt plus tokens generated so far) sum to
// sumContext tokens and the longest of which holds maxContext, in the
// profile's own time. A batch of 0 costs nothing.
func (p Profile) DecodeStepTime(batch, sumContext, maxContext int) time.Duration {
	return seconds(p.decodeCost(batch, sumContext, maxContext))
}

func (p Profile) prefillCost(offset, tokens int) float64 {
	o, n := float64(offset), float64(offset+tokens)
	return p.PrefillPerToken*float64(tokens) + p.PrefillPerTokenSquared*(n*n-o*o)
}

func (p Profile) decodeCost(batch, sumContext, maxContext int) float64 {
	if batch <= 0 {
		return 0
	}
	return p.decodeBase(batch) + p.DecodePerContextToken*float64(sumContext) + p.DecodePerMaxContextToken*float64(maxContext)
}

func (p Profile) decodeBase(batch int) float64 {
	pts := p.DecodeBase
	switch {
	case len(pts) == 0:
		return 0
	case len(pts) == 1 || batch <= pts[0].Batch:
		return pts[0].Seconds
	}
	i := 1
	for i < len(pts)-1 && pts[i].Batch < batch {
		i++
	}
	lo, hi := pts[i-1], pts[i]
	slope := (hi.Seconds - lo.Seconds) / float64(hi.Batch-lo.Batch)
	return lo.Seconds + slope*float64(batch-lo.Batch)
}

// withDefaults returns p with its zero fields set as documented.
func (p Profile) withDefaults() Profile {
	if p.Model == "" {
		p.Model = DefaultModel
	}
	if p.Speed <= 0 {
		p.Speed = 1
	}
	if p.MaxModelLen <= 0 {
		p.MaxModelLen = defaultMaxModelLen
	}
	if p.MaxNumSeqs <= 0 {
		p.MaxNumSeqs = defaultMaxNumSeqs
	}
	if p.MaxNumBatchedTokens <= 0 {
		p.MaxNumBatchedTokens = defaultMaxNumBatchedTokens
	}
	p.MaxNumBatchedTokens = max(p.MaxNumBatchedTokens, p.MaxNumSeqs)
	if p.BlockSize <= 0 {
		p.BlockSize = defaultBlockSize
	}
	if p.KVCacheTokens <= 0 {
		p.KVCacheTokens = p.MaxNumSeqs * p.MaxModelLen
	}
	p.KVCacheTokens -= p.KVCacheTokens % p.BlockSize
	if p.KVCacheTokens < p.BlockSize {
		p.KVCacheTokens = p.BlockSize
	}
	p.MaxModelLen = min(p.MaxModelLen, p.KVCacheTokens)
	if p.ReasoningField == "" {
		p.ReasoningField = "reasoning"
	}
	p.ReasoningTokens = max(p.ReasoningTokens, 0)
	if p.VisionPatch <= 0 {
		p.VisionPatch = defaultVisionPatch
	}
	if p.VisionMinTokens <= 0 {
		p.VisionMinTokens = defaultVisionMinTokens
	}
	if p.VisionMaxTokens <= 0 {
		p.VisionMaxTokens = defaultVisionMaxTokens
	}
	p.VisionMaxTokens = max(p.VisionMaxTokens, p.VisionMinTokens)
	p.VisionEncodePerToken = max(p.VisionEncodePerToken, 0)
	if p.TruthBytes == 0 {
		p.TruthBytes = defaultTruthBytes
	}
	if p.PoolPerToken <= 0 {
		p.PoolPerToken = p.PrefillPerToken
	}
	if p.PoolStep <= 0 {
		p.PoolStep = p.decodeBase(1)
	}
	if p.EmbeddingSize <= 0 {
		p.EmbeddingSize = defaultEmbeddingSize
	}
	p.DecodeBase = slices.Clone(p.DecodeBase)
	p.Adapters = slices.Clone(p.Adapters)
	p.GPUs = max(p.GPUs, 1)
	return p
}

// hasPower reports whether the profile has a power model.
func (p Profile) hasPower() bool {
	return p.IdleWatts > 0 || p.BusyWatts > 0 || p.RunningWatts > 0
}

// watts is the draw of all the GPUs, in wall time, with running requests
// in the running set.
func (p Profile) watts(running int) float64 {
	w := p.IdleWatts
	if running > 0 {
		w += p.BusyWatts + p.RunningWatts*float64(running)
	}
	if p.MaxWatts > 0 {
		w = min(w, p.MaxWatts)
	}
	return w * p.Speed
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
