package workload

import (
	"context"
	"fmt"
	"math"

	"github.com/llmload/llmload/internal/sizing"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// ErrUncalibrated reports a server whose prompt sizes could not be
// measured: it reported no usable prompt usage.
var ErrUncalibrated = sizing.ErrUncounted

// calibrateSeed draws the calibration requests' text.
const calibrateSeed = 0xca11

// Calibrate measures the [Sizing] of a server from the prompt usage it
// reports for a few requests of one output token each: texts of a few
// words to about a thousand tokens as one message (within half the
// server's context where it publishes none, and checked to lie on a line,
// so that a server that cut the longest is not believed), and, on every
// API that sends messages, a short text as two messages; on Embeddings,
// texts to embed, and on Rerank, queries against a one-word document
// (whose tokens, and those of the rerank template, count once a request).
// Every OpenAI-compatible server
// reports prompt_tokens; a server that reports none, or counts that do
// not grow with the text, is [ErrUncalibrated].
func Calibrate(ctx context.Context, c *loadgen.Client, api loadgen.API, model string) (Sizing, error) {
	send := func(ctx context.Context, req *loadgen.Request) (*metrics.Timeline, error) {
		tl := &metrics.Timeline{}
		return tl, c.Measure(ctx, req, tl, nil)
	}
	rate, err := sizing.Calibrate(ctx, send, api, model, 0, func(words int) string { return Text(words, calibrateSeed) })
	if err != nil {
		return Sizing{}, fmt.Errorf("workload: %w", err)
	}
	if !(rate.PerWord > 0.2 && rate.PerWord < 20) {
		return Sizing{}, fmt.Errorf("workload: %w: a word of its vocabulary counted %.2f tokens", ErrUncalibrated, rate.PerWord)
	}
	base := int(math.Round(rate.Base)) // the template's tokens for one message
	s := Sizing{TokensPerWord: rate.PerWord, ReplyTokens: max(base, 0)}
	if api != loadgen.Completions && api != loadgen.Embeddings && api != loadgen.Rerank {
		const words = 16
		b := Builder{API: api, Model: model, Usage: loadgen.UsageFinal}
		req := b.Request(Item{Messages: []loadgen.Message{
			{Role: "system", Content: Text(words/2, 3)}, {Role: "user", Content: Text(words/2, 4)},
		}, OutputTokens: 1})
		tl, err := send(ctx, req)
		if err != nil {
			return Sizing{}, fmt.Errorf("workload: calibrate prompt sizes: %w", err)
		}
		if tl.PromptTokens <= 0 {
			return Sizing{}, fmt.Errorf("workload: %w: it reported no prompt_tokens", ErrUncalibrated)
		}
		// Two messages of the same words add one message's template.
		s.MessageTokens = max(tl.PromptTokens-rate.Tokens(words), 0)
		s.ReplyTokens = max(base-s.MessageTokens, 0)
	}
	return s, nil
}
