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
