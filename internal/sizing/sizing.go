// Package sizing writes prompt text and sizes it as a server counts it:
// the one word list, calibration and resize rule that
// github.com/llmload/llmload/loadgen/workload and
// github.com/llmload/llmload/matrix build their prompts with.
package sizing

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// vocabulary holds the words prompts are made of: common English words,
// each one token with its leading space in the usual BPE vocabularies, and
// one token under the simulator's tokenizer.
var vocabulary = strings.Fields(`the of and to in is was for that on with as at by from his
her they this are had not but have were which one you all she their there been has when who
will more no if out so said what up its about into than them can only other new some time
could these two may then first any like now my such over our even most made after also did
many before must through back years where much your way well down should because each just
those people how too little state good very make world still own see men work long here get
both between life being under never day same another know while last might us great old year
off come since against go came right used take three house water light river city garden
morning evening window stone bridge forest mountain harbor letter story music paper market
winter summer valley island station engine signal number table chair door road field`)

// WriteWords appends n words drawn from rng to b, each after a space but
// the first when b is empty.
func WriteWords(b *strings.Builder, n int, rng *rand.Rand) {
	for range n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocabulary[rng.IntN(len(vocabulary))])
	}
}

// NewRand returns a generator seeded by two numbers.
func NewRand(a, b uint64) *rand.Rand {
	return rand.New(rand.NewPCG(a, b^0x9e3779b97f4a7c15))
}

// Text returns words words drawn from seed: the same seed gives the same
// text, and different seeds texts that share no prefix a prefix cache
// would find (the chance that two begin with the same 16 words is below
// 10⁻³⁹).
func Text(words int, seed uint64) string {
	var b strings.Builder
	b.Grow(words * 7)
	WriteWords(&b, words, NewRand(seed, 0x7e57))
	return b.String()
}

// Headed returns head, then a space and words words drawn from seed: a
// prompt whose head makes it unique.
func Headed(head string, words int, seed uint64) string {
	switch {
	case head == "":
		return Text(words, seed)
	case words <= 0:
		return head
	}
	return head + " " + Text(words, seed)
}

// Rate is how a server counts text of this package: Base + PerWord ×
// words tokens for a request of words words.
type Rate struct {
	PerWord float64
	Base    float64
}

// Words is the word count of a request of target tokens, at least 1.
func (r Rate) Words(target int) int {
	return max(int(math.Round((float64(target)-r.Base)/r.PerWord)), 1)
}

// Tokens is the expected count of a request of words words.
func (r Rate) Tokens(words int) int {
	return int(math.Round(r.Base + r.PerWord*float64(words)))
}

// Resize returns the word count of a prompt of words words, counted as
// counted tokens where target were wanted: corrected by the prompt's own
// tokens a word (its count less base, the tokens a request adds to its
// words, over its words) or, given an earlier attempt of prevWords words
// counted as prevCounted, by the rate between the two where they are at
// least minRateWords apart and that rate is within a factor of two of the
// prompt's own (a tokenizer whose rate grows with length). Two attempts a
// few words apart measure the rate of those few words only, which on a
// vocabulary whose words count unevenly is off by a factor of two or
// more: a small difference steps by the prompt's own rate, about the
// words it is worth, and one of less than two words moves one word.
func Resize(target, counted, words int, base float64, prevWords, prevCounted int) int {
	rate := (float64(counted) - base) / float64(max(words, 1))
	if !(rate > 0) {
		rate = 1
	}
	if apart := abs(words - prevWords); prevWords > 0 && apart >= minRateWords && prevCounted != counted {
		if between := float64(counted-prevCounted) / float64(words-prevWords); between >= rate/2 && between <= 2*rate {
			rate = between
		}
	}
	d := float64(target-counted) / rate
	step := int(math.Round(d))
	if math.Abs(d) < 2 && counted != target {
		// Within two words, which word comes next decides: one word
		// at a time does not overshoot by a long one.
		step = 1
		if counted > target {
			step = -1
		}
	}
	return max(words+step, 1)
}

// minRateWords is how many words apart two attempts must be for the rate
// between their counts to say more than the prompt's own: over 32 words,
// words that count one to eight tokens average out to within a tenth.
const minRateWords = 32

func abs(x int) int { return max(x, -x) }

// Send sends one request and returns its timeline.
type Send func(ctx context.Context, req *loadgen.Request) (*metrics.Timeline, error)

// ErrUncounted reports a server whose prompt sizes cannot be measured: it
// reports no usable prompt usage.
var ErrUncounted = errors.New("the server's prompt sizes cannot be measured")

// Calibration sizes: a small request, then one of about calibrateTokens
// tokens (at most half of max_model_len), then one of half its words to
// check that the server counted the larger one in full.
const (
	calibrateSmallWords = 16
	calibrateTokens     = 1024
	// linearTolerance is how much lower the tokens per word of the larger
	// request's second half may be than its first half's: random words
	// vary by a few percent, a server that cut the request by more.
	linearTolerance = 0.2
)

// Calibrate measures tokens per word from the prompt usage of small
// requests (max_tokens 1) of text(words) as one user message, each well
// within the server's context (a quarter of maxModelLen, when it is
// known), so that the fixed overhead of a chat template cancels out. It
// checks that the counts lie on a line: the larger request's second half
// must count about as many tokens a word as its first half, which a
// server that truncated it would break; then the requests shrink. It
// never calibrates from a response the server may have truncated. An
// error is ErrUncounted when the server's counts say nothing, or the
// request's own.
func Calibrate(ctx context.Context, send Send, api loadgen.API, model string, maxModelLen int, text func(words int) string) (Rate, error) {
	usage := func(words int) (int, error) {
		req := &loadgen.Request{API: api, Model: model, Prompt: text(words), MaxTokens: 1, Usage: loadgen.UsageFinal}
		switch api {
		case loadgen.Embeddings:
			req = &loadgen.Request{API: api, Model: model, Prompt: text(words)}
		case loadgen.Rerank:
			// The query grows; one document of one word stays.
			req = &loadgen.Request{API: api, Model: model, Prompt: text(words), Documents: []string{text(1)}}
		}
		tl, err := send(ctx, req)
		if err != nil {
			return 0, fmt.Errorf("calibrate prompt sizes: %w", err)
		}
		if tl.PromptTokens <= 0 {
			return 0, fmt.Errorf("%w: it reports no prompt usage", ErrUncounted)
		}
		return tl.PromptTokens, nil
	}
	small := calibrateSmallWords
	a, err := usage(small)
	if err != nil {
		return Rate{}, err
	}
	budget := calibrateTokens
	if maxModelLen > 0 {
		budget = min(budget, maxModelLen/2)
	}
	large := max(small*budget/max(a, 1), 2*small)
	for range 4 {
		if large < 3*small {
			return Rate{}, fmt.Errorf("%w: no calibration request of %d words or more fit whole in the server's context (%d words counted %d tokens)", ErrUncounted, 3*small, small, a)
		}
		b, err := usage(large)
		if err != nil {
			return Rate{}, err
		}
		mid := (small + large) / 2
		c, err := usage(mid)
		if err != nil {
			return Rate{}, err
		}
		perWord := float64(b-a) / float64(large-small)
		first := float64(c-a) / float64(mid-small)
		second := float64(b-c) / float64(large-mid)
		if perWord > 0 && second >= (1-linearTolerance)*first && (maxModelLen <= 0 || b < maxModelLen) {
			return Rate{PerWord: perWord, Base: float64(a) - perWord*float64(small)}, nil
		}
		large /= 2 // the server may have cut the larger request: stay further within its context
	}
	return Rate{}, fmt.Errorf("%w: prompt usage did not grow with the prompt (%d tokens for %d words)", ErrUncounted, a, small)
}
