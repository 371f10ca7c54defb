package workload_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/workload"
)

// A session's prompt grows turn by turn by the last turn's text and
// reply, as the server counts it, and its history is in the server's
// prefix cache.
func TestSessionsGrow(t *testing.T) {
	_, c := simulator(t)
	s := &workload.Sessions{
		Turns: workload.Fixed(3), Input: workload.Uniform(20, 60), Output: workload.Fixed(24),
		Think: 2 * time.Second, Sizing: workload.SimulatorSizing(true), Seed: 5,
		Builder: workload.Builder{Model: loadgentest.DefaultModel, IgnoreEOS: true},
	}
	require.NoError(t, s.Validate())
	var prev int
	for turn := range 4 {
		pause := s.Pause(0, turn)
		req := s.Source(0, turn)
		resp, err := c.Do(t.Context(), req)
		require.NoError(t, err)
		switch turn {
		case 0, 3:
			assert.Zero(t, pause, "turn %d begins a session", turn)
			assert.Zero(t, resp.CachedTokens, "a new session shares nothing")
			assert.Len(t, req.Messages, 0, "one user message, sent as the prompt")
		default:
			assert.Equal(t, 2*time.Second, pause, "think time before turn %d", turn)
			assert.Len(t, req.Messages, 2*turn+1)
			assert.Greater(t, resp.PromptTokens, prev+24, "the history holds the reply")
			assert.GreaterOrEqual(t, resp.CachedTokens, (prev/blockSize-1)*blockSize, "the history is cached")
		}
		assert.Equal(t, 24, resp.OutputTokens())
		prev = resp.PromptTokens
	}
	assert.Equal(t, 2, s.Started())
	assert.Len(t, s.Source(1, 0).Messages, 0, "another worker, another session")
	assert.Equal(t, 3, s.Started())
}

// TestSessionsCappedByTheContext: a session of many long turns against a
// server of a small context starts again before its history would pass
// that context, so no turn is refused for its length and a history never
// grows beyond it; the restarts are counted.
func TestSessionsCappedByTheContext(t *testing.T) {
	_, c := simulator(t)
	const context = 1024
	s := &workload.Sessions{
		Turns: workload.Fixed(100), Input: workload.Fixed(100), Output: workload.Fixed(50),
		Sizing: workload.SimulatorSizing(true), Seed: 7, MaxContext: context,
		Builder: workload.Builder{Model: loadgentest.DefaultModel, IgnoreEOS: true},
	}
	require.NoError(t, s.Validate())
	for turn := range 30 {
		req := s.Source(0, turn)
		resp, err := c.Do(t.Context(), req)
		require.NoError(t, err, "turn %d", turn)
		assert.LessOrEqual(t, resp.PromptTokens+resp.OutputTokens(), context, "turn %d", turn)
	}
	assert.Positive(t, s.Restarted(), "sessions restarted at the context")
	assert.Equal(t, 1+s.Restarted(), s.Started(), "every new session but the first is a restart")

	s.Turns = workload.Fixed(1_000_000)
	assert.ErrorContains(t, s.Validate(), "Turns averages 1000000, more than 10000")
}
