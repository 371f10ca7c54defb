package loadgen_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// TestTranscripts replays every real capture in testdata/transcripts (see
// its README for each one's source) and checks what the client makes of it.
func TestTranscripts(t *testing.T) {
	type want struct {
		tokens, chunks, extra int
		source                metrics.TokenSource
		text, reasoning       string
		prompt, completion    int
		cached                int
		finish                string
		done                  bool
		kind                  metrics.ErrorKind
		// rtokens is the reasoning tokens; answerAt the index of the
		// first chunk of the answer, after them.
		rtokens, answerAt int
		// tool: the response called a tool.
		tool bool
	}
	const chunks, usage, final = metrics.SourceChunks, metrics.SourceUsageDeltas, metrics.SourceFinalUsage
	tests := map[string]want{
		// Anthropic Messages: 11 non-empty tool-input deltas, usage 70 at the end.
		"anthropic-messages-1.sse": {tokens: 70, chunks: 11, extra: 59, source: final, prompt: 1293, completion: 70, finish: "tool_use", done: true, tool: true},
		// The capture ends with a stray quote and no blank line: the finish
		// chunk is incomplete, so the stream never finished.
		"cerebras-chat-1.sse":      {tokens: 5, chunks: 5, source: chunks, text: "This is a test.", kind: metrics.KindTruncated},
		"cohere-compat-chat-1.sse": {tokens: 5, chunks: 5, source: chunks, text: "This is a test.", prompt: 7, completion: 5, finish: "stop", done: true},
		// Usage on every chunk, already 1 on the role-only chunk: that token
		// arrives with the first visible one.
		"hyperbolic-chat-1.sse": {tokens: 3, chunks: 2, source: usage, text: "2", prompt: 48, completion: 3, finish: "stop", done: true},
		// The capture's finish chunk is cut inside a string.
		"llamacpp-chat-1.sse": {tokens: 3, chunks: 3, source: chunks, kind: metrics.KindMalformed, tool: true},
		// Not a completion stream at all.
		"mcp-message-1.sse":  {kind: metrics.KindTruncated},
		"mistral-chat-1.sse": {tokens: 11, chunks: 11, source: chunks, text: "The answer to the equation one + one is two.", prompt: 19, completion: 11, finish: "stop", done: true},
		"ollama-chat-1.sse":  {tokens: 6, chunks: 6, source: chunks, text: "My name is Neo Vim.", finish: "stop"},
		"openai-chat-1.sse":  {tokens: 14, chunks: 14, source: chunks, text: `{"city":"San Francisco","temperature":61,"units":"f"}`, prompt: 79, completion: 14, finish: "stop", done: true},
		// n=3: every choice's tokens count; the text is choice 0's.
		"openai-chat-2.sse": {tokens: 42, chunks: 42, source: chunks, text: `{"city":"San Francisco","temperature":65,"units":"f"}`, prompt: 79, completion: 42, finish: "stop", done: true},
		"openai-chat-3.sse": {tokens: 1, chunks: 1, source: chunks, text: `{"`, prompt: 79, completion: 1, finish: "length", done: true},
		"openai-chat-4.sse": {tokens: 2, chunks: 2, source: chunks, text: "Foo!", prompt: 9, completion: 2, finish: "stop", done: true},
		// A tool call: 15 deltas of name and arguments, usage says 24.
		"openai-chat-5.sse": {tokens: 24, chunks: 15, extra: 9, source: final, prompt: 76, completion: 24, finish: "tool_calls", done: true, tool: true},
		// Hidden reasoning: one content chunk, 203 tokens billed, 192 of
		// them reasoning by the usage.
		"openai-chat-6.sse":    {tokens: 203, chunks: 1, extra: 202, source: final, text: "hello", prompt: 22, completion: 203, finish: "stop", done: true, rtokens: 192},
		"openai-chat-7.sse":    {tokens: 1, chunks: 1, source: chunks, text: "two", finish: "stop", done: true},
		"sambanova-chat-1.sse": {tokens: 1, chunks: 1, source: chunks, text: "2", finish: "stop", done: true},
		// A fragment with no [DONE]: the finish reason completes it.
		"sglang-chat-1.sse": {tokens: 1, chunks: 1, source: chunks, text: " on", prompt: 5, completion: 1, finish: "length"},
		"tgi-chat-1.sse":    {tokens: 15, chunks: 15, source: chunks, text: " The answer to the equation 1 + 1 is 2.</s>", finish: "eos_token"},
		"tgi-chat-2.sse":    {tokens: 14, chunks: 14, source: chunks, text: " The answer to the equation 1 + 1 is 2.", finish: "stop", done: true},
		// TGI's native stream: generated_text on the last event ends it.
		"tgi-generate_stream-1.sse": {tokens: 5, chunks: 5, source: chunks, text: "one two three four</s>", done: true},
		"tgi-generate_stream-2.sse": {tokens: 52, chunks: 52, source: chunks, done: true,
			text: " How does the fish find its ____? After the fish is ________ how does it get to the shore?\n1. How do objects become super saturated bubbles?\n2. What resist limiting the movement of gas?</s>"},
		"tgi-generate_stream-3.sse":       {tokens: 50, chunks: 50, source: chunks, text: " 1. 2. 3. 4. 5. 6. 7. 8. 9. 10. 11. 12. 13. 14. 15. 16. 17", done: true},
		"tgi-generate_stream-error-1.sse": {kind: metrics.KindStreamError},
		"tgi-generate_stream-error-2.sse": {kind: metrics.KindStreamError},
		// The final chunk's EOS token carries no text; the usage says 2.
		"together-chat-1.sse": {tokens: 2, chunks: 1, extra: 1, source: final, text: "2", prompt: 48, completion: 2, finish: "eos", done: true},
		// Usage on every chunk: 25 content chunks and the EOS token on an
		// empty final delta.
		"vllm-chat-1.sse": {tokens: 26, chunks: 26, source: usage, prompt: 46, completion: 26, finish: "stop", done: true,
			text: "Hello Sam. It's nice to meet you. Is there something I can help you with or would you like to chat?"},
		"vllm-chat-2.sse": {tokens: 5, chunks: 5, source: chunks, text: "The image depicts a serene", prompt: 6421, completion: 5, finish: "length", done: true},
		"vllm-chat-3.sse": {tokens: 4, chunks: 4, source: chunks, finish: "tool_calls", done: true, tool: true},

		// Synthetic: the cases no public capture shows (see the README).
		// vLLM's error object after two tokens, then [DONE].
		"synthetic-vllm-error-object.sse": {tokens: 2, chunks: 2, source: chunks, text: "Hello world", done: true, kind: metrics.KindStreamError},
		// Comments, id/event/retry fields and CRLF between tokens; the
		// final empty delta carries two more tokens of usage.
		"synthetic-crlf-comments-fields.sse": {tokens: 7, chunks: 6, source: usage, text: "One, two, three", prompt: 12, completion: 7, finish: "stop", done: true},
		"synthetic-multiline-data.sse":       {tokens: 2, chunks: 2, source: chunks, text: "multi-line", finish: "stop", done: true},
		"synthetic-vllm-completions.sse":     {tokens: 4, chunks: 4, source: usage, text: "The quick brown fox", prompt: 5, completion: 4, finish: "length", done: true},
		// Reasoning deltas count as tokens, and the first one is the first token.
		"synthetic-reasoning.sse": {tokens: 6, chunks: 5, extra: 1, source: final, text: "42", reasoning: "Let me think.", prompt: 9, completion: 6, cached: 8, finish: "stop", done: true,
			rtokens: 4, answerAt: 4},

		// The Responses API (OpenAI's reference; vLLM's events): reasoning
		// summary or reasoning text, then output text; usage, with its
		// reasoning_tokens, in response.completed.
		"synthetic-responses-openai.sse": {tokens: 90, chunks: 6, extra: 84, source: final, text: "1 + 1 = 2.", reasoning: "**Adding numbers**",
			prompt: 13, completion: 90, finish: "completed", done: true, rtokens: 64, answerAt: 2},
		"synthetic-responses-vllm.sse": {tokens: 8, chunks: 5, extra: 3, source: final, text: "2.", reasoning: "User asks 1+1.",
			prompt: 72, completion: 8, cached: 64, finish: "completed", done: true, rtokens: 5, answerAt: 3},
		// Cut at max_output_tokens: complete, its reason the finish.
		"synthetic-responses-incomplete.sse":    {tokens: 3, chunks: 3, source: chunks, text: "Once upon a", prompt: 11, completion: 3, finish: "max_output_tokens", done: true},
		"synthetic-responses-function-call.sse": {tokens: 7, chunks: 5, extra: 2, source: final, prompt: 58, completion: 7, finish: "completed", done: true, tool: true},
		"synthetic-responses-error.sse":         {tokens: 1, chunks: 1, source: chunks, text: "Hello", kind: metrics.KindStreamError},
		"synthetic-responses-failed.sse":        {kind: metrics.KindStreamError},
		// The Messages API: a thinking block, then text; its usage counts
		// thinking with the rest, so the split is by blocks.
		"synthetic-messages-thinking.sse": {tokens: 42, chunks: 5, extra: 37, source: final, text: "1 + 1 = 2.", reasoning: "I need to find the sum of 1 and 1. That is 2.",
			prompt: 25, completion: 42, finish: "end_turn", done: true, rtokens: 3, answerAt: 3},
		"synthetic-messages-error.sse": {tokens: 1, chunks: 1, source: chunks, text: "Hello", prompt: 12, kind: metrics.KindStreamError},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "transcripts", "*.sse"))
	require.NoError(t, err)
	seen := 0
	for _, f := range files {
		name := filepath.Base(f)
		w, ok := tests[name]
		if !ok {
			t.Errorf("%s has no expectations in the table", name)
			continue
		}
		seen++
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(f)
			require.NoError(t, err)
			srv := replay(t, body, 0)
			c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}
			resp, err := c.Do(t.Context(), &loadgen.Request{Model: "m", Prompt: "hi", MaxTokens: 16})
			tl := resp.Timeline
			assert.Equal(t, w.kind, tl.Kind, "error kind (err: %v)", err)
			assert.Equal(t, w.kind != metrics.KindNone, err != nil, "error returned: %v", err)
			assert.Equal(t, w.tokens, tl.OutputTokens(), "output tokens")
			assert.Equal(t, w.chunks, tl.Chunks, "chunks with tokens")
			assert.Equal(t, w.extra, tl.ExtraTokens, "extra tokens")
			assert.Equal(t, w.source, tl.Source, "token source")
			assert.Equal(t, w.text, resp.Text, "text")
			assert.Equal(t, w.reasoning, resp.Reasoning, "reasoning")
			assert.Equal(t, w.cached, tl.CachedTokens, "cached prompt tokens")
			assert.Equal(t, w.prompt, tl.PromptTokens, "prompt tokens")
			assert.Equal(t, w.completion, tl.CompletionTokens, "completion tokens")
			assert.Equal(t, w.finish, tl.FinishReason, "finish reason")
			assert.Equal(t, w.done, tl.Done, "[DONE]")
			assert.Len(t, resp.ChunkTimes, tl.Chunks)
			assert.Equal(t, w.rtokens, tl.ReasoningTokens, "reasoning tokens")
			assert.Equal(t, w.tool, tl.ToolCall, "called a tool")
			if tl.Chunks > w.answerAt && w.kind == metrics.KindNone {
				assert.Equal(t, resp.ChunkTimes[w.answerAt], tl.FirstAnswer, "the first answer token")
			}
			if tl.Chunks > 0 {
				assert.False(t, tl.First.Before(tl.Sent), "first token after the request was written")
				assert.Equal(t, resp.ChunkTimes[0], tl.First)
			}
			var le *loadgen.Error
			if w.kind != metrics.KindNone {
				require.True(t, errors.As(err, &le))
				assert.Equal(t, tl.Chunks, le.Chunks)
			}
		})
	}
	assert.Equal(t, len(tests), seen, "every transcript in the table was found")
}

func TestStreamErrorObject(t *testing.T) {
	srv := replay(t, transcript(t, "tgi-generate_stream-error-1.sse"), 0)
	c := &loadgen.Client{BaseURL: srv.URL, HTTPClient: srv.Client()}
	_, err := c.Do(t.Context(), &loadgen.Request{Prompt: "x"})
	var se *loadgen.StreamError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "validation", se.Type)
	assert.Contains(t, se.Message, "Input validation error")
	_ = time.Second
}
