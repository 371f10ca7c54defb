package loadgentest

import (
	"strings"

	"github.com/llmload/llmload/internal/simtokens"
)

// Token ids of the template tokens; words get ids from a hash, below them.
const (
	vocabWords  = 151643
	tokImStart  = 151644
	tokImEnd    = 151645
	tokNewline  = 198
	tokRoleBase = 151650 // + index in roles
)

var roles = []string{"system", "user", "assistant", "tool", "developer"}

// words is the simulator's vocabulary for prompts and generated text.
var words = simtokens.Words

// wordToken returns the id of a word token.
func wordToken(w string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(w); i++ {
		h ^= uint32(w[i])
		h *= 16777619
	}
	return h % vocabWords
}

func roleToken(role string) uint32 {
	for i, r := range roles {
		if r == role {
			return tokRoleBase + uint32(i)
		}
	}
	return wordToken(role)
}

// A message is one chat message, its content flattened to text.
type message struct {
	Role, Content string
	images        []visionImage // after the text
}

// visionEnd is where the prompt's last image token ends, as promptTokens
// orders them, or 0 when it has none.
func (p *prompt) visionEnd() int {
	end, n := 0, 0
	for _, m := range p.msgs {
		n += 3 + simtokens.Count(m.Content)
		for _, img := range m.images {
			n += img.tokens
			end = n
		}
		n += 2
	}
	return end
}

// promptTokens calls yield with each token id of a prompt: the text as is
// for completions, or the messages through the chat template.
func promptTokens(text string, msgs []message, chat bool, yield func(id uint32)) {
	if !chat {
		for w := range strings.FieldsSeq(text) {
			yield(wordToken(w))
		}
		return
	}
	for _, m := range msgs {
		yield(tokImStart)
		yield(roleToken(m.Role))
		yield(tokNewline)
		for w := range strings.FieldsSeq(m.Content) {
			yield(wordToken(w))
		}
		for _, img := range m.images {
			for i := range img.tokens {
				yield(visionToken(img, i))
			}
		}
		yield(tokImEnd)
		yield(tokNewline)
	}
	yield(tokImStart)
	yield(roleToken("assistant"))
	yield(tokNewline)
}

// blockHasher chains the hashes of full blocks of token ids, as vLLM's prefix
// cache does: a block's hash covers its tokens and its parent's hash, so equal
// hashes mean equal prefixes.
type blockHasher struct {
	size   int
	n      int // tokens seen
	h      uint64
	hashes []uint64
}

func (b *blockHasher) add(id uint32) {
	const prime = 1099511628211
	if b.n%b.size == 0 {
		b.h = 14695981039346656037
		if k := len(b.hashes); k > 0 {
			b.h = (b.h ^ b.hashes[k-1]) * prime
		}
	}
	b.h = (b.h ^ uint64(id)) * prime
	b.h = (b.h ^ uint64(id>>16)) * prime
	b.n++
	if b.n%b.size == 0 {
		b.hashes = append(b.hashes, b.h|1) // never 0: 0 marks an unhashed block
	}
}
