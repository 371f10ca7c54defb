package main

import (
	"bytes"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
)

// TestRealServerCapacity: capacity -url on a real server (LLMLOAD_REAL_URL)
// names its engine and its context length, and where it read them.
func TestRealServerCapacity(t *testing.T) {
	url := os.Getenv("LLMLOAD_REAL_URL")
	if url == "" {
		t.Skip("set LLMLOAD_REAL_URL to run against a real server")
	}
	r := runJSON(t, "-url", url, "-contexts", "0", "-concurrency", "1", "-max-tokens", "128")
	assert.NotEqual(t, capacity.EngineUnknown, r.Engine, "the engine is named")
	assert.NotEmpty(t, r.Version)
	assert.Positive(t, r.MaxModelLen, "its context length")
	assert.NotEmpty(t, r.Source)

	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"-url", url, "-contexts", "0", "-concurrency", "1"}, &out, &out))
	text := out.String()
	t.Log(text)
	assert.Contains(t, text, "Server     "+string(r.Engine)+" "+r.Version)
	assert.Contains(t, text, "Found      max_model_len "+comma(r.MaxModelLen)+" (from "+r.Source)
}

// comma formats n with thousands separators, as the command prints counts.
func comma(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
