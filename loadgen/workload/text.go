package workload

import (
	"math"
	"math/rand/v2"
	"strings"

	"github.com/llmload/llmload/internal/simtokens"
	"github.com/llmload/llmload/internal/sizing"
)

// Sizing says how many tokens a server counts in the text this package
// writes, so that a request's prompt is the size asked for. The zero
// Sizing is the simulator's completions API: one token a word, nothing
// added. [SimulatorSizing] gives the simulator's chat template;
// [Calibrate] measures a real server.
type Sizing struct {
	// TokensPerWord is what one word of the vocabulary costs; 0 means 1.
	TokensPerWord float64 `json:"tokens_per_word,omitempty"`
	// MessageTokens is what a chat template adds around each message.
	MessageTokens int `json:"message_tokens,omitempty"`
	// ReplyTokens is what a request adds once: the chat template's opening
	// of the reply, or a beginning-of-sequence token.
	ReplyTokens int `json:"reply_tokens,omitempty"`
}

// SimulatorSizing returns the sizing of the simulator's tokenizer for a
// chat API (chat true) or its completions API: one token a word, and the
// chat template's 5 tokens a message and 3 a request.
func SimulatorSizing(chat bool) Sizing {
	if !chat {
		return Sizing{TokensPerWord: 1}
	}
	return Sizing{TokensPerWord: 1, MessageTokens: simtokens.MessageTokens, ReplyTokens: simtokens.ReplyTokens}
}

func (s Sizing) perWord() float64 {
	if s.TokensPerWord > 0 {
		return s.TokensPerWord
	}
	return 1
}

// overhead returns the tokens a request of messages messages adds to its
// text.
func (s Sizing) overhead(messages int) int {
	return s.MessageTokens*messages + s.ReplyTokens
}

// words returns how many words make text of tokens tokens: at least 1 for
// a positive count.
func (s Sizing) words(tokens int) int {
	if tokens <= 0 {
		return 0
	}
	return max(int(math.Round(float64(tokens)/s.perWord())), 1)
}

// tokens returns the tokens of words words of the vocabulary.
func (s Sizing) tokens(words int) int {
	return int(math.Round(float64(words) * s.perWord()))
}

// textTokensPerWord estimates the tokens of a word of natural text, for a
// dataset's reply whose length gives a request's output length: about
// four tokens for every three words of English in BPE vocabularies.
const textTokensPerWord = 4.0 / 3

// estimateTokens estimates the tokens of natural text, such as a dataset's
// reference reply, without the server's tokenizer: four for every three
// words, at least one for text with a word.
func estimateTokens(text string) int {
	n := 0
	for range strings.FieldsSeq(text) {
		n++
	}
	if n == 0 {
		return 0
	}
	return max(int(math.Round(float64(n)*textTokensPerWord)), 1)
}

// writeWords appends n words of the vocabulary drawn from rng to b, each
// after a space but the first when b is empty.
func writeWords(b *strings.Builder, n int, rng *rand.Rand) { sizing.WriteWords(b, n, rng) }

// newRand returns a generator seeded by two numbers.
func newRand(a, b uint64) *rand.Rand { return sizing.NewRand(a, b) }

// Text returns words words of the vocabulary (common English words, each
// one token with its leading space in the usual BPE vocabularies and one
// under the simulator's tokenizer) drawn from seed: the same seed gives
// the same text, and different seeds texts that share no prefix a prefix
// cache would find (the chance that two begin with the same 16 words is
// below 10⁻³⁹).
func Text(words int, seed uint64) string { return sizing.Text(words, seed) }
