package benchcmd

import (
	"context"
	"fmt"
	"time"

	"github.com/llmload/llmload/internal/picture"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/loadgen/workload"
	"github.com/llmload/llmload/metrics"
)

// imageProbeTimeout bounds each request of [ImageTokens].
const imageProbeTimeout = 2 * time.Minute

// imageProbePrompt is the short text the images are measured beside.
const imageProbePrompt = "Describe the picture in one word."

// ImageTokens returns the prompt tokens the server counts for images,
// sent with every request (-image): a short prompt's prompt tokens with
// them, less the same prompt's without, each asking for one token, as the
// matrix measures them; 0 when the server's usage does not tell. The
// runs' input tokens hold them; their share is this.
func ImageTokens(ctx context.Context, client *loadgen.Client, api loadgen.API, model string, images []string, extra map[string]any) (int, error) {
	if len(images) == 0 {
		return 0, nil
	}
	var counted [2]int
	for i, imgs := range [][]string{nil, images} {
		req := &loadgen.Request{API: api, Model: model, Prompt: imageProbePrompt, Images: imgs, MaxTokens: 1, Usage: loadgen.UsageFinal, Extra: extra}
		rctx, cancel := context.WithTimeout(ctx, imageProbeTimeout)
		var tl metrics.Timeline
		err := client.Measure(rctx, req, &tl, nil)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("a short prompt with the images of -image, to count their tokens: %w", err)
		}
		counted[i] = tl.PromptTokens
	}
	if counted[0] > 0 && counted[1] > counted[0] {
		return counted[1] - counted[0], nil
	}
	return 0, nil
}

// Below minVisionTokens prompt tokens an image of at least minVisionSide
// pixels a side, no vision model reads it: Qwen2-VL spends 64 on a
// 224×224 picture, LLaVA 576, Gemma 3 256.
const (
	minVisionTokens = 16
	minVisionSide   = 224
)

// ImageNote says what the prompt tokens a server counted for pictures of
// sizes ("WxH" each) suggest, or "": a server that counted none, or fewer
// than any vision model spends on pictures that large, likely did not
// give them to a vision encoder (a text-only model's server may put a
// placeholder in their place, as Ollama does).
func ImageNote(tokens int, sizes []string) string {
	if len(sizes) == 0 {
		return ""
	}
	if tokens == 0 {
		return "the server reported no prompt tokens for the images of -image: the runs' input tokens may not hold them"
	}
	for _, s := range sizes {
		ps, err := picture.ParseSizes(s)
		if err != nil || len(ps) != 1 || min(ps[0].W, ps[0].H) < minVisionSide {
			return ""
		}
	}
	if tokens < minVisionTokens*len(sizes) {
		return fmt.Sprintf("the server counted %d prompt tokens for %d pictures of at least %dx%d pixels, fewer than any vision model spends on them: the model likely did not see them (a text-only model's server may put a placeholder in their place, as Ollama does)", tokens, len(sizes), minVisionSide, minVisionSide)
	}
	return ""
}

// countImages measures the prompt tokens of the images every request of
// mix carries (-image, of sizes) into res.ImageTokens, with a note when
// they look unseen, and notes a dataset's own images, which are counted
// in each request's input tokens and not apart.
func countImages(ctx context.Context, client *loadgen.Client, mix *workload.Mix, sizes []string, res *sweep.Results) error {
	b := &mix.Builder
	if len(b.Images) > 0 {
		var err error
		if res.ImageTokens, err = ImageTokens(ctx, client, b.API, b.Model, b.Images, b.Extra); err != nil {
			return err
		}
		if note := ImageNote(res.ImageTokens, sizes); note != "" {
			res.Notes = append(res.Notes, note)
		}
	}
	if mix.Dataset != nil && mix.Dataset.Images > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d of the dataset's %d records carry images: the server counts them in each request's input tokens, not measured apart (an image's tokens depend on its size)", mix.Dataset.Images, mix.Dataset.Records))
	}
	return nil
}
