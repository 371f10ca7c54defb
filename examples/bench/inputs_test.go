package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// refused runs bench with args, which must be refused before anything
// runs (exit status 2, no report), its message holding every one of says.
func refused(t *testing.T, args []string, says ...string) {
	t.Helper()
	code, out, errOut := bench(t, append(append([]string{}, quick...), args...)...)
	assert.Equal(t, 2, code, "%q: %s", args, errOut)
	assert.Empty(t, out, "%q", args)
	for _, s := range says {
		assert.Contains(t, errOut, s, "%q", args)
	}
}

// A -body-extra that would replace the model, the prompt or the output
// length is refused, naming the field and the flag to use instead: the
// report, and its figures by model, would say what was not sent.
func TestBodyExtraOwnFieldsRefused(t *testing.T) {
	dir := t.TempDir()
	for field, flag := range map[string]string{
		"model": "-model", "messages": "-dataset", "prompt": "-dataset", "input": "-dataset",
		"max_tokens": "-output-len", "max_completion_tokens": "-output-len",
	} {
		path := filepath.Join(dir, field+".json")
		if err := os.WriteFile(path, []byte(`{"top_k": 3, "`+field+`": 1}`), 0o600); err != nil {
			t.Fatal(err)
		}
		refused(t, []string{"-body-extra", path}, `sets "`+field+`"`, flag)
	}
}

// A -header value with a control character (but tab) is refused, naming
// the header: every request would fail.
func TestHeaderControlBytesRefused(t *testing.T) {
	for _, v := range []string{"a\x01b", "a\rb", "a\x00b", "a\x1bb", "a\x7fb"} {
		refused(t, []string{"-header", "X-Route: " + v}, "X-Route", "control character")
	}
	code, _, errOut := bench(t, append(quick, "-header", "X-Route: a\tb", "-requests", "1", "-warmup", "0", "-quiet")...)
	assert.Equal(t, 0, code, "a tab is allowed: %s", errOut)
}

// -header Authorization would replace the key of -api-key-env unsaid:
// the two are refused together.
func TestAuthorizationHeaderBesideKeyRefused(t *testing.T) {
	t.Setenv("BENCH_TEST_KEY", "sk-bench-test-0123456789")
	refused(t, []string{"-api-key-env", "BENCH_TEST_KEY", "-header", "Authorization: Bearer other"}, "-header Authorization", "-api-key-env BENCH_TEST_KEY", "one or the other")
	refused(t, []string{"-api", "messages", "-api-key-env", "BENCH_TEST_KEY", "-header", "x-api-key: other"}, "-header X-Api-Key", "one or the other")
}

// -tool-choice must name one of -tools' tools, and -tools an array of
// one tool or more.
func TestToolFlagsRefused(t *testing.T) {
	refused(t, []string{"-tools", "testdata/tools.json", "-tool-choice", "get_time"}, `-tool-choice "get_time"`, "get_weather")
	empty := filepath.Join(t.TempDir(), "empty.json")
	if err := os.WriteFile(empty, []byte(`[]`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := bench(t, append(quick, "-tools", empty)...)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "-tools: the list is empty")
	assert.NotContains(t, errOut, "<nil>")
}

// -tools and -response-format are refused with the APIs that would
// ignore them, as -image is.
func TestToolsAndFormatNeedAConversation(t *testing.T) {
	format := filepath.Join(t.TempDir(), "format.json")
	if err := os.WriteFile(format, []byte(`{"type":"json_object"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, api := range []string{"completions", "embeddings", "rerank"} {
		refused(t, []string{"-api", api, "-tools", "testdata/tools.json"}, "-tools: the "+api+" API", "use -api chat, responses or messages")
		refused(t, []string{"-api", api, "-response-format", format}, "-response-format: the "+api+" API", "use -api chat, responses or messages")
	}
	refused(t, []string{"-api", "completions", "-image", "64x64"}, "-image: the completions API sends text alone")
}

// A -model with a control character is refused.
func TestModelControlBytesRefused(t *testing.T) {
	for _, m := range []string{"a\nb", "a\x01b", "a=1,b\x00=2"} {
		code, out, errOut := bench(t, append(quick, "-model", m)...)
		assert.Equal(t, 2, code, "%q", m)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "control character", "%q", m)
		assert.False(t, strings.ContainsAny(errOut, "\x00\x01"), "the message prints no control byte")
	}
}
