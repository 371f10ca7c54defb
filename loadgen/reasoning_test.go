package loadgen_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
)

// reasoningProfile is a server that thinks for 200 tokens and answers in
// 100, one token every 10 ms.
func reasoningProfile(field string) loadgentest.Profile {
	p := loadgentest.FastProfile()
	p.TruthBytes = 0
	p.ReasoningTokens = 200
	p.ReasoningField = field
	return p
}

// TestReasoningApart: 200 reasoning tokens then 100 answer tokens, 10 ms
// apart. TTFT is the first reasoning token's, as the server's record has
// it; TTFO is the first answer token's, 200 steps later, within 1 ms of
// the server's own record; the counts are exact.
func TestReasoningApart(t *testing.T) {
	if testing.Short() {
		t.Skip("3 s of generation a case")
	}
	for _, tc := range []struct {
		api   loadgen.API
		field string
		usage loadgen.Usage
	}{
		{loadgen.Chat, "reasoning", loadgen.UsageContinuous},    // vLLM
		{loadgen.Chat, "reasoning_content", loadgen.UsageFinal}, // SGLang
		{loadgen.Responses, "", 0},                              // reasoning_text events; usage at the end
		{loadgen.Messages, "", 0},                               // thinking blocks; no reasoning in usage
	} {
		t.Run(fmt.Sprintf("%v/%s/%d", tc.api, tc.field, tc.usage), func(t *testing.T) {
			t.Parallel()
			srv := loadgentest.NewServer(reasoningProfile(tc.field))
			defer srv.Close()
			c := &loadgen.Client{BaseURL: srv.URL + "/v1"}
			// The server's record is stamped by a goroutine that a loaded
			// machine may keep waiting after its flush, and its engine may
			// start steps late: a measurement off by more than the bounds
			// is taken again, up to three times.
			for attempt := 1; ; attempt++ {
				resp, err := c.Do(t.Context(), &loadgen.Request{API: tc.api, Prompt: "think first", MaxTokens: 300, IgnoreEOS: true, Usage: tc.usage})
				require.NoError(t, err)
				tl := &resp.Timeline
				require.Equal(t, 300, tl.OutputTokens())
				require.Equal(t, 200, tl.ReasoningTokens, "reasoning tokens")
				require.Equal(t, 100, tl.AnswerTokens(), "answer tokens")
				require.Equal(t, 200, strings.Count(resp.Reasoning, " "))
				require.Equal(t, 100, strings.Count(resp.Text, " "))
				truth, ok := srv.Truth().Request(resp.ID)
				require.True(t, ok)
				// The server's flush and the client's receipt differ by the
				// same loopback delay for the first token and the first
				// answer token.
				want := truthTokenTime(t, truth, 201).Sub(truthTokenTime(t, truth, 1))
				got := tl.TTFO() - tl.TTFT()
				steps := want - 200*10*time.Millisecond // the engine's lateness, if starved
				if d := got - want; (d.Abs() <= time.Millisecond && steps.Abs() <= 100*time.Millisecond) || attempt == 3 {
					assert.InDelta(t, float64(200*10*time.Millisecond), float64(want), float64(100*time.Millisecond),
						"the server's 200 reasoning steps of 10 ms")
					assert.InDelta(t, float64(want), float64(got), float64(time.Millisecond),
						"TTFO − TTFT: %v, the server's first answer token came %v after its first token", got, want)
					return
				}
			}
		})
	}
}

// truthTokenTime is when the server flushed the chunk that carried output
// token n (from 1).
func truthTokenTime(t *testing.T, rt loadgentest.RequestTruth, n int) time.Time {
	t.Helper()
	seen := 0
	for _, c := range rt.Chunks {
		seen += c.Tokens
		if seen >= n {
			return c.Time
		}
	}
	t.Fatalf("the server's record holds %d tokens, not %d", seen, n)
	return time.Time{}
}

// TestReasoningByDeltas: without usage, each reasoning delta is a
// reasoning token and each content delta an answer token, and the first
// content delta is the first answer token.
func TestReasoningByDeltas(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 30 {
			if i < 20 {
				fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\" r%d\"}}]}\n\n", i)
			} else {
				fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" a%d\"}}]}\n\n", i)
			}
			w.(http.Flusher).Flush()
			time.Sleep(2 * time.Millisecond)
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	c := &loadgen.Client{BaseURL: srv.URL}
	resp, err := c.Do(t.Context(), &loadgen.Request{Prompt: "hi", Usage: loadgen.UsageNone})
	require.NoError(t, err)
	assert.Equal(t, 20, resp.ReasoningTokens)
	assert.Equal(t, 10, resp.AnswerTokens())
	assert.Equal(t, resp.ChunkTimes[20], resp.FirstAnswer)
	assert.Equal(t, resp.ChunkTimes[0], resp.First)
}

// TestThinkInline: a server that does not split reasoning sends it in the
// content between <think> and </think>; the tokens inside are reasoning,
// and the first answer token is the first after the closing tag.
func TestThinkInline(t *testing.T) {
	deltas := []string{"<think>", "Let", " me", " see", ".", "</think>", "\n\n", "The", " answer", "."}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i, d := range deltas {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", d)
			w.(http.Flusher).Flush()
			if i == 5 {
				time.Sleep(50 * time.Millisecond) // the answer comes later
			}
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	c := &loadgen.Client{BaseURL: srv.URL}
	resp, err := c.Do(t.Context(), &loadgen.Request{Prompt: "hi"})
	require.NoError(t, err)
	assert.Equal(t, 10, resp.OutputTokens())
	assert.Equal(t, 6, resp.ReasoningTokens, "<think> … </think>")
	assert.Equal(t, 4, resp.AnswerTokens())
	assert.Equal(t, resp.ChunkTimes[6], resp.FirstAnswer, "the first delta after </think>")
	assert.Greater(t, resp.TTFO()-resp.TTFT(), 25*time.Millisecond, "the answer came 50 ms after the reasoning")
}
