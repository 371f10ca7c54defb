package main

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// realServer returns the URL and model of a real server to test against,
// from LLMLOAD_REAL_URL (an API base URL such as http://127.0.0.1:11434/v1)
// and LLMLOAD_REAL_MODEL, or skips the test.
func realServer(t *testing.T) (url, model string) {
	t.Helper()
	url = os.Getenv("LLMLOAD_REAL_URL")
	if url == "" {
		t.Skip("set LLMLOAD_REAL_URL (and LLMLOAD_REAL_MODEL) to run against a real server")
	}
	return url, os.Getenv("LLMLOAD_REAL_MODEL")
}

// TestRealServerAPIsAgree streams the same request through the chat and
// the completions API of a real server, alternately: every token is
// counted, each in its own chunk (a server that sends an all-zero usage
// on every completions chunk, as Ollama does, is not read as counting
// tokens), and the two APIs' times between tokens agree.
func TestRealServerAPIsAgree(t *testing.T) {
	url, model := realServer(t)
	const maxTokens, rounds = 128, 9
	tbt := map[string][]float64{}
	for range rounds {
		for _, api := range []string{"chat", "completions"} {
			var out, errOut bytes.Buffer
			code := run(t.Context(), []string{"-url", url, "-model", model, "-api", api, "-max-tokens", "128", "-ignore-eos", "-json",
				"-prompt", "Write a long story about a lighthouse keeper who finds a message in a bottle."}, &out, &errOut)
			require.Equal(t, 0, code, errOut.String())
			var r result
			require.NoError(t, json.Unmarshal(out.Bytes(), &r))
			require.Equal(t, maxTokens, r.OutputTokens, "%s: every token counted", api)
			assert.Equal(t, maxTokens, r.ContentChunks, "%s: a chunk a token", api)
			assert.Equal(t, maxTokens, r.CompletionTokens, "%s: the server's final usage", api)
			assert.NotEqual(t, "usage_deltas", r.TokenSource, "%s: a usage that never grows counts nothing", api)
			require.Len(t, r.ChunkTimesMs, maxTokens)
			tbt[api] = append(tbt[api], (r.ChunkTimesMs[maxTokens-1]-r.ChunkTimesMs[0])/(maxTokens-1))
		}
	}
	median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	chat, completions := median(tbt["chat"]), median(tbt["completions"])
	t.Logf("median time between tokens: chat %.2f ms, completions %.2f ms", chat, completions)
	assert.InEpsilon(t, chat, completions, 0.3, "the two APIs decode at the same speed")
}
