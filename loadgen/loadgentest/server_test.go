package loadgentest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmload/llmload/internal/simtokens"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChatStreamShape(t *testing.T) {
	srv := NewServer(quick())
	defer srv.Close()

	resp, err := post(t.Context(), srv, "/v1/chat/completions", chat(simtokens.Prompt(20, t.Name()), 12, true), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
	events, err := readEvents(resp.Body)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(events), 4)

	id := resp.Header.Get("X-Request-Id")
	assert.True(t, strings.HasPrefix(id, "chatcmpl-"), id)
	assert.Equal(t, "[DONE]", events[len(events)-1].Data)

	first := decodeChunk(t, events[0].Data)
	require.Len(t, first.Choices, 1)
	assert.Equal(t, "assistant", *first.Choices[0].Delta.Role, "the first chunk carries the role")
	assert.Equal(t, 0, first.Usage.CompletionTokens)

	final := decodeChunk(t, events[len(events)-2].Data)
	assert.Empty(t, final.Choices, "the usage chunk has no choices")
	assert.Equal(t, Usage{20 + simtokens.MessageTokens + simtokens.ReplyTokens, 12}, Usage{final.Usage.PromptTokens, final.Usage.CompletionTokens})

	var text strings.Builder
	prev := 0
	for i, ev := range events[1 : len(events)-2] {
		c := decodeChunk(t, ev.Data)
		assert.Equal(t, id, c.ID)
		assert.Equal(t, "chat.completion.chunk", c.Object)
		text.WriteString(*c.Choices[0].Delta.Content)
		n := c.Usage.CompletionTokens
		assert.Greater(t, n, prev, "continuous usage grows with every chunk")
		prev = n
		last := i == len(events)-4
		if last {
			assert.Equal(t, "length", *c.Choices[0].FinishReason)
		} else {
			assert.Nil(t, c.Choices[0].FinishReason)
		}
	}
	assert.Equal(t, 12, simtokens.Count(text.String()), "the text counts back to its tokens")

	truth, ok := srv.Truth().Request(id)
	require.True(t, ok)
	assert.Equal(t, 12, truth.OutputTokens)
	assert.Equal(t, "length", truth.Outcome)
	sum := 0
	for _, c := range truth.Chunks {
		sum += c.Tokens
	}
	assert.Equal(t, 12, sum)
	assert.Equal(t, 12, srv.Truth().Tokens(truth.Received, truth.Done.Add(1)))
}

// Usage is prompt and completion tokens, for comparisons.
type Usage struct{ Prompt, Completion int }

func TestNonStreaming(t *testing.T) {
	srv := NewServer(quick())
	defer srv.Close()
	for _, tc := range []struct {
		path   string
		body   map[string]any
		object string
		prompt int
	}{
		{"/v1/completions", completion(simtokens.Prompt(30, "a"), 7, false), "text_completion", 30},
		{"/v1/chat/completions", chat(simtokens.Prompt(30, "b"), 7, false), "chat.completion", 30 + 8},
	} {
		t.Run(tc.object, func(t *testing.T) {
			resp, err := post(t.Context(), srv, tc.path, tc.body, nil)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var got struct {
				ID      string `json:"id"`
				Object  string `json:"object"`
				Choices []struct {
					Text         string                   `json:"text"`
					Message      struct{ Content string } `json:"message"`
					FinishReason string                   `json:"finish_reason"`
				} `json:"choices"`
				Usage struct {
					PromptTokens     int `json:"prompt_tokens"`
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
			assert.Equal(t, tc.object, got.Object)
			assert.Equal(t, resp.Header.Get("X-Request-Id"), got.ID)
			assert.Equal(t, Usage{tc.prompt, 7}, Usage{got.Usage.PromptTokens, got.Usage.CompletionTokens})
			assert.Equal(t, "length", got.Choices[0].FinishReason)
			assert.Equal(t, 7, simtokens.Count(got.Choices[0].Text+got.Choices[0].Message.Content))
		})
	}
}

func TestTokenizer(t *testing.T) {
	for _, n := range []int{1, 2, 17, 8192} {
		assert.Equal(t, n, simtokens.Count(simtokens.Prompt(n, "seed")))
	}
	assert.Equal(t, "", simtokens.Prompt(0, "x"))
	assert.Equal(t, simtokens.Prompt(50, "x"), simtokens.Prompt(50, "x"))
	assert.NotEqual(t, strings.Fields(simtokens.Prompt(5, "x"))[0], strings.Fields(simtokens.Prompt(5, "y"))[0], "different seeds, different heads")
	assert.Equal(t, 3, simtokens.Count("  one\ttwo\n three "))

	srv := NewServer(quick())
	defer srv.Close()
	for _, tc := range []struct {
		name string
		body map[string]any
		want int
	}{
		{"prompt", map[string]any{"prompt": simtokens.Prompt(100, "t")}, 100},
		{"messages", map[string]any{"messages": []map[string]any{{"role": "user", "content": simtokens.Prompt(100, "t")}}}, 108},
		{"two messages, no reply header", map[string]any{
			"messages": []map[string]any{
				{"role": "system", "content": "be brief"},
				{"role": "user", "content": []map[string]any{{"type": "text", "text": "hello there"}}},
			},
			"add_generation_prompt": false,
		}, 2 + 2 + 2*simtokens.MessageTokens},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := post(t.Context(), srv, "/tokenize", tc.body, nil)
			require.NoError(t, err)
			defer resp.Body.Close()
			var got struct {
				Count       int      `json:"count"`
				MaxModelLen int      `json:"max_model_len"`
				Tokens      []uint32 `json:"tokens"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
			assert.Equal(t, tc.want, got.Count)
			assert.Len(t, got.Tokens, tc.want)
			assert.Equal(t, 32768, got.MaxModelLen)
		})
	}
}

func TestModels(t *testing.T) {
	p := SeedProfile()
	p.Model = "qwen"
	srv := NewServer(p)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/v1/models")
	require.NoError(t, err)
	defer resp.Body.Close()
	var got struct {
		Object string `json:"object"`
		Data   []struct {
			ID          string `json:"id"`
			OwnedBy     string `json:"owned_by"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	assert.Equal(t, "list", got.Object)
	require.Len(t, got.Data, 1)
	assert.Equal(t, "qwen", got.Data[0].ID)
	assert.Equal(t, 262144, got.Data[0].MaxModelLen)

	resp, err = srv.Client().Get(srv.URL + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// vllmError is vLLM's error body.
type vllmError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	} `json:"error"`
}

func readError(t *testing.T, resp *http.Response) vllmError {
	t.Helper()
	defer resp.Body.Close()
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var e vllmError
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	assert.Equal(t, resp.StatusCode, e.Error.Code)
	return e
}

func TestOverLength(t *testing.T) {
	srv := NewServer(SeedProfile())
	defer srv.Close()

	// The seed's 248K row: 253,952 tokens of context + 8,192 of output is
	// max_model_len exactly, so the chat template's tokens make it too long.
	resp, err := post(t.Context(), srv, "/v1/chat/completions", chat(simtokens.Prompt(253952, "248K"), 8192, true), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	e := readError(t, resp)
	assert.Equal(t, "BadRequestError", e.Error.Type)
	assert.Equal(t, "'max_tokens' or 'max_completion_tokens' is too large: 8192. This model's maximum context length is 262144 tokens and your request has 253960 input tokens (8192 > 262144 - 253960).", e.Error.Message)

	resp, err = post(t.Context(), srv, "/v1/completions", completion(simtokens.Prompt(262144, "all"), 1, false), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	e = readError(t, resp)
	assert.Equal(t, "This model's maximum context length is 262144 tokens. However, your request has 262144 input tokens. Please reduce the length of the input messages.", e.Error.Message)

	// At the limit exactly, a request is accepted.
	small := quick()
	small.MaxModelLen = 64
	srv2 := NewServer(small)
	defer srv2.Close()
	for _, tc := range []struct {
		prompt, maxTokens, status int
	}{{60, 4, http.StatusOK}, {60, 5, http.StatusBadRequest}, {63, 1, http.StatusOK}, {64, 1, http.StatusBadRequest}} {
		resp, err := post(t.Context(), srv2, "/v1/completions", completion(simtokens.Prompt(tc.prompt, "x"), tc.maxTokens, false), nil)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		assert.Equal(t, tc.status, resp.StatusCode, "prompt %d + max_tokens %d", tc.prompt, tc.maxTokens)
	}
}

func TestBadRequests(t *testing.T) {
	srv := NewServer(quick())
	defer srv.Close()
	for _, tc := range []struct {
		name   string
		body   string
		header string
		status int
		param  string
	}{
		{"not JSON", `{"messages": [`, "", 400, ""},
		{"wrong type", `{"messages": "hello"}`, "", 400, ""},
		{"no messages", `{"messages": []}`, "", 400, ""},
		{"zero max_tokens", `{"messages": [{"role":"user","content":"hi"}], "max_tokens": 0}`, "", 400, ""},
		{"min_tokens above max_tokens", `{"messages": [{"role":"user","content":"hi"}], "max_tokens": 2, "min_tokens": 3}`, "", 400, ""},
		{"stream options without stream", `{"messages": [{"role":"user","content":"hi"}], "stream_options": {"include_usage": true}}`, "", 400, ""},
		{"n of 2", `{"messages": [{"role":"user","content":"hi"}], "n": 2}`, "", 400, ""},
		{"unknown model", `{"model": "gpt-9", "messages": [{"role":"user","content":"hi"}]}`, "", 404, "model"},
		{"unknown fault", `{"messages": [{"role":"user","content":"hi"}]}`, "explode", 400, ""},
		{"fault without its value", `{"messages": [{"role":"user","content":"hi"}]}`, "reset-after", 400, ""},
		{"unknown fault in the model name", `{"model": "bench+fault=explode", "messages": [{"role":"user","content":"hi"}]}`, "", 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(tc.body))
			require.NoError(t, err)
			if tc.header != "" {
				req.Header.Set(FaultHeader, tc.header)
			}
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			require.Equal(t, tc.status, resp.StatusCode)
			e := readError(t, resp)
			assert.NotEmpty(t, e.Error.Message)
			if tc.param != "" {
				assert.Equal(t, tc.param, *e.Error.Param)
			}
		})
	}
}

func TestMetricsParse(t *testing.T) {
	srv := NewServer(SeedProfile())
	defer srv.Close()
	gen, err := post(t.Context(), srv, "/v1/completions", completion(simtokens.Prompt(100, "m"), 5, false), nil)
	require.NoError(t, err)
	io.Copy(io.Discard, gen.Body)
	gen.Body.Close()

	resp, err := srv.Client().Get(srv.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	for name, typ := range map[string]string{
		"vllm:num_requests_running":        "GAUGE",
		"vllm:num_requests_waiting":        "GAUGE",
		"vllm:kv_cache_usage_perc":         "GAUGE",
		"vllm:num_preemptions_total":       "COUNTER",
		"vllm:prompt_tokens_total":         "COUNTER",
		"vllm:generation_tokens_total":     "COUNTER",
		"vllm:prefix_cache_queries_total":  "COUNTER",
		"vllm:prefix_cache_hits_total":     "COUNTER",
		"vllm:request_success_total":       "COUNTER",
		"vllm:cache_config_info":           "GAUGE",
		"vllm:time_to_first_token_seconds": "HISTOGRAM",
		"vllm:inter_token_latency_seconds": "HISTOGRAM",
		"vllm:e2e_request_latency_seconds": "HISTOGRAM",
		"vllm:request_queue_time_seconds":  "HISTOGRAM",
	} {
		f, ok := families[name]
		if assert.True(t, ok, name) {
			assert.Equal(t, typ, f.GetType().String(), name)
		}
	}
	// One request of 5 tokens: one first token, four gaps between tokens.
	for name, count := range map[string]uint64{
		"vllm:time_to_first_token_seconds": 1,
		"vllm:inter_token_latency_seconds": 4,
		"vllm:e2e_request_latency_seconds": 1,
		"vllm:request_queue_time_seconds":  1,
	} {
		h := families[name].GetMetric()[0].GetHistogram()
		assert.Equal(t, count, h.GetSampleCount(), name)
	}
	itl := families["vllm:inter_token_latency_seconds"].GetMetric()[0].GetHistogram()
	step := SeedProfile().DecodeStepTime(1, 100, 100).Seconds()
	assert.InDelta(t, step, itl.GetSampleSum()/4, step*0.01, "the engine's own gaps are its step times")
	assert.Equal(t, 5.0, families["vllm:generation_tokens_total"].GetMetric()[0].GetCounter().GetValue())

	info := families["vllm:cache_config_info"].GetMetric()[0]
	labels := map[string]string{}
	for _, l := range info.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	assert.Equal(t, map[string]string{
		"block_size":               "16",
		"enable_prefix_caching":    "True",
		"engine":                   "0",
		"kv_cache_max_concurrency": "2.75",
		"kv_cache_size_tokens":     "720896",
		"num_gpu_blocks":           "45056",
	}, labels)
}

func TestPromptForms(t *testing.T) {
	srv := NewServer(quick())
	defer srv.Close()
	for _, tc := range []struct {
		name   string
		prompt any
		status int
		tokens int
	}{
		{"string", "a b c", http.StatusOK, 3},
		{"one string in a list", []string{"a b c d"}, http.StatusOK, 4},
		{"token ids", []int{1, 2, 3, 4, 5}, http.StatusOK, 5},
		{"empty", " ", http.StatusBadRequest, 0},
		{"two prompts", []string{"a", "b"}, http.StatusBadRequest, 0},
		{"missing", nil, http.StatusBadRequest, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := completion("", 2, false)
			body["prompt"] = tc.prompt
			resp, err := post(t.Context(), srv, "/v1/completions", body, nil)
			require.NoError(t, err)
			require.Equal(t, tc.status, resp.StatusCode)
			if tc.status != http.StatusOK {
				readError(t, resp)
				return
			}
			defer resp.Body.Close()
			var got struct {
				Usage struct {
					PromptTokens int `json:"prompt_tokens"`
				} `json:"usage"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
			assert.Equal(t, tc.tokens, got.Usage.PromptTokens)
		})
	}
}
