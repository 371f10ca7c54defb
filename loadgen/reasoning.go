package loadgen

import "bytes"

// thinkState is where a response stands in <think>…</think> sent inline
// in its text, by servers that do not split reasoning from the answer.
type thinkState uint8

const (
	thinkUnknown thinkState = iota // no text yet
	thinkInside                    // the text opened with <think> and has not closed it
	thinkAfter                     // the answer: no <think> at the start, or past </think>
)

// reasoningSplit tells a response's reasoning tokens from its answer tokens
// as its chunks arrive: by the delta's kind (reasoning_content, reasoning,
// Responses' reasoning events, Messages' thinking blocks), and in text
// that opens with <think>, by the tags. The usage's reasoning_tokens, where
// the server reports them, settle the count at the end.
type reasoningSplit struct {
	think     thinkState
	last      bool // the last chunk with tokens was reasoning
	usage     int64
	usageSeen bool
}

// split returns how many of the k tokens handed out for ch were reasoning.
// Tokens on a chunk with no visible delta (a final usage's growth) are of
// the kind that came last.
func (rs *reasoningSplit) split(ch *chunk, k int) int {
	if ch.hasReasoning {
		rs.usage, rs.usageSeen = ch.reasoningUsage, true
	}
	if k <= 0 {
		return 0
	}
	r := 0
	switch {
	case ch.tokens == 0:
		if rs.last {
			r = k
		}
	case ch.reasoningTokens >= ch.tokens:
		r = k
	case ch.reasoningTokens > 0:
		r = min(k, ch.reasoningTokens)
	case ch.content != nil && rs.think != thinkAfter:
		if rs.inThink(ch.content) {
			r = k
		}
	default:
		rs.think = thinkAfter
	}
	rs.last = r == k
	return r
}

// inThink reads a text delta while the response may still be thinking
// inline, and reports whether the delta is reasoning. A delta that closes
// </think> is reasoning unless answer text follows the tag in it.
func (rs *reasoningSplit) inThink(raw []byte) bool {
	text := unquote(raw)
	if rs.think == thinkUnknown {
		t := bytes.TrimLeft(text, " \t\r\n")
		switch {
		case len(t) == 0:
			return false // white space before anything: wait
		case bytes.HasPrefix(t, openThink):
			rs.think = thinkInside
			text = t[len(openThink):]
		case bytes.HasPrefix(openThink, t):
			rs.think = thinkInside // the tag split over deltas
			return true
		default:
			rs.think = thinkAfter
			return false
		}
	}
	i := bytes.Index(text, closeThink)
	if i < 0 {
		return true
	}
	rs.think = thinkAfter
	return len(bytes.TrimSpace(text[i+len(closeThink):])) == 0
}

var openThink, closeThink = []byte("<think>"), []byte("</think>")

// unquote returns a raw JSON string's text: a slice of it when it holds no
// escape, decoded otherwise.
func unquote(raw []byte) []byte {
	if len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	return []byte(decodeString(raw))
}

// reasoningTokens returns the response's reasoning tokens: the usage's,
// where reported, else counted, at most its output.
func (rs *reasoningSplit) reasoningTokens(counted, output int) int {
	if rs.usageSeen {
		counted = int(min(rs.usage, int64(output)))
	}
	return max(min(counted, output), 0)
}
