package benchcmd

import (
	"context"
	"fmt"
	"time"

	"github.com/llmload/llmload/loadgen"
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
