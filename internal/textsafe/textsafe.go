// Package textsafe makes text from a server safe to print: an error
// message, a model name or a header may carry terminal escape sequences,
// which are removed or escaped before they reach a terminal, a log or a
// report.
package textsafe

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text from a server — an error message, a model's output, a header — is
// data: printed as it is, an escape sequence in it can clear the user's
// terminal, retitle its window, write to its clipboard (OSC 52) or hide
// lines of a log. The errors of llmload write the server's text with
// its control characters escaped ([Escape]); Line and Text strip
// them from text about to be printed, rendered or logged.

// Line returns s made safe for one line of a terminal, a log or a
// table cell: terminal escape sequences (CSI, OSC, DCS and the like, in
// their 7-bit and 8-bit forms) are removed with their parameters, other
// control characters, bidirectional overrides and invalid UTF-8 become
// spaces, and runs of spaces collapse to one.
func Line(s string) string {
	return strings.Join(strings.Fields(clean(s, false)), " ")
}

// Text is Line for text of several lines, such as a model's
// output: it keeps newlines and tabs, drops carriage returns, and leaves
// spaces as they are.
func Text(s string) string { return clean(s, true) }

// clean removes escape sequences and replaces the other control
// characters; multiline keeps '\n' and '\t'.
func clean(s string, multiline bool) string {
	if isPlain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b:
			i = skipEscape(s, i+size)
			continue
		case r == 0x9b: // 8-bit CSI
			i = skipCSI(s, i+size)
			continue
		case r == 0x90 || r == 0x98 || r == 0x9d || r == 0x9e || r == 0x9f: // 8-bit DCS, SOS, OSC, PM, APC
			i = skipString(s, i+size)
			continue
		case multiline && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case multiline && r == '\r':
		case r == utf8.RuneError && size == 1, unicode.IsControl(r), isBidiControl(r):
			b.WriteByte(' ')
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isPlain reports whether s is printable ASCII, which needs no cleaning.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// skipEscape returns the index after the escape sequence whose ESC ends
// at i.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_':
		return skipString(s, i+1)
	}
	// ESC, intermediate bytes, a final byte: "ESC c", "ESC ( B".
	i = skipRun(s, i, 0x20, 0x2f)
	return skipOne(s, i, 0x30, 0x7e)
}

// skipCSI returns the index after a control sequence's parameters,
// intermediates and final byte, starting at i.
func skipCSI(s string, i int) int {
	i = skipRun(s, i, 0x30, 0x3f)
	i = skipRun(s, i, 0x20, 0x2f)
	return skipOne(s, i, 0x40, 0x7e)
}

// skipRun returns the index after the bytes from i on that lie in
// [lo, hi].
func skipRun(s string, i int, lo, hi byte) int {
	for i < len(s) && s[i] >= lo && s[i] <= hi {
		i++
	}
	return i
}

// skipOne returns i+1 when the byte at i lies in [lo, hi], i otherwise.
func skipOne(s string, i int, lo, hi byte) int {
	if i < len(s) && s[i] >= lo && s[i] <= hi {
		return i + 1
	}
	return i
}

// skipString returns the index after a control string (OSC, DCS, ...)
// starting at i: up to and including its terminator, BEL or ST (ESC \ or
// 0x9c), or the end of s when it has none.
func skipString(s string, i int) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x07 || r == 0x9c:
			return i + size
		case r == 0x1b:
			if i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
			return i // a new sequence begins: this one was cut short
		}
		i += size
	}
	return i
}

// Escape returns s fit for one line of a terminal or a log: control
// characters (line breaks, ESC and the rest of C0 and C1, DEL) and the
// Unicode controls that reorder text are written as Go escapes (\x1b,
// \n, \u202e), and invalid UTF-8 as U+FFFD. Printable text is unchanged,
// so a message reads as the server wrote it, and a terminal that shows it
// runs none of its escape sequences.
func Escape(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b == 0x7f || b >= 0x80 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && isInvalidAt(s, i):
			b.WriteRune(utf8.RuneError)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case (r >= 0x80 && r < 0xa0) || isBidiControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isInvalidAt(s string, i int) bool {
	r, size := utf8.DecodeRuneInString(s[i:])
	return r == utf8.RuneError && size <= 1
}

// isBidiControl reports the characters that reorder displayed text
// ("Trojan Source"): ALM, LRM, RLM, the embeddings, overrides and isolates.
func isBidiControl(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// Start returns the start of b as a message quotes it: at most n bytes of
// b, made safe by [Line], with "…" when b holds more. A character cut at
// the n-th byte is dropped whole.
func Start(b []byte, n int) string {
	if len(b) <= n {
		return Line(string(b))
	}
	b = b[:max(n, 0)]
	for i := 0; i < utf8.UTFMax-1 && !utf8.Valid(b); i++ {
		b = b[:len(b)-1] // a character cut at the end
	}
	return Line(string(b)) + "…"
}
