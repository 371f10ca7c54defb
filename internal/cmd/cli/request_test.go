package cli

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
)

func TestHeaders(t *testing.T) {
	var hs Headers
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&hs, "header", "")
	require.NoError(t, fs.Parse([]string{"-header", "X-Route: blue", "-header", "Authorization: Bearer sk-123", "-header", "x-api-key:k-456"}))
	h := hs.Header()
	assert.Equal(t, "blue", h.Get("X-Route"))
	assert.Equal(t, "Bearer sk-123", h.Get("Authorization"))
	assert.Equal(t, "k-456", h.Get("X-Api-Key"))
	assert.ElementsMatch(t, []string{"Bearer sk-123", "sk-123", "k-456"}, hs.Secrets(), "credential headers only")
	assert.NotContains(t, hs.String(), "sk-123", "the flag shows names only")
	for _, bad := range []string{"no colon", ": empty name", "bad name: x", "X-A: line\nbreak", "Content-Type: text/plain"} {
		assert.Error(t, hs.Set(bad), bad)
	}
}

func TestReadBodyExtra(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	m, err := ReadBodyExtra(write("ok.json", `{"top_k": 5, "chat_template_kwargs": {"enable_thinking": false}}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"enable_thinking": false}, m["chat_template_kwargs"])
	for name, body := range map[string]string{
		"array.json": `[1]`, "null.json": `null`, "two.json": `{} {}`, "bad.json": `{"a":`, "stream.json": `{"stream": false}`,
	} {
		_, err := ReadBodyExtra(write(name, body))
		assert.ErrorContains(t, err, name, "the error names the file")
	}
	_, err = ReadBodyExtra(filepath.Join(dir, "missing.json"))
	assert.Error(t, err)
}

func TestBodyFlags(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.json")
	require.NoError(t, os.WriteFile(tools, []byte(`[{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object"}}}]`), 0o600))
	format := filepath.Join(dir, "format.json")
	require.NoError(t, os.WriteFile(format, []byte(`{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object"}}}`), 0o600))
	extra := filepath.Join(dir, "extra.json")
	require.NoError(t, os.WriteFile(extra, []byte(`{"tool_choice":"auto","top_k":3}`), 0o600))

	f := BodyFlags{Tools: tools, ToolChoice: "get_weather", ResponseFormat: format}
	m, err := f.Extra(loadgen.Chat)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}, m["tool_choice"])
	assert.Equal(t, "json_schema", m["response_format"].(map[string]any)["type"])

	m, err = f.Extra(loadgen.Responses)
	require.NoError(t, err)
	assert.Equal(t, "get_weather", m["tools"].([]any)[0].(map[string]any)["name"], "flat functions")
	assert.Equal(t, map[string]any{"type": "json_schema", "name": "w", "schema": map[string]any{"type": "object"}}, m["text"].(map[string]any)["format"])

	_, err = f.Extra(loadgen.Messages)
	assert.ErrorContains(t, err, "-response-format")
	f.ResponseFormat = ""
	m, err = f.Extra(loadgen.Messages)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"name": "get_weather", "description": "d", "input_schema": map[string]any{"type": "object"}}, m["tools"].([]any)[0])
	assert.Equal(t, map[string]any{"type": "tool", "name": "get_weather"}, m["tool_choice"])

	f = BodyFlags{Tools: tools, ToolChoice: "required", BodyExtra: extra}
	m, err = f.Extra(loadgen.Chat)
	require.NoError(t, err)
	assert.Equal(t, "auto", m["tool_choice"], "-body-extra has the last word")

	_, err = (&BodyFlags{ToolChoice: "auto"}).Extra(loadgen.Chat)
	assert.Error(t, err, "-tool-choice without -tools")
	_, err = (&BodyFlags{Tools: extra}).Extra(loadgen.Chat)
	assert.ErrorContains(t, err, "-tools", "an object, not an array")
	m, err = (&BodyFlags{}).Extra(loadgen.Chat)
	assert.NoError(t, err)
	assert.Nil(t, m)
}

// What would send other than the report says is refused, each error
// naming the flag and what to do instead.
func TestBodyFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	tools := write("tools.json", `[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}]`)
	format := write("format.json", `{"type":"json_object"}`)
	for _, tc := range []struct {
		f    BodyFlags
		api  loadgen.API
		want string
	}{
		{BodyFlags{Tools: tools, ToolChoice: "c"}, loadgen.Chat, `-tool-choice "c": -tools ` + tools + ` has no such tool; give auto, none, required or one of its tools: a, b`},
		{BodyFlags{Tools: write("empty.json", `[]`)}, loadgen.Chat, "-tools: the list is empty"},
		{BodyFlags{Tools: tools}, loadgen.Completions, "-tools: the completions API calls no tools; use -api chat, responses or messages"},
		{BodyFlags{ResponseFormat: format}, loadgen.Rerank, "-response-format: the rerank API has no response format"},
		{BodyFlags{BodyExtra: write("model.json", `{"model":"m"}`)}, loadgen.Chat, `sets "model", which llmload sets itself and reports by: give the model with -model`},
		{BodyFlags{BodyExtra: write("max.json", `{"max_completion_tokens":9}`)}, loadgen.Chat, "-output-len"},
	} {
		_, err := tc.f.Extra(tc.api)
		assert.ErrorContains(t, err, tc.want)
	}
	for _, api := range []loadgen.API{loadgen.Chat, loadgen.Responses, loadgen.Messages} {
		_, err := (&BodyFlags{Tools: tools, ToolChoice: "b"}).Extra(api)
		assert.NoError(t, err, api)
	}
	var hs Headers
	assert.ErrorContains(t, hs.Set("X-A: a\x01b"), "the value of X-A holds the control character")
	assert.NoError(t, hs.Set("X-A: a\tb"))
}
