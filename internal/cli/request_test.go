package cli

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
