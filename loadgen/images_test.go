package loadgen_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/picture"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
)

// TestImages: a request's images go in its last user message, in the form
// of each API, and the simulator counts them: prompt tokens are the
// text's and 16×16 = 256 for each 448×448 picture.
func TestImages(t *testing.T) {
	p := loadgentest.FastProfile()
	p.TruthBytes = 0
	srv := loadgentest.NewServer(p)
	defer srv.Close()
	c := &loadgen.Client{BaseURL: srv.URL + "/v1"}
	png, err := picture.DataURL(picture.Size{W: 448, H: 448}, picture.PNG, 7)
	require.NoError(t, err)
	jpg, err := picture.DataURL(picture.Size{W: 448, H: 448}, picture.JPEG, 7)
	require.NoError(t, err)
	for _, api := range []loadgen.API{loadgen.Chat, loadgen.Responses, loadgen.Messages} {
		t.Run(api.String(), func(t *testing.T) {
			text := &loadgen.Request{API: api, Messages: []loadgen.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "what is in the picture"}}, MaxTokens: 2}
			resp, err := c.Do(t.Context(), text)
			require.NoError(t, err)
			textTokens := resp.Timeline.PromptTokens
			require.Positive(t, textTokens)

			req := &loadgen.Request{API: api, Messages: text.Messages, Images: []string{png, jpg}, MaxTokens: 2}
			resp, err = c.Do(t.Context(), req)
			require.NoError(t, err)
			assert.Equal(t, textTokens+2*256, resp.Timeline.PromptTokens)
		})
	}
}

// TestImagesBody: the parts each API takes, text first.
func TestImagesBody(t *testing.T) {
	u := "data:image/png;base64,iVBORw0KGgo="
	for _, tc := range []struct {
		api  loadgen.API
		want string
	}{
		{loadgen.Chat, `[{"content":[{"text":"hi","type":"text"},{"image_url":{"url":"` + u + `"},"type":"image_url"}],"role":"user"}]`},
		{loadgen.Responses, `[{"content":[{"text":"hi","type":"input_text"},{"image_url":"` + u + `","type":"input_image"}],"role":"user"}]`},
		{loadgen.Messages, `[{"content":[{"text":"hi","type":"text"},{"source":{"data":"iVBORw0KGgo=","media_type":"image/png","type":"base64"},"type":"image"}],"role":"user"}]`},
	} {
		b, err := (&loadgen.Request{API: tc.api, Prompt: "hi", Images: []string{u}, MaxTokens: 1}).Body()
		require.NoError(t, err)
		var body map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(b, &body))
		field := "messages"
		if tc.api == loadgen.Responses {
			field = "input"
		}
		assert.JSONEq(t, tc.want, string(body[field]), "%v", tc.api)
	}
}

// TestImagesRefused: images a request cannot carry are refused before
// anything is sent, naming the field.
func TestImagesRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *loadgen.Request
		want string
	}{
		{"completions", &loadgen.Request{API: loadgen.Completions, Prompt: "hi", Images: []string{"https://x/y.png"}}, "Request.Images"},
		{"embeddings", &loadgen.Request{API: loadgen.Embeddings, Prompt: "hi", Images: []string{"https://x/y.png"}}, "Request.Images"},
		{"no user message", &loadgen.Request{Messages: []loadgen.Message{{Role: "system", Content: "x"}}, Images: []string{"https://x/y.png"}}, "Request.Images"},
		{"not a URL", &loadgen.Request{Prompt: "hi", Images: []string{"cat.png"}}, "Request.Images[0]"},
		{"not base64", &loadgen.Request{Prompt: "hi", Images: []string{"data:image/png,abc"}}, "Request.Images[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate()
			var ce *loadgen.ConfigError
			require.True(t, errors.As(err, &ce), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
