package loadgentest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/simtokens"
)

// toolEvents posts body to path and returns its events' data, decoded.
func toolEvents(t *testing.T, srv *Server, path string, body map[string]any) []map[string]any {
	t.Helper()
	resp, err := post(t.Context(), srv, path, body, nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events, err := readEvents(resp.Body)
	require.NoError(t, err)
	var out []map[string]any
	for _, e := range events {
		if e.Data == "[DONE]" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(e.Data), &m), e.Data)
		out = append(out, m)
	}
	return out
}

// wantArgs is the arguments of the simulator's tool call of n answer
// tokens after reasoning ones: {"input": the answer's text}.
func wantArgs(t *testing.T, reasoning, n int) map[string]any {
	return map[string]any{"input": string(appendText(nil, reasoning, reasoning+n))}
}

func decodeArgs(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m), "the arguments assembled: %s", s)
	return m
}

// A chat request that carries tools gets a tool call as its answer, after
// its reasoning, as vLLM's tool parsers stream it: the first delta with
// the call's id, type and name, then pieces of the arguments, whose
// concatenation is one JSON object; finish_reason tool_calls. The usage
// counts every token.
func TestChatToolCall(t *testing.T) {
	p := quick()
	p.ReasoningTokens = 3
	srv := NewServer(p)
	defer srv.Close()
	body := chat(simtokens.Prompt(20, t.Name()), 8, true)
	body["tools"] = []any{
		map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": map[string]any{}}},
		map[string]any{"type": "function", "function": map[string]any{"name": "search"}},
	}
	var args, name, finish string
	reasoning, calls := 0, 0
	last := 0
	for _, ev := range toolEvents(t, srv, "/v1/chat/completions", body) {
		choices, _ := ev["choices"].([]any)
		if u, ok := ev["usage"].(map[string]any); ok {
			last = int(u["completion_tokens"].(float64))
		}
		if len(choices) == 0 {
			continue
		}
		c := choices[0].(map[string]any)
		if f, ok := c["finish_reason"].(string); ok {
			finish = f
		}
		d := c["delta"].(map[string]any)
		for _, field := range []string{"reasoning_content", "reasoning"} {
			if r, ok := d[field].(string); ok && r != "" {
				reasoning += strings.Count(r, " ")
				require.Zero(t, calls, "reasoning before the call")
			}
		}
		tcs, ok := d["tool_calls"].([]any)
		if !ok {
			continue
		}
		assert.NotContains(t, d, "content", "a tool call's chunk carries no content")
		tc := tcs[0].(map[string]any)
		fn := tc["function"].(map[string]any)
		if calls == 0 {
			assert.Equal(t, "function", tc["type"])
			assert.True(t, strings.HasPrefix(tc["id"].(string), "call_"), tc["id"])
			name = fn["name"].(string)
		} else {
			assert.NotContains(t, fn, "name", "the name comes once")
		}
		args += fn["arguments"].(string)
		calls++
	}
	assert.Equal(t, 3, reasoning, "reasoning tokens, a word each")
	assert.Positive(t, calls)
	assert.Equal(t, "get_weather", name, "the first tool")
	assert.Equal(t, wantArgs(t, 3, 5), decodeArgs(t, args))
	assert.Equal(t, "tool_calls", finish)
	assert.Equal(t, 8, last)

	// tool_choice names another tool, or none.
	body["tool_choice"] = map[string]any{"type": "function", "function": map[string]any{"name": "search"}}
	name = ""
	for _, ev := range toolEvents(t, srv, "/v1/chat/completions", body) {
		for _, c := range ev["choices"].([]any) {
			if tcs, ok := c.(map[string]any)["delta"].(map[string]any)["tool_calls"].([]any); ok && name == "" {
				name = tcs[0].(map[string]any)["function"].(map[string]any)["name"].(string)
			}
		}
	}
	assert.Equal(t, "search", name)
	body["tool_choice"] = "none"
	for _, ev := range toolEvents(t, srv, "/v1/chat/completions", body) {
		assert.NotContains(t, ev, "tool_calls")
		for _, c := range ev["choices"].([]any) {
			assert.NotContains(t, c.(map[string]any)["delta"], "tool_calls", "tool_choice none")
		}
	}
}

// The Responses API's tool call: a function_call item, its arguments in
// response.function_call_arguments.delta events, then .done with them
// whole, and response.completed.
func TestResponsesToolCall(t *testing.T) {
	p := quick()
	p.ReasoningTokens = 2
	srv := NewServer(p)
	defer srv.Close()
	body := map[string]any{"model": DefaultModel, "input": simtokens.Prompt(20, t.Name()), "max_output_tokens": 6, "stream": true,
		"tools": []any{map[string]any{"type": "function", "name": "lookup", "parameters": map[string]any{}}}}
	var types []string
	var args, done string
	var item map[string]any
	var final map[string]any
	for _, ev := range toolEvents(t, srv, "/v1/responses", body) {
		typ := ev["type"].(string)
		types = append(types, typ)
		switch typ {
		case "response.output_item.added":
			if it := ev["item"].(map[string]any); it["type"] == "function_call" {
				assert.Equal(t, "lookup", it["name"])
				assert.Equal(t, "", it["arguments"])
			}
		case "response.function_call_arguments.delta":
			args += ev["delta"].(string)
		case "response.function_call_arguments.done":
			done = ev["arguments"].(string)
		case "response.output_item.done":
			item = ev["item"].(map[string]any)
		case "response.completed":
			final = ev["response"].(map[string]any)
		}
	}
	assert.Equal(t, wantArgs(t, 2, 4), decodeArgs(t, args))
	assert.Equal(t, args, done)
	assert.Equal(t, "function_call", item["type"])
	assert.Equal(t, args, item["arguments"])
	assert.Equal(t, "lookup", item["name"])
	require.NotNil(t, final, "response.completed: %v", types)
	assert.Equal(t, "completed", final["status"])
	assert.Equal(t, 6.0, final["usage"].(map[string]any)["output_tokens"])
	assert.Equal(t, 4, strings.Count(strings.Join(types, " "), "response.function_call_arguments.delta"))
}

// The Messages API's tool call: a tool_use block, its input in
// input_json_delta pieces, stop_reason tool_use.
func TestMessagesToolCall(t *testing.T) {
	srv := NewServer(quick())
	defer srv.Close()
	body := map[string]any{"model": DefaultModel, "max_tokens": 5, "stream": true,
		"messages":    []any{map[string]any{"role": "user", "content": simtokens.Prompt(20, t.Name())}},
		"tools":       []any{map[string]any{"name": "calc", "input_schema": map[string]any{"type": "object"}}},
		"tool_choice": map[string]any{"type": "any"}}
	var args, stop string
	var block map[string]any
	for _, ev := range toolEvents(t, srv, "/v1/messages", body) {
		switch ev["type"] {
		case "content_block_start":
			block = ev["content_block"].(map[string]any)
		case "content_block_delta":
			d := ev["delta"].(map[string]any)
			require.Equal(t, "input_json_delta", d["type"])
			args += d["partial_json"].(string)
		case "message_delta":
			stop = ev["delta"].(map[string]any)["stop_reason"].(string)
			assert.Equal(t, 5.0, ev["usage"].(map[string]any)["output_tokens"])
		}
	}
	assert.Equal(t, "tool_use", block["type"])
	assert.Equal(t, "calc", block["name"])
	assert.Equal(t, wantArgs(t, 0, 5), decodeArgs(t, args))
	assert.Equal(t, "tool_use", stop)
}

// Tools that are not a list, or a tool without a name, are refused.
func TestToolsRefused(t *testing.T) {
	srv := NewServer(quick())
	defer srv.Close()
	for _, tools := range []any{"x", []any{map[string]any{"type": "function"}}} {
		body := chat("hi", 2, true)
		body["tools"] = tools
		resp, err := post(t.Context(), srv, "/v1/chat/completions", body, nil)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%v", tools)
	}
}
