package capacity

import (
	"fmt"
	"strings"
)

// kvCacheDTypes lists the --kv-cache-dtype values vLLM accepts that this
// package sizes. "auto" stores the model dtype. The *_per_token_head dtypes
// (Triton attention backend) store one float32 scale per token, head and
// K/V side next to the data; int4_per_token_head packs two values a byte.
// nvfp4 packs two values a byte with one fp8 scale per 16. fp8_ds_mla is
// DeepSeek's 656-byte MLA layout.
var kvCacheDTypes = []string{
	"auto", "bfloat16", "float16",
	"fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc",
	"fp8_per_token_head", "int8_per_token_head", "int4_per_token_head",
	"nvfp4", "fp8_ds_mla",
}

// scaleBytes is the size of one per-token-head scale (float32).
const scaleBytes = 4

// normalizeKVCacheDType maps the spellings vLLM accepts to one name.
func normalizeKVCacheDType(s string) string {
	switch strings.ToLower(s) {
	case "", "auto":
		return "auto"
	case "bf16", "bfloat16":
		return "bfloat16"
	case "fp16", "float16", "half":
		return "float16"
	}
	return strings.ToLower(s)
}

// attentionBytesPerToken returns the bytes one token occupies in one
// attention layer of m on one tensor-parallel rank, for a vLLM
// --kv-cache-dtype: 2 (K and V) × KV heads × head dim × element size, plus
// the per-token-head scales; for MLA the latent (kv_lora_rank +
// qk_rope_head_dim) once, shared by all ranks.
func attentionBytesPerToken(m *Model, kvCacheDType string, tensorParallel int) (int, error) {
	if tensorParallel <= 0 {
		tensorParallel = 1
	}
	d := normalizeKVCacheDType(kvCacheDType)
	if m.MLA != nil {
		latent := m.MLA.KVLoraRank + m.MLA.QKRopeHeadDim
		switch d {
		case "fp8_ds_mla":
			return 656, nil
		case "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc":
			return latent, nil
		case "auto":
			s, err := dtypeSize(m.DType)
			if err != nil {
				return 0, err
			}
			return latent * s, nil
		case "bfloat16", "float16":
			return latent * 2, nil
		}
		return 0, &InputError{Flag: true, Field: "kv_cache_dtype", Value: kvCacheDType, Reason: "not one vLLM takes for an MLA model (auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2, fp8_inc, fp8_ds_mla)"}
	}
	heads := max(1, m.NumKVHeads/tensorParallel)
	hs := m.HeadDim
	switch d {
	case "auto":
		s, err := dtypeSize(m.DType)
		if err != nil {
			return 0, err
		}
		return 2 * heads * hs * s, nil
	case "bfloat16", "float16":
		return 2 * heads * hs * 2, nil
	case "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc":
		return 2 * heads * hs, nil
	case "fp8_per_token_head", "int8_per_token_head":
		return heads * (2*hs + 2*scaleBytes), nil
	case "int4_per_token_head":
		return heads * (2*(hs/2) + 2*scaleBytes), nil
	case "nvfp4":
		return 2 * heads * (hs/2 + hs/16), nil
	}
	return 0, &InputError{Flag: true, Field: "kv_cache_dtype", Value: kvCacheDType, Reason: "not a KV-cache dtype this package sizes (" + strings.Join(kvCacheDTypes, ", ") + ")"}
}

// stateBytes returns the bytes one sequence's state occupies in one
// linear-attention (Gated DeltaNet) or Mamba2 layer of m on one
// tensor-parallel rank: the convolution state and the recurrent (SSM)
// state. convDType and ssmDType are vLLM's --mamba-cache-dtype and
// --mamba-ssm-cache-dtype; "" or "auto" means the model dtype for the
// convolution state and config.json's mamba_ssm_dtype (else the model dtype)
// for the recurrent state.
func stateBytes(m *Model, kind layerKind, tensorParallel int, convDType, ssmDType string) (conv, ssm int, err error) {
	if tensorParallel <= 0 {
		tensorParallel = 1
	}
	var convElems, ssmElems int
	var configSSM string
	switch {
	case kind == linearAttention && m.GatedDeltaNet != nil:
		g := m.GatedDeltaNet
		convDim := g.KeyHeadDim*g.NumKeyHeads*2 + g.ValueHeadDim*g.NumValueHeads
		convElems = convDim / tensorParallel * (g.ConvKernel - 1)
		ssmElems = g.NumValueHeads / tensorParallel * g.KeyHeadDim * g.ValueHeadDim
		configSSM = g.StateDType
	case kind == mambaLayer && m.Mamba2 != nil:
		mb := m.Mamba2
		groups := mb.NumGroups
		if groups%tensorParallel != 0 {
			groups += tensorParallel - groups%tensorParallel // vLLM replicates groups to shard them with their heads
		}
		convDim := mb.NumHeads*mb.HeadDim + 2*groups*mb.StateSize
		convElems = convDim / tensorParallel * (mb.ConvKernel - 1)
		ssmElems = mb.NumHeads / tensorParallel * mb.HeadDim * mb.StateSize
		configSSM = mb.StateDType
	default:
		return 0, 0, fmt.Errorf("capacity: layer kind %s keeps no state", kind)
	}
	cs, err := stateDTypeSize(convDType, m.DType)
	if err != nil {
		return 0, 0, err
	}
	if ssmDType == "" || ssmDType == "auto" {
		ssmDType = configSSM
	}
	ss, err := stateDTypeSize(ssmDType, m.DType)
	if err != nil {
		return 0, 0, err
	}
	return convElems * cs, ssmElems * ss, nil
}

func stateDTypeSize(d, modelDType string) (int, error) {
	if d == "" || d == "auto" {
		d = modelDType
	}
	return dtypeSize(d)
}
