package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/loadgen/loadgentest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStreamJSON(t *testing.T) {
	for _, tr := range []string{"stream", "http"} {
		t.Run(tr, func(t *testing.T) { testStreamJSON(t, tr) })
	}
}

func testStreamJSON(t *testing.T, transport string) {
	p := loadgentest.FastProfile()
	srv := loadgentest.NewServer(p)
	defer srv.Close()

	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"-url", srv.URL + "/v1", "-model", "bench", "-max-tokens", "12", "-prompt", "one two three", "-json", "-transport", transport}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	var r result
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	assert.Equal(t, 12, r.OutputTokens)
	assert.Equal(t, 12, r.CompletionTokens)
	assert.Equal(t, 3+loadgentest.ChatMessageTokens+loadgentest.ChatReplyTokens, r.PromptTokens)
	assert.Equal(t, "length", r.FinishReason)
	assert.Equal(t, "usage_deltas", r.TokenSource)
	assert.Empty(t, r.ErrorKind)
	assert.Len(t, r.ChunkTimesMs, r.ContentChunks)
	assert.Positive(t, r.TTFTms)
	assert.Equal(t, r.TTFTms, r.ChunkTimesMs[0])
	assert.Equal(t, 12, loadgentest.CountTokens(r.Text))
}

func TestStreamFailureExitsOne(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"-url", srv.URL + "/v1", "-model", "bench+fault=reset-after=3", "-max-tokens", "12", "-json"}, &out, &errOut)
	assert.Equal(t, 1, code)
	var r result
	require.NoError(t, json.Unmarshal(out.Bytes(), &r), "the JSON is printed on failure too")
	assert.Equal(t, "truncated", r.ErrorKind)
	assert.Equal(t, 3, r.OutputTokens)
	assert.NotEmpty(t, r.Error)

	out.Reset()
	code = run(t.Context(), []string{"-url", srv.URL + "/v1", "-model", "bench", "-max-tokens", "4"}, &out, &errOut)
	assert.Equal(t, 0, code)
	assert.Contains(t, out.String(), "first token (TTFT)")
	assert.Contains(t, out.String(), "output tokens 4")
}

func TestStreamRefusesAnUnknownTransport(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run(t.Context(), []string{"-transport", "h3"}, &out, &errOut))
	assert.Contains(t, errOut.String(), `unknown -transport "h3"`)
}
