package capacity

import (
	"encoding/csv"
	"os"
	"strconv"
	"testing"

	"github.com/llmload/llmload/internal/gib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The seed run: Qwen3.5-4B AWQ 4-bit on a 12 GB RTX 3060 (PyTorch reports
// 11.76 GiB), served by vLLM 0.32.0 with
//
//	--max-model-len 262144 --gpu-memory-utilization 0.94 --max-num-seqs 128
//	--enable-prefix-caching --language-model-only
//	--kv-cache-dtype int4_per_token_head --attention-backend TRITON_ATTN
var seedLaunch = VLLM{
	Version:              "0.32.0",
	GPUMemoryBytes:       gib.Bytes(11.76),
	GPUMemoryUtilization: 0.94,
	KVCacheDType:         "int4_per_token_head",
	MaxModelLen:          262144,
	MaxNumSeqs:           128,
	EnablePrefixCaching:  true,
	LanguageModelOnly:    true,
}

// seedMaxOutput is the seed's max output tokens per request.
const seedMaxOutput = 8192

func seedEstimate(t *testing.T) *Estimate {
	t.Helper()
	m, err := LoadModel("testdata/qwen3.5-4b-awq")
	require.NoError(t, err)
	e, err := EstimateVLLM(m, seedLaunch)
	require.NoError(t, err)
	return e
}

// TestSeedGeometry checks the block geometry vLLM derives for the seed's
// model and flags, all exact.
func TestSeedGeometry(t *testing.T) {
	e := seedEstimate(t)
	assert.Equal(t, 4*(2*(256/2)+2*4), e.AttentionBytesPerToken, "4 KV heads × (128 + 128 packed int4 bytes + 2 float32 scales)")
	assert.Equal(t, 8192*3*2, e.ConvStateBytes, "conv state (2·16·128 + 32·128) × 3 in bfloat16")
	assert.Equal(t, 32*128*128*4, e.RecurrentStateBytes, "recurrent state 32 × 128 × 128 in float32")
	assert.Equal(t, 2048, e.BlockSize, "16 × ⌈2,146,304 ÷ (16 × 1,056)⌉")
	assert.Equal(t, 2048*1056, e.PageBytes)
	assert.Equal(t, 8, e.LayersPerBlock)
	require.Len(t, e.Groups, 4, "1 attention group + 3 Gated DeltaNet groups of 8 layers")
	assert.Equal(t, "align", e.MambaCacheMode, "prefix caching on a hybrid model")
	assert.Equal(t, 128+3*2, e.BlocksPerRequest, "262,144 ÷ 2,048 attention blocks + 2 state blocks per linear-attention group")
}

// TestSeedCells predicts all 48 decode cells of the seed run: the cells the
// page measured (Valid, Requests queued) fit, the Over capacity ones do not,
// for the right reason — the 248K row because 253,952 + 8,192 + the chat
// template exceeds max_model_len 262,144, the others because
// concurrency × (context + 8,192) exceeds the KV tokens (the cache held
// 16 × (32K + 8K) = 655,360 but not 32 × (16K + 8K) = 786,432).
func TestSeedCells(t *testing.T) {
	e := seedEstimate(t)
	limits := e.Limits()
	t.Logf("seed: %d KV tokens = int(%d blocks ÷ %d × %d); %.2f GiB for the KV cache",
		e.KVTokens, e.NumBlocks, e.BlocksPerRequest, e.MaxModelLen, float64(e.Budget.AvailableKV.Bytes)/gibibyte)
	require.GreaterOrEqual(t, limits.KVTokens, 16*(32768+seedMaxOutput))
	require.Less(t, limits.KVTokens, 32*(16384+seedMaxOutput))

	f, err := os.Open("testdata/measurements.csv")
	require.NoError(t, err)
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	cells := 0
	for _, rec := range records[1:] {
		if rec[0] != "decode" {
			continue
		}
		cells++
		context, err := strconv.Atoi(rec[1])
		require.NoError(t, err)
		concurrency, err := strconv.Atoi(rec[2])
		require.NoError(t, err)
		status := rec[3]
		t.Run(rec[1]+"x"+rec[2], func(t *testing.T) {
			v := limits.Check(context, concurrency, seedMaxOutput)
			switch status {
			case "valid", "requests_queued":
				assert.True(t, v.Fits, "%s measured, predicted: %s", status, v.Detail)
				assert.Equal(t, WithinLimits, v.Reason)
			case "over_capacity":
				assert.False(t, v.Fits, "over capacity, predicted: %s", v.Detail)
				want := OverKVTokens
				if context == 253952 {
					want = OverMaxModelLen
				}
				assert.Equal(t, want, v.Reason, v.Detail)
			default:
				t.Fatalf("unknown status %q", status)
			}
		})
	}
	assert.Equal(t, 48, cells)
}

// TestSeedZeroContextAt128 explains the one over-capacity cell of the 0K
// row: 128 requests of up to 8,192 output tokens need 1,048,576 tokens, more
// than the cache holds, though 128 is within max_num_seqs.
func TestSeedZeroContextAt128(t *testing.T) {
	v := seedEstimate(t).Limits().Check(0, 128, seedMaxOutput)
	assert.Equal(t, OverKVTokens, v.Reason)
	assert.Equal(t, 128*8192, v.Need)
}

// TestSeedConcurrency asks the seed's estimate how many requests of each
// measured context (up to 8,192 output tokens) run at once, and holds the
// answer and its range against the measured grid: every concurrency
// measured fitting is at most the range's high end, every one measured over
// capacity more than its low end, and the 248K row holds none.
func TestSeedConcurrency(t *testing.T) {
	limits := seedEstimate(t).Limits()
	f, err := os.Open("testdata/measurements.csv")
	require.NoError(t, err)
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	fit, over := map[int]int{}, map[int]int{}
	for _, rec := range records[1:] {
		if rec[0] != "decode" {
			continue
		}
		context, err := strconv.Atoi(rec[1])
		require.NoError(t, err)
		n, err := strconv.Atoi(rec[2])
		require.NoError(t, err)
		if rec[3] == "over_capacity" {
			if o, ok := over[context]; !ok || n < o {
				over[context] = n
			}
		} else {
			fit[context] = max(fit[context], n)
		}
	}
	require.Len(t, over, 6)
	for context, firstOver := range over {
		c := limits.Concurrency(context, seedMaxOutput)
		t.Logf("%d-token context: %d at once (%d–%d), measured: %d fit, %d over; %s", context, c.Requests, c.Low, c.High, fit[context], firstOver, c.Detail)
		assert.LessOrEqual(t, fit[context], c.High, "measured fitting beyond the range")
		assert.Less(t, c.Low, firstOver, "measured over capacity within the range")
		assert.LessOrEqual(t, c.Low, c.Requests)
		assert.LessOrEqual(t, c.Requests, c.High)
		if context == 253952 {
			assert.Equal(t, LimitMaxModelLen, c.Limit)
			assert.Zero(t, c.High)
		} else {
			assert.Equal(t, (seedEstimate(t).KVTokens)/(context+seedMaxOutput), c.Requests, "⌊KV tokens ÷ (context + output)⌋")
		}
	}
}
