package bodyframe

import (
	"bytes"
	"errors"
	"io"
	"net/http/httputil"
	"testing"
)

// decodeBody runs a Decoder over input in pieces of the given size and
// returns the payload, whether the body ended, and the first error, with
// the end of input taken as the end of the connection.
func decodeBody(input []byte, framing Framing, length uint64, piece int) (payload []byte, ended bool, err error) {
	d := NewDecoder(framing, length)
	for off := 0; off < len(input); off += piece {
		p := bytes.Clone(input[off:min(off+piece, len(input))])
		n, err := d.Decode(p)
		payload = append(payload, p[:n]...)
		if err != nil {
			return payload, d.Ended, err
		}
	}
	if err := d.AtEOF(); err != io.EOF {
		return payload, d.Ended, err
	}
	return payload, d.Ended, nil
}

// FuzzBodyDecoder checks the poller's chunked decoding against net/http's
// (httputil.NewChunkedReader): the same payload up to the last chunk, an
// error wherever net/http finds one, and the same result whether the body
// comes whole, a byte at a time or in pieces of 7 bytes. A Content-Length
// body stops at its length.
func FuzzBodyDecoder(f *testing.F) {
	for _, s := range []string{
		"5\r\nhello\r\n0\r\n\r\n", "3;ext=1\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n", "a \r\n0123456789\r\n0\r\n\r\n",
		"5\nhello\r\n0\r\n\r\n", "5\r\nhelloXX0\r\n\r\n", "zz\r\n", "10000000000000000\r\n", "\r\n", "5\r\nhel",
		"0\r\n", "1\r\na\r\n1\r\nb\r\n0\r\n\r\nextra", "FF\r\n",
	} {
		f.Add([]byte(s), uint16(0))
	}
	f.Add([]byte("hello, world"), uint16(5))
	f.Fuzz(func(t *testing.T, input []byte, length uint16) {
		if len(input) > 64<<10 {
			return
		}
		if length > 0 {
			got, ended, err := decodeBody(input, Length, uint64(length), 3)
			want := input[:min(len(input), int(length))]
			if !bytes.Equal(got, want) || ended != (len(input) >= int(length)) || (err == nil) != ended {
				t.Fatalf("Content-Length %d of %q: %q, ended %v, %v", length, input, got, ended, err)
			}
			return
		}
		whole, ended, err := decodeBody(input, Chunked, 0, len(input)+1)
		for _, piece := range []int{1, 7} {
			p, e, perr := decodeBody(input, Chunked, 0, piece)
			if !bytes.Equal(p, whole) || e != ended || (perr == nil) != (err == nil) {
				t.Fatalf("%q in pieces of %d: %q, ended %v, %v; whole: %q, ended %v, %v", input, piece, p, e, perr, whole, ended, err)
			}
		}
		ref, refErr := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(input)))
		if !bytes.HasPrefix(ref, whole) && !bytes.HasPrefix(whole, ref) {
			t.Fatalf("%q: payload %q, net/http's %q", input, whole, ref)
		}
		if refErr != nil && !errors.Is(refErr, io.ErrUnexpectedEOF) && err == nil {
			t.Fatalf("%q: net/http fails (%v), the decoder does not (payload %q, ended %v)", input, refErr, whole, ended)
		}
		if refErr == nil && err == nil && !bytes.Equal(ref, whole) {
			t.Fatalf("%q: payload %q, net/http's %q", input, whole, ref)
		}
	})
}
