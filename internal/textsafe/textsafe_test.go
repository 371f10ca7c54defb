package textsafe_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/llmload/llmload/internal/textsafe"
)

// hostileText is what a hostile server puts in an error message: clear the
// screen, retitle the window, write the clipboard, 8-bit CSI, a DCS, a
// carriage return that overwrites the line, a bidirectional override.
const hostileText = "bad\x1b[2J\x1b[H request\x1b]0;pwned\x07 here\x1b]52;c;ZWNobyBwd25lZA==\x1b\\ now" +
	"\u009b31m red\x1bP1$r q\x1b\\ \r\x1bcdone\u202e olleh\x00\xff"

func TestLine(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "server returned 500: boom", "server returned 500: boom"},
		{"hostile", hostileText, "bad request here now red done olleh"},
		{"colors", "\x1b[31mred\x1b[0m error\nand\tmore", "red error and more"},
		{"unterminated OSC", "title\x1b]0;never ends", "title"},
		{"OSC cut by another sequence", "a\x1b]0;t\x1b[2Jb", "ab"},
		{"lone ESC at the end", "end\x1b", "end"},
		{"unicode kept", "modèle 日本語 ▲", "modèle 日本語 ▲"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, textsafe.Line(tc.in))
		})
	}
}

// TestStart: a body is quoted up to its limit, cleaned, with "…" when
// cut, and never ends in half a character.
func TestStart(t *testing.T) {
	assert.Equal(t, "SSH-2.0-OpenSSH", textsafe.Start([]byte("SSH-2.0-OpenSSH"), 64))
	assert.Equal(t, "abc…", textsafe.Start([]byte("abcdef"), 3))
	assert.Equal(t, "a b", textsafe.Start([]byte("a\x1b[2J\r\nb"), 64))
	assert.Equal(t, "ab…", textsafe.Start([]byte("ab日本"), 4), "日 is cut at its second byte and dropped")
	assert.Equal(t, "…", textsafe.Start([]byte("abc"), 0))
}

func TestText(t *testing.T) {
	got := textsafe.Text("line one\x1b[2J\r\n\tline two\x1b]52;c;eA==\x07\u009b1;1H end")
	assert.Equal(t, "line one\n\tline two end", got)
	assert.Equal(t, "already clean\n", textsafe.Text("already clean\n"))
}

// printable reports what in s a terminal could act on, or "".
func printable(s string, multiline bool) string {
	if !utf8.ValidString(s) {
		return "invalid UTF-8"
	}
	for _, r := range s {
		if multiline && (r == '\n' || r == '\t') {
			continue
		}
		if unicode.IsControl(r) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return "control character " + string(strings.ToValidUTF8(string(r), "?"))
		}
	}
	return ""
}

// FuzzLine checks that nothing a terminal acts on survives cleaning,
// and that cleaning twice changes nothing more.
func FuzzLine(f *testing.F) {
	for _, s := range []string{hostileText, "plain", "\x1b[", "\x1b]", "\u009d0;x", "a\tb\nc\r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line := textsafe.Line(s)
		if why := printable(line, false); why != "" {
			t.Fatalf("CleanLine(%q) = %q: %s", s, line, why)
		}
		if again := textsafe.Line(line); again != line {
			t.Fatalf("CleanLine is not idempotent: %q then %q", line, again)
		}
		text := textsafe.Text(s)
		if why := printable(text, true); why != "" {
			t.Fatalf("CleanText(%q) = %q: %s", s, text, why)
		}
	})
}
