package chunk

import (
	"bytes"
)

// thinkState is where a response stands in <think>…</think> sent inline
// in its text, by servers that do not split reasoning from the answer.
type thinkState uint8

const (
	thinkUnknown thinkState = iota // no text yet
	thinkInside                    // the text opened with <think> and has not closed it
	thinkAfter                     // the answer: no <think> at the start, or past </think>
)

// ReasoningSplit tells a response's reasoning tokens from its answer tokens
// as its chunks arrive: by the delta's kind (reasoning_content, reasoning,
// Responses' reasoning events, Messages' thinking blocks), and in text
// that opens with <think>, by the tags. The usage's reasoning_tokens, where
// the server reports them, settle the count at the end.
type ReasoningSplit struct {
	think thinkState
	// carry holds the end of the text so far that may begin the tag
	// looked for, when a delta ended inside it.
	carry     [len("</think>") - 1]byte
	carryN    uint8
	last      bool // the last chunk with tokens was reasoning
	usage     int64
	usageSeen bool
}

// Split returns how many of the k tokens handed out for ch were reasoning.
// Tokens on a chunk with no visible delta (a final usage's growth) are of
// the kind that came last.
func (rs *ReasoningSplit) Split(ch *Chunk, k int) int {
	if ch.HasReasoning {
		rs.usage, rs.usageSeen = ch.ReasoningUsage, true
	}
	if k <= 0 {
		return 0
	}
	r := 0
	switch {
	case ch.Tokens == 0:
		if rs.last {
			r = k
		}
	case ch.ReasoningTokens >= ch.Tokens:
		r = k
	case ch.ReasoningTokens > 0:
		r = min(k, ch.ReasoningTokens)
	case ch.Content != nil && rs.think != thinkAfter:
		if rs.inThink(ch.Content) {
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
// </think> is reasoning unless answer text follows the tag in it. Either
// tag may come split over any number of deltas ("</th", "ink>"): the part
// that may begin one is carried to the next delta. Text that may yet be
// <think> ("<th") counts as reasoning; if the text goes on otherwise, the
// answer starts with the delta that shows it.
func (rs *ReasoningSplit) inThink(raw []byte) bool {
	text := unquote(raw)
	if rs.think == thinkUnknown {
		rest, reasoning := rs.opening(text)
		if rs.think != thinkInside {
			return reasoning
		}
		text = rest
	}
	after, found := rs.closing(text)
	if !found {
		return true
	}
	rs.think = thinkAfter
	return len(bytes.TrimSpace(after)) == 0
}

// opening reads text before the response has shown whether it opens with
// <think>. Once the tag is whole it moves to thinkInside and returns the
// text after the tag; text that starts otherwise moves it to thinkAfter.
// Until then, white space before anything is not reasoning, and a start
// of the tag is.
func (rs *ReasoningSplit) opening(text []byte) (rest []byte, reasoning bool) {
	if rs.carryN == 0 {
		if text = bytes.TrimLeft(text, " \t\r\n"); len(text) == 0 {
			return nil, false // white space before anything: wait
		}
	}
	var buf [len("<think>")]byte
	n := copy(buf[:], rs.carry[:rs.carryN])
	m := copy(buf[n:], text)
	head := buf[:n+m]
	rs.carryN = 0
	switch {
	case bytes.Equal(head, openThink):
		rs.think = thinkInside
		return text[m:], true
	case bytes.HasPrefix(openThink, head): // the tag split over deltas
		rs.carryN = uint8(copy(rs.carry[:], head))
		return nil, true
	}
	rs.think = thinkAfter
	return nil, false
}

// closing looks for </think> in text, after what was carried from the
// deltas before, and returns the text after it. When the tag is not there
// it carries the end of the text that may begin it.
func (rs *ReasoningSplit) closing(text []byte) (after []byte, found bool) {
	var buf [2 * len("</think>")]byte
	n := copy(buf[:], rs.carry[:rs.carryN])
	m := copy(buf[n:], text[:min(len(text), len(closeThink)-1)])
	if n > 0 {
		if i := bytes.Index(buf[:n+m], closeThink); i >= 0 {
			rs.carryN = 0
			return text[i+len(closeThink)-n:], true
		}
	}
	if i := bytes.Index(text, closeThink); i >= 0 {
		rs.carryN = 0
		return text[i+len(closeThink):], true
	}
	tail := text
	if len(text) < len(closeThink)-1 {
		tail = buf[:n+m] // the carry and the whole of text
	}
	rs.carryN = 0
	for k := min(len(tail), len(closeThink)-1); k > 0; k-- {
		if end := tail[len(tail)-k:]; bytes.HasPrefix(closeThink, end) {
			rs.carryN = uint8(copy(rs.carry[:], end))
			break
		}
	}
	return nil, false
}

var openThink, closeThink = []byte("<think>"), []byte("</think>")

// unquote returns a raw JSON string's text: a slice of it when it holds no
// escape, decoded otherwise.
func unquote(raw []byte) []byte {
	if len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	return []byte(DecodeString(raw))
}

// Tokens returns the response's reasoning tokens: the usage's,
// where reported, else counted, at most its output; and over, how many the
// usage claimed beyond the output, which cannot be true (0 when none).
func (rs *ReasoningSplit) Tokens(counted, output int) (tokens, over int) {
	if rs.usageSeen {
		if rs.usage > int64(output) {
			over = int(rs.usage - int64(output)) // both at most maxReportedTokens
		}
		counted = int(min(rs.usage, int64(output)))
	}
	return max(min(counted, output), 0), over
}
