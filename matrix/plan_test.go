package matrix

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/gib"
)

// TestWritePlanEstimateRange: limits from an estimate carry its expected
// range; the plan prints it next to the KV tokens, runs the cells that fit
// only toward the optimistic end "at risk" and skips only those over even
// that end.
func TestWritePlanEstimateRange(t *testing.T) {
	m, err := capacity.LoadModel("../capacity/testdata/qwen3.5-4b-awq")
	require.NoError(t, err)
	e, err := capacity.EstimateVLLM(m, capacity.VLLM{
		Version: "0.32.0", GPUMemoryBytes: gib.Bytes(11.76), GPUMemoryUtilization: 0.94,
		KVCacheDType: "int4_per_token_head", MaxModelLen: 262144, MaxNumSeqs: 128,
		EnablePrefixCaching: true, LanguageModelOnly: true,
	})
	require.NoError(t, err)
	limits := e.Limits()
	require.Positive(t, limits.KVTokensLow)
	require.Less(t, limits.KVTokensLow, limits.KVTokens)
	require.Greater(t, limits.KVTokensHigh, limits.KVTokens)

	cells := planCells(Spec{}.WithDefaults(), limits) // the seed's grid, settled as Run settles it
	var out bytes.Buffer
	require.NoError(t, writeCellPlan(&out, cells, limits))
	text := out.String()
	assert.Regexp(t, regexp.MustCompile(`KV tokens \d+ \(expected \d+–\d+, -\d+\.\d% … \+\d+\.\d%\)`), text)
	assert.Regexp(t, `(?m)^32K\s+16\s+run, at risk\s+16 × \(32768 \+ 8192\) = 655360 ≤ \d+ KV tokens; at risk`, text)
	assert.Regexp(t, `(?m)^16K\s+32\s+run, at risk\s+32 × \(16384 \+ 8192\) = 786432 tokens > \d+ KV tokens, the estimate; at risk: ≤ \d+, the optimistic end`, text)
	assert.Regexp(t, `(?m)^64K\s+16\s+skip: over capacity\s+16 × \(65536 \+ 8192\) = 1179648 tokens > \d+ KV tokens, and > \d+, the optimistic end`, text)
	assert.Regexp(t, `(?m)^16K\s+16\s+run\s+16 × `, text)
	for _, c := range cells {
		if c.ContextTokens == 32768 && c.Concurrency == 16 {
			assert.True(t, c.Predicted.AtRisk)
			assert.Empty(t, c.Status, "an at-risk cell is measured")
		}
	}
}

// TestPlanQueuedAndPrefill: cells beyond the server's max running requests
// are measured (predicted to queue), not over capacity, unless the spec
// skips them; prefill rows longer than max_model_len are over capacity and
// never sent; the plan says how long the run should take.
func TestPlanQueuedAndPrefill(t *testing.T) {
	limits := capacity.Limits{MaxRunning: 4, MaxModelLen: 4096, Source: "flags"}
	spec := Spec{Contexts: []int{0, 1024, 4096}, Concurrency: []int{1, 4, 8}, Prefill: []int{1024, 8192}, MaxTokens: 128}
	cells := planCells(spec, limits)
	at := func(cells []Cell, ctx, n int) Cell {
		for _, c := range cells {
			if c.ContextTokens == ctx && c.Concurrency == n {
				return c
			}
		}
		t.Fatalf("no cell %d × %d", ctx, n)
		return Cell{}
	}
	q := at(cells, 1024, 8)
	assert.Equal(t, StatusUnknown, q.Status, "measured")
	assert.True(t, q.Predicted.Queued)
	assert.Equal(t, OverCapacity, at(cells, 4096, 1).Status, "4096 + 128 + template > 4096")

	skipped := planCells(Spec{Contexts: spec.Contexts, Concurrency: spec.Concurrency, MaxTokens: 128, SkipQueued: true}, limits)
	s := at(skipped, 1024, 8)
	assert.Equal(t, RequestsQueued, s.Status)
	assert.Contains(t, s.Reason, "predicted, not measured")
	assert.Equal(t, StatusUnknown, at(skipped, 1024, 4).Status)

	rows := planPrefill(spec, limits)
	require.Len(t, rows, 2)
	assert.Equal(t, StatusUnknown, rows[0].Status)
	assert.Equal(t, OverCapacity, rows[1].Status)
	assert.Contains(t, rows[1].Reason, "max_model_len 4096")

	res := &Results{Spec: spec.WithDefaults(), Cells: cells, Prefill: rows, Server: capacity.Server{Limits: limits}}
	var out bytes.Buffer
	require.NoError(t, writePlan(&out, res, limits))
	text := out.String()
	assert.Regexp(t, `(?m)^1K\s+8\s+run: requests will queue\s+8 requests > 4 the server runs at once: 4 wait in its queue`, text)
	assert.Contains(t, text, "prefill at 8K: skip: over capacity")
	e := estimateRun(res)
	assert.Equal(t, 6, e.Cells, "the 4096 row is over capacity")
	assert.Equal(t, 1, e.Prefill)
	assert.Equal(t, []string{"kv_tokens"}, e.Unknown)
	assert.Equal(t, 6*35*time.Second, e.Least, "a cell's least: 2 s + 3 s of warm-up and a 30 s window")
	assert.Contains(t, text, "expected: 6 cells to measure, at least 4 min")
}

// TestEstimateOfAShortRun: a run of a few seconds is said in seconds, not
// rounded up to a minute at either end.
func TestEstimateOfAShortRun(t *testing.T) {
	e := runEstimate{Cells: 2, Least: 7 * time.Second, Most: 45 * time.Second}
	assert.Contains(t, e.describe(), "2 cells to measure, at least 7 s, at most 45 s if")
	e.Least, e.Most = 90*time.Second, 3*time.Hour
	assert.Contains(t, e.describe(), "at least 2 min, at most 3.0 h if")
	e.Least = 300 * time.Millisecond
	assert.Contains(t, e.describe(), "at least 1 s", "a run's least is never said as 0 s")
}
