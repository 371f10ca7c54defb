package chunk

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseChunkErrors: invalid JSON is a syntax error that says where,
// even inside or after a field of the wrong type; valid JSON with a field
// of the wrong type names the field and what it should be.
func TestParseChunkErrors(t *testing.T) {
	tests := []struct {
		name, data string
		syntax     bool
		want       string
	}{
		{"not an object", `[1]`, false, "chunk is not a JSON object"},
		{"not an object, and invalid", `[1] x`, true, "trailing data after the JSON value at byte 4"},
		{"null", `null`, false, "chunk is not a JSON object"},
		{"usage an array", `{"usage":[1]}`, false, "usage is not an object"},
		{"choices an object", `{"choices":{}}`, false, "choices is not an array"},
		{"a choice a number", `{"choices":[null,7]}`, false, "a choice is not an object"},
		{"content a number", `{"choices":[{"delta":{"content":5}}]}`, false, "delta.Content is not a string"},
		{"function a number", `{"choices":[{"delta":{"tool_calls":[{"function":3}]}}]}`, false, "a tool call's function is not an object"},
		{"negative count", `{"usage":{"completion_tokens":-1}}`, false, "usage.completion_tokens is not a non-negative integer"},
		{"fractional count", `{"usage":{"prompt_tokens":1e3}}`, false, "usage.prompt_tokens is not a non-negative integer"},
		{"count beyond 64 bits", `{"usage":{"completion_tokens":99999999999999999999}}`, false, "usage.completion_tokens is 99999999999999999999, beyond any 64-bit count"},
		{"count a string", `{"usage":{"completion_tokens":"3"}}`, false, "usage.completion_tokens is not a number"},
		{"invalid JSON in a field of the wrong type", `{"usage":[1,]}`, true, "invalid character at byte 12"},
		{"invalid JSON after a field of the wrong type", `{"usage":[1],}`, true, "expected a member name at byte 13"},
		{"trailing comma", `{"a":1,}`, true, "expected a member name at byte 7"},
		{"trailing data", `{"a":1} x`, true, "trailing data after the JSON value at byte 8"},
		{"unterminated string", `{"choices":[{"delta":{"content":"ab`, true, "unexpected end of JSON in a string at byte 35"},
		{"too deep", `{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`, true, "nesting too deep"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Chunk
			err := Parse([]byte(tc.data), &c)
			require.Error(t, err)
			assert.Equal(t, tc.syntax, errors.Is(err, ErrJSONSyntax), "syntax error: %v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestParseChunkNullContainers: a null where an object or an array may
// come reads as an empty one.
func TestParseChunkNullContainers(t *testing.T) {
	var c Chunk
	require.NoError(t, Parse([]byte(`{"choices":[null,{"delta":null,"index":0,"finish_reason":"stop"}],"usage":null,"error":null,"token":null,"details":null}`), &c))
	assert.Zero(t, c.Tokens)
	assert.False(t, c.IsError)
	assert.False(t, c.HasUsage)
	assert.Equal(t, "stop", DecodeString(c.Finish))
}
