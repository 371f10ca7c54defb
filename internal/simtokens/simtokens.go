// Package simtokens is the simulated server's tokenizer as its tests and
// its clients' tests see it: how many tokens a text holds, what the chat
// template adds, and prompts of an exact size.
//
// github.com/llmload/llmload/loadgen/loadgentest counts with it; a user
// who wants text of a given size under that tokenizer writes
// workload.Text, and workload.SimulatorSizing gives the template's cost.
package simtokens

import (
	"encoding/hex"
	"hash/fnv"
	"strings"
)

// The chat template's cost in tokens, as with Qwen's ChatML template: each
// message is wrapped as "<|im_start|>" role "\n" content "<|im_end|>" "\n",
// and the reply opens with "<|im_start|>" "assistant" "\n". A chat request
// whose one user message holds N tokens therefore has N+8 prompt tokens.
const (
	MessageTokens = 5 // tokens the template adds around each message
	ReplyTokens   = 3 // tokens of the assistant header that opens the reply
)

// Count returns the number of tokens in text under the simulator's
// tokenizer: each maximal run of non-white-space characters is one token.
func Count(text string) int {
	n := 0
	for range strings.FieldsSeq(text) {
		n++
	}
	return n
}

// Prompt returns a prompt of exactly n tokens whose first token is derived
// from seed, so prompts with different seeds share no prefix-cache block,
// while two calls with the same arguments return the same prompt. Its
// words after the first are Words in turn.
func Prompt(n int, seed string) string {
	if n <= 0 {
		return ""
	}
	h := fnv.New64a()
	h.Write([]byte(seed))
	var b strings.Builder
	b.Grow(n * 7)
	b.WriteString("p")
	b.WriteString(hex.EncodeToString(h.Sum(nil)))
	for i := 1; i < n; i++ {
		b.WriteByte(' ')
		b.WriteString(Words[i%len(Words)])
	}
	return b.String()
}

// Words is the simulator's vocabulary for prompts and generated text.
var Words = strings.Fields(`the of and to in is that it for on with as was at by an be this
from or are not have but had his they you which one were her all she there would their
we him been has when who will more no if out so said what up its about into than them can
only other new some could time these two may then do first any my now such like our over
man me even most made after also did many before must through back years where much your
way well down should because each just those people how too little state good very make`)
