package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen/sweep"
)

// TestWeightedModels: -model a=3,b=1 over 2,000 requests against the
// simulator (which serves both names): each model's share is within 2% of
// its weight (smooth weighted round robin makes it exact), every request
// is in one model's figures, and the table and the JSON hold each
// model's beside the total.
func TestWeightedModels(t *testing.T) {
	args := append(quick, "-model", "a=3,b=1", "-requests", "2000", "-concurrency", "16", "-warmup", "0s", "-output-len", "4")
	code, out, errOut := bench(t, append(args, "-format", "json")...)
	require.Equal(t, 0, code, errOut)
	var res sweep.Results
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Runs, 1)
	run := res.Runs[0]
	require.Equal(t, 2000, run.Summary.Completed, errOut)
	require.Len(t, run.Models, 2)
	a, b := run.Models["a"], run.Models["b"]
	assert.InDelta(t, 0.75, float64(a.Summary.Completed)/2000, 0.02)
	assert.InDelta(t, 0.25, float64(b.Summary.Completed)/2000, 0.02)
	assert.Equal(t, run.Summary.Completed, a.Summary.Completed+b.Summary.Completed)
	assert.Equal(t, run.Summary.OutputTokens, a.Summary.OutputTokens+b.Summary.OutputTokens)
	assert.Equal(t, run.Summary.TTFT.Count, a.Summary.TTFT.Count+b.Summary.TTFT.Count)

	code, out, errOut = bench(t, args...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Model a: 1500 of 2000 requests (75.0%)")
	assert.Contains(t, out, "Model b: 500 of 2000 requests (25.0%)")
}

// TestWeightedModelsRefused: a malformed -model list stops the command
// before anything is sent.
func TestWeightedModelsRefused(t *testing.T) {
	for _, m := range []string{"a=0,b=1", "a=x", "a,a", "=3", "a=3,b=1001"} {
		code, _, errOut := bench(t, append(quick, "-model", m, "-requests", "4")...)
		assert.Equal(t, 2, code, m)
		assert.Contains(t, errOut, "-model", m)
	}
}

// TestSLOOnTTFO: -slo-ttfo judges the first answer token after the
// simulator's reasoning: an objective below the reasoning's time is met by
// no request, a generous one by every request.
func TestSLOOnTTFO(t *testing.T) {
	for _, tc := range []struct {
		slo  string
		good float64
	}{{"1us", 0}, {"1m", 1}} {
		args := append(quick, "-sim-reasoning", "8", "-requests", "20", "-concurrency", "2", "-warmup", "0s", "-slo-ttfo", tc.slo, "-format", "json")
		code, out, errOut := bench(t, args...)
		require.Equal(t, 0, code, errOut)
		var res sweep.Results
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		require.Len(t, res.Runs, 1)
		assert.Positive(t, res.Runs[0].Summary.ReasoningTokens)
		assert.Equal(t, tc.good, res.Runs[0].GoodShare, "-slo-ttfo %s", tc.slo)
	}
}
