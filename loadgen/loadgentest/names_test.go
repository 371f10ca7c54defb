package loadgentest

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/simtokens"
)

// oddName holds every character a JSON string or a Prometheus label value
// must escape: a double quote, a backslash, a line feed, a control
// character, and markup.
const oddName = "my \"model\" \\ v1\nnext\x01 <b>&"

// models returns every "model" field of a JSON document, at any depth.
func models(v any) []any {
	var out []any
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "model" {
				out = append(out, x)
			} else {
				out = append(out, models(x)...)
			}
		}
	case []any:
		for _, x := range v {
			out = append(out, models(x)...)
		}
	}
	return out
}

// The simulator writes a model's name escaped wherever it writes it: in
// every API's JSON and SSE events (read back with encoding/json), and in
// /metrics' label values (read back with Prometheus' parser).
func TestModelNameEscaped(t *testing.T) {
	p := quick()
	p.Model = oddName
	srv := NewServer(p)
	defer srv.Close()

	prompt := simtokens.Prompt(10, t.Name())
	msgs := []map[string]any{{"role": "user", "content": prompt}}
	tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "get \"x\"\x02"}}}
	for _, tc := range []struct {
		path   string
		body   map[string]any
		stream bool
	}{
		{"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 4}, false},
		{"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 4, "stream": true}, true},
		{"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 4, "stream": true, "tools": tools}, true},
		{"/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 4, "stream": true}, true},
		{"/v1/responses", map[string]any{"input": prompt, "max_output_tokens": 4, "stream": true}, true},
		{"/v1/messages", map[string]any{"messages": msgs, "max_tokens": 4, "stream": true}, true},
	} {
		tc.body["model"] = oddName
		resp, err := post(t.Context(), srv, tc.path, tc.body, nil)
		require.NoError(t, err)
		var docs []string
		if tc.stream {
			events, err := readEvents(resp.Body)
			require.NoError(t, err)
			for _, e := range events {
				if e.Data != "[DONE]" {
					docs = append(docs, e.Data)
				}
			}
		} else {
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			docs = append(docs, string(b))
		}
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s %v: %q", tc.path, tc.body, docs)
		named := 0
		for _, d := range docs {
			var v any
			require.NoError(t, json.Unmarshal([]byte(d), &v), "%s: %q", tc.path, d)
			for _, m := range models(v) {
				assert.Equal(t, oddName, m, tc.path)
				named++
			}
			if tc.body["tools"] != nil {
				assert.NotContains(t, d, "\x02", "the tool's name escaped too")
			}
		}
		assert.Positive(t, named, "%s names its model", tc.path)
	}

	resp, err := srv.Client().Get(srv.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	labelled := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "model_name" {
					assert.Equal(t, oddName, l.GetValue(), f.GetName())
					labelled++
				}
			}
		}
	}
	assert.GreaterOrEqual(t, labelled, 8, "every vLLM series with a model_name")
}
