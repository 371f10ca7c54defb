package workload

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// ErrUncalibrated reports a server whose prompt sizes could not be
// measured: it reported no usable prompt usage.
var ErrUncalibrated = errors.New("workload: the server's prompt sizes cannot be measured")

// Calibration sizes: a short text, and one of calibrateWords words,
// within any server's context.
const (
	calibrateShort = 16
	calibrateWords = 512
)

// Calibrate measures the [Sizing] of a server from the prompt usage it
// reports for a few requests of one output token each: a short and a long
// text as one message, and, on the chat API, the short text as two
// messages. Every OpenAI-compatible server reports prompt_tokens; a
// server that reports none, or counts that do not grow with the text, is
// [ErrUncalibrated].
func Calibrate(ctx context.Context, c *loadgen.Client, api loadgen.API, model string) (Sizing, error) {
	count := func(msgs ...loadgen.Message) (int, error) {
		b := Builder{API: api, Model: model, Usage: loadgen.UsageFinal}
		req := b.Request(Item{Messages: msgs, OutputTokens: 1})
		var tl metrics.Timeline
		if err := c.Measure(ctx, req, &tl, nil); err != nil {
			return 0, fmt.Errorf("workload: calibrate prompt sizes: %w", err)
		}
		if tl.PromptTokens <= 0 {
			return 0, fmt.Errorf("%w: it reported no prompt_tokens", ErrUncalibrated)
		}
		return tl.PromptTokens, nil
	}
	user := func(words int, seed uint64) loadgen.Message {
		return loadgen.Message{Role: "user", Content: Text(words, seed)}
	}
	short, err := count(user(calibrateShort, 1))
	if err != nil {
		return Sizing{}, err
	}
	long, err := count(user(calibrateWords, 2))
	if err != nil {
		return Sizing{}, err
	}
	perWord := float64(long-short) / float64(calibrateWords-calibrateShort)
	if !(perWord > 0.2 && perWord < 20) {
		return Sizing{}, fmt.Errorf("%w: %d words counted %d tokens and %d words %d", ErrUncalibrated, calibrateShort, short, calibrateWords, long)
	}
	base := int(math.Round(float64(short) - perWord*calibrateShort)) // the template's tokens for one message
	s := Sizing{TokensPerWord: perWord, ReplyTokens: max(base, 0)}
	if api != loadgen.Completions {
		two, err := count(loadgen.Message{Role: "system", Content: Text(calibrateShort/2, 3)}, user(calibrateShort/2, 4))
		if err != nil {
			return Sizing{}, err
		}
		// Two messages of the same words add one message's template.
		s.MessageTokens = max(two-short, 0)
		s.ReplyTokens = max(base-s.MessageTokens, 0)
	}
	return s, nil
}
