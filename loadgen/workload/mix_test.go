package workload_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/workload"
)

// firstPrompt is the first request a run of m sends.
func firstPrompt(t *testing.T, m *workload.Mix) *loadgen.Request {
	t.Helper()
	var g loadgen.Generator
	require.NoError(t, m.Setup(&g, loadgen.Closed{}))
	require.NotNil(t, g.Source)
	req := g.Source(0, 0)
	require.NotNil(t, req)
	return req
}

// TestMixRunsOwnText: each run of a Mix sends text of its own, so no run
// finds another's in the prefix cache, and a seed makes the runs again.
func TestMixRunsOwnText(t *testing.T) {
	mix := func() *workload.Mix {
		return &workload.Mix{Input: workload.Fixed(200), Output: workload.Fixed(8), Prefix: workload.SharedPrefix{Groups: 2, Tokens: 50},
			Sizing: workload.SimulatorSizing(true), Seed: 7, Builder: workload.Builder{Model: "m"}}
	}
	a := mix()
	defer a.Close()
	require.NoError(t, a.Validate())
	first, second := firstPrompt(t, a), firstPrompt(t, a)
	assert.NotEqual(t, first.Messages, second.Messages, "the second run's text is its own")
	assert.Equal(t, 8, first.MaxTokens)

	b := mix()
	defer b.Close()
	assert.Equal(t, first.Messages, firstPrompt(t, b).Messages, "the same seed, the same first run")
	assert.Equal(t, "synthetic prompts, 200 tokens in, 8 out, 2 shared prefixes of 50 tokens", a.String())

	bad := &workload.Mix{Input: workload.Fixed(-1)}
	require.Error(t, bad.Validate(), "refused before anything is sent")
	require.Error(t, bad.Setup(&loadgen.Generator{}, loadgen.Closed{}))
}

// TestMixPrecedence: a trace goes before a dataset, a dataset before
// sessions, sessions before synthetic prompts; a trace's run lasts as
// long as the trace and sessions pause between turns.
func TestMixPrecedence(t *testing.T) {
	tr, err := workload.OpenTrace("testdata/mooncake.jsonl")
	require.NoError(t, err)
	ds, err := workload.OpenDataset("testdata/prompts.jsonl")
	require.NoError(t, err)
	sizing := workload.SimulatorSizing(true)

	trace := &workload.Mix{Trace: tr, Replay: workload.Replay{TimeScale: 0.5}, Dataset: ds, Turns: workload.Fixed(3), Input: workload.Fixed(100), Sizing: sizing}
	defer trace.Close()
	g := &loadgen.Generator{Duration: time.Minute, Warmup: time.Second, Requests: 9}
	require.NoError(t, trace.Setup(g, loadgen.Schedule{MaxInFlight: 5}))
	sched, ok := g.Load.(loadgen.Schedule)
	require.True(t, ok, "the trace's times: %v", g.Load)
	assert.NotNil(t, sched.Due)
	assert.Equal(t, 5, sched.MaxInFlight, "the cap given")
	assert.Zero(t, g.Duration)
	assert.Zero(t, g.Warmup)
	assert.Zero(t, g.Requests)
	assert.Contains(t, trace.String(), "trace mooncake.jsonl (mooncake, ")
	assert.Contains(t, trace.String(), "at 0.5× its times")

	dataset := &workload.Mix{Dataset: ds, Turns: workload.Fixed(3), Input: workload.Fixed(100), Sizing: sizing, Output: workload.Fixed(5)}
	defer dataset.Close()
	req := firstPrompt(t, dataset)
	assert.Equal(t, "What is the capital of India?", req.Prompt, "the first record")
	assert.Equal(t, 5, req.MaxTokens, "Output replaces the records' own")
	assert.Equal(t, "dataset prompts.jsonl (3 records), output 5 tokens", dataset.String())
	dataset.Output = nil
	assert.Equal(t, 10, firstPrompt(t, dataset).MaxTokens, "the record's own")

	sessions := &workload.Mix{Turns: workload.Fixed(3), Input: workload.Fixed(100), Output: workload.Fixed(4), Think: time.Second, Sizing: sizing}
	defer sessions.Close()
	g = &loadgen.Generator{}
	require.NoError(t, sessions.Setup(g, loadgen.Closed{Streams: 3}))
	closed, ok := g.Load.(loadgen.Closed)
	require.True(t, ok, "%v", g.Load)
	assert.NotNil(t, closed.Pause, "think time between turns")
	assert.Equal(t, 3, closed.Streams)
	assert.ErrorContains(t, sessions.Setup(g, loadgen.Open{Rate: 1}), "sessions run in a closed loop")
	assert.Equal(t, "sessions of 3 turns, 100 tokens in and 4 out a turn, 1s think time", sessions.String())
}

// TestMixFileError: a dataset that cannot be read again during a run ends
// the run, and Err says why.
func TestMixFileError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prompts.jsonl")
	data, err := os.ReadFile("testdata/prompts.jsonl")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	ds, err := workload.OpenDataset(path)
	require.NoError(t, err)
	require.NoError(t, os.Remove(path))

	mix := &workload.Mix{Dataset: ds}
	defer mix.Close()
	var g loadgen.Generator
	require.NoError(t, mix.Setup(&g, loadgen.Closed{}))
	assert.Nil(t, g.Source(0, 0), "no request: the run ends")
	require.Error(t, mix.Err())
	assert.ErrorIs(t, mix.Err(), os.ErrNotExist)
}

// TestMixRuns: two runs of a Mix against the simulator each complete their
// requests, each run's prompts the size they say.
func TestMixRuns(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}
	mix := &workload.Mix{Input: workload.Uniform(100, 300), Output: workload.Fixed(4), Sizing: workload.SimulatorSizing(true), Seed: 3,
		Builder: workload.Builder{Model: loadgentest.DefaultModel, IgnoreEOS: true}}
	defer mix.Close()
	for range 2 {
		g := &loadgen.Generator{Client: c, Requests: 6}
		require.NoError(t, mix.Setup(g, loadgen.Closed{Streams: 2}))
		run, err := g.Run(t.Context())
		require.NoError(t, err)
		assert.Equal(t, 6, run.Summary.Completed)
		assert.Equal(t, 24, run.Summary.OutputTokens)
	}
	assert.NoError(t, mix.Err())
}
