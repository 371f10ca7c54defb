package matrix

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
)

// TestWritePlanEstimateRange: limits from an estimate carry its expected
// range; the plan prints it next to the KV tokens, runs the cells that fit
// only toward the optimistic end "at risk" and skips only those over even
// that end.
func TestWritePlanEstimateRange(t *testing.T) {
	m, err := capacity.LoadModel("../capacity/testdata/qwen3.5-4b-awq")
	require.NoError(t, err)
	e, err := capacity.EstimateVLLM(m, capacity.VLLM{
		Version: "0.32.0", GPUMemoryBytes: capacity.GiBToBytes(11.76), GPUMemoryUtilization: 0.94,
		KVCacheDType: "int4_per_token_head", MaxModelLen: 262144, MaxNumSeqs: 128,
		EnablePrefixCaching: true, LanguageModelOnly: true,
	})
	require.NoError(t, err)
	limits := e.Limits()
	require.Positive(t, limits.KVTokensLow)
	require.Less(t, limits.KVTokensLow, limits.KVTokens)
	require.Greater(t, limits.KVTokensHigh, limits.KVTokens)

	cells := Plan(Spec{}, limits) // the seed's grid
	var out bytes.Buffer
	require.NoError(t, WritePlan(&out, cells, limits))
	text := out.String()
	assert.Regexp(t, regexp.MustCompile(`KV tokens \d+ \(expected \d+–\d+, -\d+\.\d% … \+\d+\.\d%\)`), text)
	assert.Regexp(t, `(?m)^32K\s+16\s+run, at risk\s+16 × \(32768 \+ 8192\) = 655360 ≤ \d+ KV tokens; at risk`, text)
	assert.Regexp(t, `(?m)^16K\s+32\s+skip: over capacity\s+32 × \(16384 \+ 8192\) = 786432 tokens > \d+ KV tokens, the optimistic end`, text)
	assert.Regexp(t, `(?m)^16K\s+16\s+run\s+16 × `, text)
	for _, c := range cells {
		if c.ContextTokens == 32768 && c.Concurrency == 16 {
			assert.True(t, c.Predicted.AtRisk)
			assert.Empty(t, c.Status, "an at-risk cell is measured")
		}
	}
}
