package workload

import (
	"fmt"
	"strings"

	"github.com/llmload/llmload/loadgen"
)

// Synthetic makes requests of random text whose input and output lengths
// are drawn from distributions, as vLLM's random dataset does, optionally
// beginning with a system prompt shared by a group of requests, as a
// prefix cache sees a deployment's common instructions.
//
// Item i is the same for the same Synthetic, whoever asks and in whatever
// order; different items share no text but their group's prefix.
type Synthetic struct {
	// Input is the prompt's length as the server counts it: template and
	// shared prefix included. Required.
	Input Length
	// Output is the output's length; nil leaves it to the server.
	Output Length
	// Prefix is a system prompt shared by groups of requests; its zero
	// value shares nothing.
	Prefix SharedPrefix
	// Sizing converts lengths to words; its zero value is the simulator's
	// completions API.
	Sizing Sizing
	// Seed makes the text and the lengths; two Synthetics with different
	// seeds share no text. 0 means a fresh one, which Reader stores here.
	Seed uint64
}

// SharedPrefix describes system prompts shared by groups of requests.
type SharedPrefix struct {
	// Groups is how many distinct prefixes there are; request i has
	// prefix i mod Groups. 0 means no shared prefix.
	Groups int `json:"groups,omitempty"`
	// Tokens is each prefix's length, its message's template included.
	Tokens int `json:"tokens,omitempty"`
}

// Validate reports a Synthetic that cannot make requests.
func (s *Synthetic) Validate() error {
	var errs []string
	if s.Input == nil {
		errs = append(errs, "Input is nil: set a Length, such as Fixed(512)")
	} else if s.Input.Mean() < 1 {
		errs = append(errs, fmt.Sprintf("Input %v has no token: a prompt needs at least one", s.Input))
	}
	if s.Prefix.Groups < 0 || s.Prefix.Tokens < 0 {
		errs = append(errs, fmt.Sprintf("Prefix %+v cannot be negative", s.Prefix))
	}
	if s.Prefix.Groups > 0 && s.Prefix.Tokens <= s.Sizing.MessageTokens {
		errs = append(errs, fmt.Sprintf("Prefix.Tokens %d leaves no text beside the template's %d tokens a message", s.Prefix.Tokens, s.Sizing.MessageTokens))
	}
	if need := s.Prefix.Tokens + s.Sizing.overhead(1) + 1; s.Prefix.Groups > 0 && s.Input != nil && s.Input.Mean() < float64(need) {
		errs = append(errs, fmt.Sprintf("Input %v is shorter than the shared prefix's %d tokens and a question: prompts would be longer than asked; give Input a mean of %d or more", s.Input, s.Prefix.Tokens, need))
	}
	if !(s.Sizing.TokensPerWord >= 0) || s.Sizing.MessageTokens < 0 || s.Sizing.ReplyTokens < 0 {
		errs = append(errs, fmt.Sprintf("Sizing %+v cannot be negative", s.Sizing))
	}
	if len(errs) > 0 {
		return fmt.Errorf("workload: Synthetic.%s", strings.Join(errs, "; "))
	}
	return nil
}

// Item returns item i.
func (s *Synthetic) Item(i int) Item {
	rng := newRand(s.Seed, uint64(i))
	input := s.Input.Draw(rng)
	var out int
	if s.Output != nil {
		out = s.Output.Draw(rng)
	}
	var msgs []loadgen.Message
	var prefixTokens int
	if s.Prefix.Groups > 0 {
		g := i % s.Prefix.Groups
		words := s.Sizing.words(s.Prefix.Tokens - s.Sizing.MessageTokens)
		msgs = append(msgs, loadgen.Message{Role: "system", Content: Text(words, s.Seed^0x5eed0000^uint64(g)<<20)})
		prefixTokens = s.Sizing.MessageTokens + s.Sizing.tokens(words)
	}
	own := input - prefixTokens - s.Sizing.MessageTokens - s.Sizing.ReplyTokens
	words := s.Sizing.words(max(own, 1))
	var b strings.Builder
	b.Grow(words * 7)
	writeWords(&b, words, rng)
	msgs = append(msgs, loadgen.Message{Role: "user", Content: b.String()})
	return Item{
		Messages:     msgs,
		InputTokens:  prefixTokens + s.Sizing.MessageTokens + s.Sizing.ReplyTokens + s.Sizing.tokens(words),
		OutputTokens: out,
	}
}

// Reader returns a Reader of items 0, 1, 2 and on, without end.
func (s *Synthetic) Reader() Reader {
	if s.Seed == 0 {
		s.Seed = freshSeed()
	}
	return &synthReader{s: s}
}

type synthReader struct {
	s *Synthetic
	i int
}

func (r *synthReader) Read() (Item, error) {
	it := r.s.Item(r.i)
	r.i++
	return it, nil
}
