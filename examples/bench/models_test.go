package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/loadgen/sweep"
)

// TestWeightedModels: -model a=3,b=1 over 400 requests against the
// simulator (which serves both names): each model's share is within 2% of
// its weight (smooth weighted round robin makes it exact), every request
// is in one model's figures, and the table and the JSON hold each
// model's beside the total.
func TestWeightedModels(t *testing.T) {
	longtest.Skip(t)
	args := append(quick, "-model", "a=3,b=1", "-requests", "400", "-concurrency", "16", "-warmup", "0s", "-output-len", "4")
	code, out, errOut := bench(t, append(args, "-format", "json")...)
	require.Equal(t, 0, code, errOut)
	var res sweep.Results
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Runs, 1)
	run := res.Runs[0]
	require.Equal(t, 400, run.Summary.Completed, errOut)
	require.Len(t, run.Models, 2)
	a, b := run.Models["a"], run.Models["b"]
	assert.InDelta(t, 0.75, float64(a.Summary.Completed)/400, 0.02)
	assert.InDelta(t, 0.25, float64(b.Summary.Completed)/400, 0.02)
	assert.Equal(t, run.Summary.Completed, a.Summary.Completed+b.Summary.Completed)
	assert.Equal(t, run.Summary.OutputTokens, a.Summary.OutputTokens+b.Summary.OutputTokens)
	assert.Equal(t, run.Summary.TTFT.Count, a.Summary.TTFT.Count+b.Summary.TTFT.Count)

	path := filepath.Join(t.TempDir(), "requests.jsonl")
	code, out, errOut = bench(t, append(args, "-requests-out", path)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Model a: 300 of 400 requests (75.0%)")
	assert.Contains(t, out, "Model b: 100 of 400 requests (25.0%)")
	perModel := map[string]int{}
	for _, l := range readRequests(t, path) {
		perModel[l.Model]++
	}
	assert.Equal(t, map[string]int{"a": 300, "b": 100}, perModel, "each request's model in -requests-out")
}

// TestWeightedModelsRefused: a malformed -model list stops the command
// before anything is sent.
func TestWeightedModelsRefused(t *testing.T) {
	for _, m := range []string{"a=0,b=1", "a=-1", "a,a", "=3", "a=3,b=1001"} {
		code, _, errOut := bench(t, append(quick, "-model", m, "-requests", "4")...)
		assert.Equal(t, 2, code, m)
		assert.Contains(t, errOut, "-model", m)
	}
}

// TestModelNameWithEquals: a model name holding '=' is the server's, not
// a bad weight: -model a=b runs, and in a weighted list org/m=v2=3 is
// model org/m=v2 with weight 3.
func TestModelNameWithEquals(t *testing.T) {
	code, _, errOut := bench(t, append(quick, "-model", "a=b", "-requests", "4", "-warmup", "0s", "-output-len", "4")...)
	require.Equal(t, 0, code, errOut)

	path := filepath.Join(t.TempDir(), "requests.jsonl")
	args := append(quick, "-model", "org/m=v2=3,b", "-requests", "40", "-warmup", "0s", "-output-len", "4", "-requests-out", path)
	code, _, errOut = bench(t, args...)
	require.Equal(t, 0, code, errOut)
	perModel := map[string]int{}
	for _, l := range readRequests(t, path) {
		perModel[l.Model]++
	}
	assert.Equal(t, map[string]int{"org/m=v2": 30, "b": 10}, perModel)
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

// TestWeightedModelsSweep: a sweep sends -model a=3,b=1 in every run, and
// its table and its HTML page give each run's models a row of their own.
func TestWeightedModelsSweep(t *testing.T) {
	longtest.Skip(t)
	args := append(quick, "-model", "a=3,b=1", "-profile", "sweep", "-rates", "1", "-throughput", "4", "-requests", "40", "-warmup", "0s", "-output-len", "4")
	code, out, errOut := bench(t, append(args, "-format", "json")...)
	require.Equal(t, 0, code, errOut)
	var res sweep.Results
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Runs, 3)
	for _, run := range res.Runs {
		require.Len(t, run.Models, 2, run.Label)
		assert.Equal(t, run.Summary.Completed, run.Models["a"].Summary.Completed+run.Models["b"].Summary.Completed, run.Label)
		assert.InDelta(t, 30, run.Models["a"].Summary.Completed, 1, run.Label)
	}
	code, out, errOut = bench(t, append(args, "-format", "html")...)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 3, strings.Count(out, "· model a (75.0%)"), "a row of model a under each run")
	assert.Equal(t, 3, strings.Count(out, "· model b (25.0%)"))
}

// TestImageTokens: with -image, bench asks the server what the images
// cost before its runs, and its JSON and its table report it: the
// simulator's 16×16 tokens of a 448×448 picture, on top of each prompt's
// 100 tokens of text.
func TestImageTokens(t *testing.T) {
	args := append(quick, "-image", "448x448", "-input-len", "100", "-output-len", "4", "-requests", "8", "-concurrency", "2", "-warmup", "0s")
	code, out, errOut := bench(t, append(args, "-format", "json")...)
	require.Equal(t, 0, code, errOut)
	var res sweep.Results
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, 256, res.ImageTokens)
	require.Len(t, res.Runs, 1)
	s := res.Runs[0].Summary
	assert.Equal(t, 356*s.Completed, s.InputTokens, "each prompt's text and its image")
	code, out, errOut = bench(t, args...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "(the images: 256 prompt tokens a request, as the server counts them)")
}

// TestDatasetImages: a ShareGPT4V dataset's images go with its prompts:
// the simulator counts each request's text and its images' vision tokens
// (four for each of the small pictures: 12 for the two records with
// images), against the same texts without images; the record whose image
// is missing is skipped and reported, and an API that sends text alone is
// refused.
func TestDatasetImages(t *testing.T) {
	inputTokens := func(path string) (sweep.Results, int) {
		t.Helper()
		code, out, errOut := bench(t, append(quick, "-dataset", path, "-requests", "9", "-concurrency", "1", "-warmup", "0s", "-output-len", "2", "-format", "json")...)
		require.Equal(t, 0, code, errOut)
		var res sweep.Results
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		require.Len(t, res.Runs, 1)
		require.Equal(t, 9, res.Runs[0].Summary.Completed)
		return res, res.Runs[0].Summary.InputTokens
	}
	res, with := inputTokens("../../loadgen/workload/testdata/sharegpt4v.json")
	assert.Contains(t, res.Workload, "3 records, 2 with images, 1 whose image file is missing skipped")
	textOnly := filepath.Join(t.TempDir(), "text.jsonl")
	var lines []string
	for _, q := range []string{"What colour is this square?", "Compare and .", "No picture here."} {
		lines = append(lines, `{"conversations": [{"from": "human", "value": "`+q+`"}, {"from": "gpt", "value": "x"}]}`)
	}
	require.NoError(t, os.WriteFile(textOnly, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	_, without := inputTokens(textOnly)
	assert.Equal(t, 3*12, with-without, "three passes over the file, 4 vision tokens an image")

	code, _, errOut := bench(t, append(quick, "-dataset", "../../loadgen/workload/testdata/sharegpt4v.json", "-api", "completions", "-requests", "2")...)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "2 records with images, and the completions API sends text alone")
}

// TestToolCallsCounted: with -tools, every request the simulator answers
// is a tool call, in chat, responses and messages alike, and bench counts
// each one: "Requests that called a tool" in the table, tool_calls in the
// JSON, equal to the completed requests.
func TestToolCallsCounted(t *testing.T) {
	for _, api := range []string{"chat", "responses", "messages"} {
		args := append(quick, "-api", api, "-tools", "testdata/tools.json", "-requests", "12", "-concurrency", "3", "-warmup", "0s", "-output-len", "6")
		code, out, errOut := bench(t, append(args, "-format", "json")...)
		require.Equal(t, 0, code, errOut)
		var res sweep.Results
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		s := res.Runs[0].Summary
		assert.Equal(t, 12, s.Completed, api)
		assert.Equal(t, s.Completed, s.ToolCalls, api)
		assert.Equal(t, 6*s.Completed, s.OutputTokens, api)
		code, out, errOut = bench(t, args...)
		require.Equal(t, 0, code, errOut)
		assert.Regexp(t, `Requests that called a tool:\s+12`, out, api)
	}
}
