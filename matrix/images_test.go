package matrix_test

import (
	"bytes"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/report"
)

// TestImagesInEveryPrompt: with a 448×448 picture in every prompt, each
// row's and cell's prompt is its context as the server counts it, of
// which 16×16 = 256 tokens are the picture's (the simulator's rule), and
// the reports say so, whether prompts are sized by /tokenize or
// calibrated from usage.
func TestImagesInEveryPrompt(t *testing.T) {
	longtest.Skip(t)
	p := loadgentest.FastProfile()
	p.Speed = 10
	servers := map[string]func(t *testing.T) *httptest.Server{
		"tokenize": func(t *testing.T) *httptest.Server {
			srv := loadgentest.NewServer(p)
			t.Cleanup(srv.Close)
			return srv.Server
		},
		"calibrated": func(t *testing.T) *httptest.Server { return newOllamaLike(t, p, &ollamaLike{}) },
	}
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			spec := matrix.Spec{URL: srv.URL + "/v1", Model: "bench", API: loadgen.Chat,
				Contexts: []int{0, 2048}, Concurrency: []int{2}, Prefill: []int{4096}, PrefillRepeat: 1,
				Duration: time.Second, MaxTokens: 64, WarmupRule: quickWarmup,
				Images: []string{"448x448"}}
			// 64 tokens, not fewer: a request's decoding, not its prefill,
			// must be most of it, or the two streams' cell is told apart from a
			// queue by a margin a loaded machine can erase.
			res, log := runMatrix(t, spec, srv)
			require.Len(t, res.Prefill, 1)
			row := res.Prefill[0]
			require.Equal(t, matrix.Valid, row.Status, row.Reason)
			assert.Equal(t, 256, row.ImageTokens, log)
			assert.InDelta(t, 4096, row.PromptTokens, 4096*0.01, "the text is 256 tokens shorter: the row is its context")
			require.Len(t, res.Cells, 2)
			for _, c := range res.Cells {
				require.Equal(t, matrix.Valid, c.Status, c.Reason)
				assert.Equal(t, 256, c.ImageTokens)
				if c.ContextTokens > 0 {
					assert.InDelta(t, c.ContextTokens, c.PromptTokens, float64(c.ContextTokens)*0.01)
				} else {
					assert.Greater(t, c.PromptTokens, 256, "the short prompt's text and the picture")
				}
			}
			var out bytes.Buffer
			require.NoError(t, report.Write(&out, report.Table, res))
			assert.Contains(t, out.String(), "4K (256 image)")
			assert.Contains(t, out.String(), "2K (256 image)")
		})
	}
}

// TestImagesRefusedByTheSpec: pictures the spec cannot send are refused
// before anything runs.
func TestImagesRefusedByTheSpec(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec matrix.Spec
		want string
	}{
		{"completions", matrix.Spec{API: loadgen.Completions, Images: []string{"28x28"}}, "Images"},
		{"size", matrix.Spec{Images: []string{"448"}}, "Images"},
		{"count", matrix.Spec{Images: []string{"28x28*2"}}, "Images"},
		{"format", matrix.Spec{Images: []string{"28x28"}, ImageFormat: "gif"}, "ImageFormat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.URL = "http://127.0.0.1:1/v1"
			err := tc.spec.WithDefaults().Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
