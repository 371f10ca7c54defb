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
		Turns: workload.Fixed(3), Input: workload.Uniform{Min: 20, Max: 60}, Output: workload.Fixed(24),
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
