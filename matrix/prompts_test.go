package matrix

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestResizeByTheTwoLatestCounts: a resize steps by the rate between the
// two latest counts only when that rate is near the prompt's own tokens
// per word; two prompts a few words apart whose counts differ by less than
// those words (the head's tokens and the words drawn differ too) say
// little of the rate, and must not send the next prompt far off (the
// figures are Ollama's, with a tiny model: 123 words counted 523 tokens,
// 120 words 521, for 512).
func TestResizeByTheTwoLatestCounts(t *testing.T) {
	var p promptSizer
	_, words := p.Resize(512, 521, 120, 123, 523, "[head]", 1)
	perWord := 521.0 / 120
	assert.InDelta(t, 120-9/perWord, words, 1.5, "stepped by the prompt's own rate, %.2f tokens a word", perWord)

	// Where the two counts agree with the prompt's rate, the step uses
	// theirs: a tokenizer whose rate grows with length.
	_, words = p.Resize(4096, 3518, 2505, 4088, 6676, "[head]", 1)
	assert.InDelta(t, 2505+578/1.995, words, 1.5)
}
