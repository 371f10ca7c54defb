package sse

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode"
	"unicode/utf8"

	"github.com/llmload/llmload/internal/nothttp"
	"github.com/llmload/llmload/internal/textsafe"
)

// sampleSize is how much of a body the client quotes (loadgen's rule).
const sampleSize = nothttp.Quote

// FuzzCheckStart checks the look at the start of a body that decides
// whether it is an event stream: it consumes nothing (the events framed
// after it are those framed without it, in one piece or a byte at a time),
// it refuses only a body whose first line, after a byte-order mark and
// blank lines, is neither a field nor a comment, and the start of the body
// it quotes is at most 65 bytes and, once cleaned, one printable line.
func FuzzCheckStart(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n", ": ping\n\ndata: a\n\n", "event: message\ndata: x\n\n", "\xEF\xBB\xBF\r\n\ndata: bom\n\n", "id: 1\nretry: 5\n\n",
		"<!doctype html>\n<html><body>Sign in</body></html>", `{"id":"chatcmpl-1","object":"chat.completion"}`, "", "\n\n\n", "data",
		"dat", "Data: x\n\n", "HTTP/1.1 200 OK\r\n\r\n", strings.Repeat("x", 100), "\x1b[2J\x07\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		if len(input) > 64<<10 {
			return
		}
		want, wantErr := readEvents(bytes.NewReader(input))
		for _, r := range []io.Reader{bytes.NewReader(input), iotest.OneByteReader(bytes.NewReader(input))} {
			er := NewReader(r, 1<<20)
			notSSE, err := er.CheckStart(sampleSize)
			if err != nil {
				t.Fatalf("%q: %v", input, err)
			}
			head := bytes.TrimLeft(bytes.TrimPrefix(input, bom), "\r\n")
			line := head
			if i := lineEnd(head); i >= 0 {
				line = head[:i]
			}
			line = line[:min(len(line), sampleSize+1)]
			if refused := notSSE != nil; refused != (len(head) > 0 && !isFieldLine(line)) {
				t.Fatalf("%q: refused %v, first line %q", input, refused, line)
			}
			if len(notSSE) > sampleSize+1 || !bytes.HasPrefix(head, notSSE) {
				t.Fatalf("%q: quoted %q", input, notSSE)
			}
			if s := textsafe.Start(notSSE, sampleSize); !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool {
				return unicode.IsControl(r) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
			}) {
				t.Fatalf("%q: quoted as %q", input, s)
			}
			var got []string
			for {
				data, err := er.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					if wantErr == nil {
						t.Fatalf("%q: %v after checkStart", input, err)
					}
					break
				}
				if er.ErrorEvent && len(data) > 0 {
					got = append(got, errorMark+string(data))
					continue
				}
				got = append(got, string(data))
			}
			if !equalStrings(want, got) {
				t.Fatalf("%q: framed %q after checkStart, %q without", input, got, want)
			}
		}
	})
}
