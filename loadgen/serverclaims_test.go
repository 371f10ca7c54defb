package loadgen_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// The tests in this file hold the client to what it may believe of a
// server's claims: its request id, its timings, its usage and its tags.
// Each server writes the exact bytes on loopback.

// claimServer starts a server that answers every request with the SSE body
// given, after setting the headers given, and a client of it on the
// transport tr.
func claimServer(t *testing.T, tr func(conns int) http.RoundTripper, header http.Header, body string) *loadgen.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		for k, vs := range header {
			w.Header()[k] = vs
		}
		sseHeaders(w)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: tr(2)},
		HeaderTimeout: 10 * time.Second, FirstTokenTimeout: 10 * time.Second, StallTimeout: 10 * time.Second}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// TestRequestIDIsCapped: an X-Request-Id of 200 KB (or one just over the
// cap, with a character that straddles it) is kept as its first 256
// bytes, cut at a character's start, and "…"; one within the cap is kept
// as it came.
func TestRequestIDIsCapped(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		for _, id := range []string{
			"req-" + strings.Repeat("x", 200<<10),
			strings.Repeat("a", 255) + "é" + strings.Repeat("b", 10),
			strings.Repeat("c", 256),
		} {
			c := claimServer(t, tr, http.Header{"X-Request-Id": {id}}, tokenChunk("a")+finishChunk)
			resp, err := c.Do(t.Context(), req())
			require.NoError(t, err)
			assert.LessOrEqual(t, len(resp.ID), 256+len("…"), "the id kept")
			assert.Equal(t, resp.ID, resp.Timeline.ID)
			assert.True(t, utf8.ValidString(resp.ID), "cut at a character's start")
			if len(id) <= 256 {
				assert.Equal(t, id, resp.ID)
				continue
			}
			assert.True(t, strings.HasSuffix(resp.ID, "…"), "marked as cut")
			assert.True(t, strings.HasPrefix(id, strings.TrimSuffix(resp.ID, "…")), "its start")
		}
	})
}

// contentChunks writes one chat chunk a delta, then a finish and [DONE].
func contentChunks(deltas ...string) string {
	var b strings.Builder
	for _, d := range deltas {
		b.WriteString(tokenChunk(d))
	}
	return b.String() + finishChunk
}

// TestThinkTagsSplitAnywhere: <think> and </think> split at every place
// over two deltas, and sent a character a delta, still part the reasoning
// from the answer: the delta that closes the tag with no answer after it
// is reasoning, the one that brings answer text is the first answer.
func TestThinkTagsSplitAnywhere(t *testing.T) {
	tr := transports[0].new
	check := func(t *testing.T, deltas []string, reasoning, answer int) {
		t.Helper()
		c := claimServer(t, tr, nil, contentChunks(deltas...))
		resp, err := c.Do(t.Context(), req())
		require.NoError(t, err)
		assert.Equal(t, reasoning+answer, resp.OutputTokens(), "%q", deltas)
		assert.Equal(t, reasoning, resp.ReasoningTokens, "reasoning of %q", deltas)
		assert.Equal(t, answer, resp.AnswerTokens(), "answer of %q", deltas)
		assert.False(t, resp.FirstAnswer.IsZero(), "the first answer token of %q", deltas)
		assert.Equal(t, strings.Join(deltas, ""), resp.Text)
	}
	const open, close = "<think>", "</think>"
	for i := 1; i < len(open); i++ {
		for j := 1; j < len(close); j++ {
			t.Run(fmt.Sprintf("open=%s|%s/close=%s|%s", open[:i], open[i:], close[:j], close[j:]), func(t *testing.T) {
				check(t, []string{open[:i], open[i:] + "plan", " more", close[:j], close[j:] + "The answer", " is 42"}, 4, 2)
			})
		}
	}
	t.Run("close split after reasoning text", func(t *testing.T) {
		check(t, []string{"<think>plan", " done</th", "ink>\n\n", "The answer"}, 3, 1)
	})
	t.Run("a character a delta", func(t *testing.T) {
		text := open + "plan" + close + "answer"
		deltas := strings.Split(text, "")
		check(t, deltas, len(open+"plan"+close), len("answer"))
	})
	t.Run("a start of the tag that is not one", func(t *testing.T) {
		check(t, []string{"<th", "ank you", " all"}, 1, 2)
	})
}

// reasoningUsage is a chat chunk with the usage given: completion tokens,
// and reasoning tokens among them.
func reasoningUsage(completion, reasoning int) string {
	return fmt.Sprintf(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":%d,"total_tokens":%d,"completion_tokens_details":{"reasoning_tokens":%d}}}`+"\n\n", completion, completion+3, reasoning)
}

// TestReasoningOverclaimIsRecorded: usage that claims more reasoning
// tokens than the output (10 of 3 completion tokens, or of the 4 deltas
// seen) keeps the reasoning count within the output and says by how much
// the claim went beyond it, per request and in a recorder's summary; a
// claim that can be true is not flagged.
func TestReasoningOverclaimIsRecorded(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		for _, tc := range []struct {
			name                    string
			body                    string
			output, reasoning, over int
		}{
			{"more than completion_tokens", tokenChunk("a") + tokenChunk("b") + tokenChunk("c") + reasoningUsage(3, 10) + finishChunk, 3, 3, 7},
			{"more than the deltas seen", tokenChunk("a") + tokenChunk("b") + tokenChunk("c") + tokenChunk("d") + reasoningUsage(2, 9) + finishChunk, 4, 4, 5},
			{"within the output", tokenChunk("a") + tokenChunk("b") + tokenChunk("c") + reasoningUsage(3, 2) + finishChunk, 3, 2, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := claimServer(t, tr, nil, tc.body)
				resp, err := c.Do(t.Context(), req())
				require.NoError(t, err)
				assert.Equal(t, tc.output, resp.OutputTokens())
				assert.Equal(t, tc.reasoning, resp.ReasoningTokens, "within the output")
				assert.Equal(t, tc.over, resp.ReasoningOverclaim, "the claim beyond the output")
				var rec metrics.Recorder
				rec.Record(&resp.Timeline)
				assert.Equal(t, min(tc.over, 1), rec.Recording(metrics.ScopeAll).Summary.ReasoningOverclaimed)
			})
		}
	})
}

// metricsChunk is a last chat chunk with a finish reason and vLLM's
// per-request metrics object, its members as given.
func metricsChunk(members string) string {
	return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}],"metrics":{` + members + "}}\n\ndata: [DONE]\n\n"
}

// recordOne records tl alone and returns the recorder's summary of it.
func recordOne(tl *metrics.Timeline) metrics.Summary {
	var rec metrics.Recorder
	rec.Record(tl)
	return rec.Recording(metrics.ScopeAll).Summary
}

// TestBadServerTimingsAreDropped: a server timing that is not a
// non-negative number of milliseconds (Python's NaN and Infinity, which are
// not JSON, a string, a negative number) never fails the request: the
// request's server timings are dropped, with the reason, and a recorder
// counts the request; so are TGI's timing headers that are not numbers.
// NaN in a member the client does not read drops nothing; null is a timing
// not measured.
func TestBadServerTimingsAreDropped(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		for _, tc := range []struct {
			members string
			dropped bool
			header  http.Header
		}{
			{`"queue_time_ms":0.01`, true, http.Header{"X-Queue-Time": {"1"}, "X-Inference-Time": {"NaN"}}},
			{`"queue_time_ms":0.01`, true, http.Header{"X-Queue-Time": {"soon"}}},
			{`"queue_time_ms":NaN,"time_to_first_token_ms":0.01,"generation_time_ms":0.01`, true, nil},
			{`"queue_time_ms":0.01,"time_to_first_token_ms":Infinity`, true, nil},
			{`"queue_time_ms":0.01,"generation_time_ms":-Infinity`, true, nil},
			{`"queue_time_ms":"soon","time_to_first_token_ms":0.01`, true, nil},
			{`"queue_time_ms":-1,"time_to_first_token_ms":0.01`, true, nil},
			{`"mean_itl_ms":NaN`, true, nil},
			{`"queue_time_ms":0.01,"time_to_first_token_ms":0.01,"ratio":NaN`, false, nil},
			{`"queue_time_ms":null,"time_to_first_token_ms":0.01`, false, nil},
		} {
			t.Run(fmt.Sprint(tc.members, tc.header), func(t *testing.T) {
				c := claimServer(t, tr, tc.header, tokenChunk("a")+tokenChunk("b")+metricsChunk(tc.members))
				resp, err := c.Do(t.Context(), req())
				require.NoError(t, err, "server timings never fail a request")
				require.True(t, resp.OK())
				assert.Equal(t, 2, resp.OutputTokens())
				s := recordOne(&resp.Timeline)
				if !tc.dropped {
					assert.Equal(t, "vllm", resp.Server.Source)
					assert.Empty(t, resp.Server.Dropped)
					assert.Zero(t, s.ServerTimingsDropped)
					return
				}
				assert.Equal(t, metrics.ServerTimings{Dropped: resp.Server.Dropped}, resp.Server, "dropped whole")
				assert.Contains(t, resp.Server.Dropped, "not a non-negative number of milliseconds")
				_, _, _, ok := resp.Split()
				assert.False(t, ok, "no split of dropped timings")
				assert.Equal(t, 1, s.ServerTimingsDropped)
				assert.Equal(t, 1, s.Completed)
			})
		}
	})
}

// TestImplausibleServerTimingsAreDropped: server timings that outlast what
// the client measured — an hour in the queue beside a TTFT of a few
// milliseconds on loopback, or an hour of generation beside the request's
// latency — are dropped for that request, with the reason, and counted;
// timings within the client's are kept.
func TestImplausibleServerTimingsAreDropped(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		for _, tc := range []struct {
			members, why string
		}{
			{`"queue_time_ms":3600000,"time_to_first_token_ms":0.5,"generation_time_ms":0.5`, "time to first token"},
			{`"queue_time_ms":0.01,"time_to_first_token_ms":3600000,"generation_time_ms":0.5`, "time to first token"},
			{`"queue_time_ms":0.01,"time_to_first_token_ms":0.01,"generation_time_ms":3600000`, "latency"},
			{`"queue_time_ms":0.01,"time_to_first_token_ms":0.02,"generation_time_ms":0.03,"mean_itl_ms":0.03`, ""},
		} {
			t.Run(tc.members, func(t *testing.T) {
				c := claimServer(t, tr, nil, tokenChunk("a")+tokenChunk("b")+metricsChunk(tc.members))
				resp, err := c.Do(t.Context(), req())
				require.NoError(t, err)
				require.Less(t, resp.Latency(), time.Hour)
				s := recordOne(&resp.Timeline)
				if tc.why == "" {
					assert.Equal(t, "vllm", resp.Server.Source)
					assert.Equal(t, 30*time.Microsecond, resp.Server.Generation)
					assert.Zero(t, s.ServerTimingsDropped)
					return
				}
				assert.Equal(t, metrics.ServerTimings{Dropped: resp.Server.Dropped}, resp.Server, "dropped whole")
				assert.Contains(t, resp.Server.Dropped, tc.why)
				assert.Equal(t, 1, s.ServerTimingsDropped)
			})
		}
	})
}

// TestEmptyAnswerIsNoSuccess: a stream that ends as it should but carries
// no token — only [DONE], a finish reason with no content, a Messages
// message_stop with no content block, a Responses response.completed with
// no output — fails with its own kind, KindEmptyAnswer, and a recorder
// counts it failed, not completed. A stream of one token is a success.
func TestEmptyAnswerIsNoSuccess(t *testing.T) {
	messages := "event: message_start\ndata: " + `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}` + "\n\n" +
		"event: message_delta\ndata: " + `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":0}}` + "\n\n" +
		"event: message_stop\ndata: " + `{"type":"message_stop"}` + "\n\n"
	responses := "event: response.created\ndata: " + `{"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}}` + "\n\n" +
		"event: response.completed\ndata: " + `{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[],"usage":{"input_tokens":5,"output_tokens":0}}}` + "\n\n"
	forEachTransport(t, func(t *testing.T, tr func(int) http.RoundTripper) {
		for _, tc := range []struct {
			name string
			api  loadgen.API
			body string
			kind metrics.ErrorKind
		}{
			{"only [DONE]", loadgen.Chat, "data: [DONE]\n\n", metrics.KindEmptyAnswer},
			{"a finish reason and no content", loadgen.Chat, finishChunk, metrics.KindEmptyAnswer},
			{"empty deltas", loadgen.Chat, tokenChunk("") + tokenChunk("") + finishChunk, metrics.KindEmptyAnswer},
			{"messages with no content", loadgen.Messages, messages, metrics.KindEmptyAnswer},
			{"responses with no output", loadgen.Responses, responses, metrics.KindEmptyAnswer},
			{"one token", loadgen.Chat, tokenChunk("a") + finishChunk, metrics.KindNone},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := claimServer(t, tr, nil, tc.body)
				r := req()
				r.API = tc.api
				resp, err := c.Do(t.Context(), r)
				s := recordOne(&resp.Timeline)
				assert.Equal(t, tc.kind, loadgen.KindOf(err), "%v", err)
				assert.Equal(t, tc.kind, resp.Kind)
				if tc.kind == metrics.KindNone {
					assert.Equal(t, 1, s.Completed)
					return
				}
				require.Error(t, err)
				assert.Contains(t, err.Error(), "without a token")
				assert.False(t, resp.OK())
				assert.Equal(t, "failed", resp.Outcome())
				assert.Zero(t, s.Completed, "not a success")
				assert.Equal(t, map[metrics.ErrorKind]int{metrics.KindEmptyAnswer: 1}, s.Errors)
			})
		}
	})
}
