package capacity

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustParse(t *testing.T, config string) *Model {
	t.Helper()
	m, err := ParseConfig([]byte(config))
	require.NoError(t, err)
	return m
}

const (
	denseConfig = `{"hidden_size":4096,"intermediate_size":14336,"num_attention_heads":32,"num_key_value_heads":8,"num_hidden_layers":32,"vocab_size":128256,"max_position_embeddings":8192}`
	mlaConfig   = `{"hidden_size":2048,"num_attention_heads":16,"num_hidden_layers":27,"kv_lora_rank":512,"qk_rope_head_dim":64,"qk_nope_head_dim":128,"v_head_dim":128,"vocab_size":102400,"max_position_embeddings":4096}`
)

func TestAttentionBytesPerToken(t *testing.T) {
	dense := mustParse(t, denseConfig) // 8 KV heads × 128
	mla := mustParse(t, mlaConfig)     // latent 512 + 64
	tests := []struct {
		model *Model
		dtype string
		tp    int
		want  int
	}{
		{dense, "auto", 1, 2 * 8 * 128 * 2},
		{dense, "bf16", 1, 2 * 8 * 128 * 2},
		{dense, "fp8", 1, 2 * 8 * 128},
		{dense, "fp8_e5m2", 2, 2 * 4 * 128},
		{dense, "int8_per_token_head", 1, 8 * (2*128 + 2*4)},
		{dense, "fp8_per_token_head", 1, 8 * (2*128 + 2*4)},
		{dense, "int4_per_token_head", 1, 8 * (2*64 + 2*4)},
		{dense, "nvfp4", 1, 2 * 8 * (64 + 8)},
		{dense, "auto", 16, 2 * 1 * 128 * 2}, // fewer KV heads than ranks: one per rank
		{mla, "auto", 1, 576 * 2},
		{mla, "fp8", 8, 576},
		{mla, "fp8_ds_mla", 1, 656},
	}
	for _, tc := range tests {
		got, err := attentionBytesPerToken(tc.model, tc.dtype, tc.tp)
		require.NoError(t, err, tc.dtype)
		assert.Equal(t, tc.want, got, "%s tp %d", tc.dtype, tc.tp)
	}
	_, err := attentionBytesPerToken(dense, "int3", 1)
	requireLaunchField(t, err, "kv_cache_dtype")
	_, err = attentionBytesPerToken(mla, "int8_per_token_head", 1)
	requireLaunchField(t, err, "kv_cache_dtype")
}

func TestStateBytes(t *testing.T) {
	m, err := LoadModel("testdata/qwen3.5-4b-awq/config.json")
	require.NoError(t, err)
	conv, ssm, err := stateBytes(m, linearAttention, 1, "", "")
	require.NoError(t, err)
	assert.Equal(t, 8192*3*2, conv)
	assert.Equal(t, 32*128*128*4, ssm)
	conv, ssm, err = stateBytes(m, linearAttention, 2, "auto", "bfloat16")
	require.NoError(t, err)
	assert.Equal(t, 4096*3*2, conv)
	assert.Equal(t, 16*128*128*2, ssm)
	_, _, err = stateBytes(m, mambaLayer, 1, "", "")
	require.Error(t, err)

	nem := mustParse(t, `{"hidden_size":4096,"num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,"num_hidden_layers":2,"hybrid_override_pattern":"M*","mamba_num_heads":128,"mamba_head_dim":64,"ssm_state_size":128,"n_groups":8,"conv_kernel":4,"torch_dtype":"bfloat16"}`)
	conv, ssm, err = stateBytes(nem, mambaLayer, 1, "", "")
	require.NoError(t, err)
	assert.Equal(t, (128*64+2*8*128)*3*2, conv)
	assert.Equal(t, 128*64*128*2, ssm)
}

func TestEstimateDense(t *testing.T) {
	m := mustParse(t, denseConfig)
	e, err := EstimateVLLM(m, VLLM{AvailableKVBytes: 10 * gibibyte, MaxModelLen: 8192})
	require.NoError(t, err)
	page := 16 * 2 * 8 * 128 * 2
	assert.Equal(t, 16, e.BlockSize)
	assert.Equal(t, page, e.PageBytes)
	assert.Equal(t, 32, e.LayersPerBlock)
	require.Len(t, e.Groups, 1)
	assert.Equal(t, 10*gibibyte/page/32, e.NumBlocks)
	assert.Equal(t, e.NumBlocks*16, e.KVTokens, "a uniform model: blocks × block size")
	assert.Equal(t, e.KVTokens, e.LegacyKVTokens)
	assert.Equal(t, 256, e.MaxNumSeqs, "vLLM's default under 70 GiB")
	assert.Equal(t, 2048, e.MaxNumBatchedTokens)
	assert.Equal(t, Limits{KVTokens: e.KVTokens, MaxRunning: 256, MaxModelLen: 8192, Source: "estimate (vllm)"}, e.Limits())

	big, err := EstimateVLLM(m, VLLM{GPUMemoryBytes: 80 * gibibyte})
	require.NoError(t, err)
	assert.Equal(t, 1024, big.MaxNumSeqs)
	assert.Equal(t, 8192, big.MaxNumBatchedTokens)
	assert.Equal(t, 8192, big.MaxModelLen, "max_position_embeddings")
	assert.True(t, big.Budget.Weights.Estimated)
	assert.InDelta(t, 16.06e9, float64(big.Budget.Weights.Bytes), 0.1e9, "8B parameters in bfloat16")
}

func TestEstimateSlidingWindow(t *testing.T) {
	// gpt-oss-like: alternating sliding (128) and full attention.
	m := mustParse(t, `{"hidden_size":2880,"num_attention_heads":64,"num_key_value_heads":8,"head_dim":64,"num_hidden_layers":24,"sliding_window":128,"layer_types":`+
		`["sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention",`+
		`"sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention"],"max_position_embeddings":131072}`)
	e, err := EstimateVLLM(m, VLLM{AvailableKVBytes: 40 * gibibyte, MaxNumBatchedTokens: 8192})
	require.NoError(t, err)
	require.Len(t, e.Groups, 2)
	assert.Equal(t, 12, e.LayersPerBlock)
	assert.Equal(t, (127+8192+15)/16+1, e.Groups[0].BlocksPerRequest, "the window plus a batch, plus one")
	assert.Equal(t, 131072/16, e.Groups[1].BlocksPerRequest)
	assert.Equal(t, int(float64(e.NumBlocks)/float64(e.BlocksPerRequest)*131072), e.KVTokens)
}

func TestEstimateMamba2Hybrid(t *testing.T) {
	// A small Nemotron-H-like model: 9 Mamba2 layers, 2 attention layers.
	m := mustParse(t, `{"model_type":"nemotron_h","hidden_size":4096,"num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,"num_hidden_layers":14,`+
		`"hybrid_override_pattern":"M-MM*-MMM*-MMM","mamba_num_heads":128,"mamba_head_dim":64,"ssm_state_size":128,"n_groups":8,"conv_kernel":4,"max_position_embeddings":131072}`)
	e, err := EstimateVLLM(m, VLLM{AvailableKVBytes: 20 * gibibyte})
	require.NoError(t, err)
	state := (128*64+2*8*128)*3*2 + 128*64*128*2
	assert.Equal(t, state, e.StateBytes)
	per := 2 * 8 * 128 * 2
	assert.Equal(t, 16*((state+16*per-1)/(16*per)), e.BlockSize)
	assert.Equal(t, 2, e.LayersPerBlock, "the 2 attention layers set the group size")
	require.Len(t, e.Groups, 6, "5 Mamba groups of up to 2 and 1 attention group")
	assert.Contains(t, e.Notes, "1 padding layers in the mamba groups")
	assert.Equal(t, "none", e.MambaCacheMode)
	assert.Equal(t, e.MaxModelLen, e.Groups[0].BlockSize, "Mamba groups' block is max_model_len without prefix caching")
	assert.Equal(t, e.BlockSize, e.LegacyKVTokens/(e.NumBlocks/6))
	assert.Equal(t, 5+131072/e.BlockSize+1, e.BlocksPerRequest)
}

func TestEstimateMLAPipeline(t *testing.T) {
	m := mustParse(t, mlaConfig)
	e, err := EstimateVLLM(m, VLLM{AvailableKVBytes: 12 * gibibyte, TensorParallelSize: 2, PipelineParallelSize: 2, MaxModelLen: 1024})
	require.NoError(t, err)
	assert.Equal(t, 576*2, e.AttentionBytesPerToken, "MLA is not split by TP")
	assert.Equal(t, int(12*gibibyte/(16*1152)/14), e.NumBlocks, "stage 0 holds 14 of 27 layers")
	assert.Equal(t, []int{14, 13}, ppPartition(27, 2))
	assert.Equal(t, []int{2, 2, 1}, ppPartition(5, 3))
	assert.Equal(t, []int{4, 4}, ppPartition(8, 2))
}

func TestEstimateErrors(t *testing.T) {
	m := mustParse(t, denseConfig)
	_, err := EstimateVLLM(m, VLLM{AvailableKVBytes: gibibyte, KVCacheDType: "int3"})
	requireLaunchField(t, err, "kv_cache_dtype")

	e, err := EstimateVLLM(m, VLLM{GPUMemoryBytes: 8 * gibibyte})
	require.ErrorIs(t, err, ErrInsufficientMemory, "16 GB of weights on an 8 GiB card")
	require.NotNil(t, e, "the derivation is still returned")
	assert.Negative(t, e.Budget.AvailableKV.Bytes)

	_, err = EstimateVLLM(m, VLLM{AvailableKVBytes: 64 * mebibyte, MaxModelLen: 8192})
	require.ErrorIs(t, err, ErrInsufficientMemory, "no room for one max_model_len request")

	h, err := LoadModel("testdata/qwen3.5-4b-awq/config.json")
	require.NoError(t, err)
	_, err = EstimateVLLM(h, VLLM{AvailableKVBytes: 8 * gibibyte, MambaCacheMode: "all"})
	require.ErrorIs(t, err, ErrUnsupported)

	noLen := mustParse(t, `{"hidden_size":64,"num_attention_heads":4,"num_hidden_layers":1}`)
	_, err = EstimateVLLM(noLen, VLLM{AvailableKVBytes: gibibyte})
	require.ErrorAs(t, err, new(*InputError))
	_, err = EstimateVLLM(nil, VLLM{})
	require.ErrorAs(t, err, new(*InputError))
	_, err = EstimateVLLM(m, VLLM{MaxModelLen: 8192})
	require.ErrorIs(t, err, ErrNoGPUMemory)
	_, err = EstimateSGLang(m, SGLang{})
	require.ErrorIs(t, err, ErrNoGPUMemory)
}

func TestBudgetTerms(t *testing.T) {
	m, err := LoadModel("testdata/qwen3.5-4b-awq/config.json")
	require.NoError(t, err)
	l := seedLaunch
	l.WeightsBytes = 3 * gibibyte
	l.ActivationBytes = 512 * mebibyte
	l.CUDAGraphBytes = gibibyte
	l.NonTorchBytes = 256 * mebibyte
	e, err := EstimateVLLM(m, l)
	require.NoError(t, err)
	b := e.Budget
	for _, term := range []Term{b.Weights, b.Activation, b.CUDAGraphs, b.NonTorch} {
		assert.False(t, term.Estimated)
	}
	assert.Equal(t, b.RequestedBytes-3*gibibyte-512*mebibyte-gibibyte-256*mebibyte, b.AvailableKV.Bytes)

	l = seedLaunch
	l.EnforceEager = true
	e, err = EstimateVLLM(m, l)
	require.NoError(t, err)
	assert.Zero(t, e.Budget.CUDAGraphs.Bytes)

	l = seedLaunch
	l.Version = "0.19.0"
	e, err = EstimateVLLM(m, l)
	require.NoError(t, err)
	assert.Zero(t, e.Budget.CUDAGraphs.Bytes, "not profiled before 0.21")
	assert.Equal(t, e.LegacyKVTokens, e.KVTokens, "the pre-0.20 figure")
	assert.Equal(t, e.NumBlocks/4*2048, e.KVTokens)
}

func TestCUDAGraphCount(t *testing.T) {
	pw, full := cudaGraphCount(256) // vllm-project/vllm#39559: PIECEWISE=51, FULL=35
	assert.Equal(t, 51, pw)
	assert.Equal(t, 35, full)
	pw, full = cudaGraphCount(128)
	assert.Equal(t, 35, pw)
	assert.Equal(t, 19, full)
	pw, full = cudaGraphCount(1)
	assert.Equal(t, 2, pw)
	assert.Equal(t, 1, full)
}

func TestVersion(t *testing.T) {
	assert.True(t, before("0.19.1", 0, 20))
	assert.True(t, before("v0.9.2", 0, 20))
	assert.False(t, before("0.20.0", 0, 20))
	assert.False(t, before("0.32.0rc1", 0, 20))
	assert.False(t, before("", 0, 20), "empty is current")
	assert.False(t, before("nightly", 0, 20))
}

func TestEstimateSGLang(t *testing.T) {
	m := mustParse(t, denseConfig)
	e, err := EstimateSGLang(m, SGLang{GPUMemoryBytes: 80 * gibibyte, MemFractionStatic: 0.9, WeightsBytes: 15 * gibibyte, NonTorchBytes: gibibyte})
	require.NoError(t, err)
	cell := 8 * 128 * 32 * 2 * 2
	avail := int64(float64(80*gibibyte)*0.9) - 15*gibibyte - gibibyte
	assert.Equal(t, int(avail/int64(cell)), e.KVTokens)
	assert.Equal(t, 1, e.BlockSize)
	assert.Zero(t, e.Limits().MaxRunning, "unknown unless given")

	mla := mustParse(t, mlaConfig)
	e, err = EstimateSGLang(mla, SGLang{AvailableKVBytes: gibibyte, KVCacheDType: "fp8_e4m3"})
	require.NoError(t, err)
	assert.Equal(t, gibibyte/(576*27), e.KVTokens)

	h, err := LoadModel("testdata/qwen3.5-4b-awq/config.json")
	require.NoError(t, err)
	_, err = EstimateSGLang(h, SGLang{AvailableKVBytes: 4 * gibibyte})
	require.ErrorIs(t, err, ErrUnsupported, "the state pool needs a size")
	e, err = EstimateSGLang(h, SGLang{AvailableKVBytes: 4 * gibibyte, MaxRunningRequests: 16})
	require.NoError(t, err)
	assert.Equal(t, int((4*gibibyte-16*24*2146304)/(8*2*4*256*2)), e.KVTokens)
	_, err = EstimateSGLang(h, SGLang{AvailableKVBytes: gibibyte, KVCacheDType: "int4_per_token_head", MaxRunningRequests: 1})
	requireLaunchField(t, err, "kv_cache_dtype")
}
