// Package bodyframe decodes an HTTP/1.1 response body's framing (chunked,
// Content-Length or to the end of the connection) as its bytes come, for a
// reader that takes the bytes off the socket itself.
package bodyframe

import (
	"bytes"
	"errors"
	"io"
	"net/http"
)

// Framing is how an HTTP/1.1 response body ends.
type Framing uint8

const (
	Chunked Framing = iota // Transfer-Encoding: chunked
	Length                 // Content-Length
	Close                  // at the end of the connection
)

// Of returns how resp's body ends and, for a Content-Length body, its
// length.
func Of(resp *http.Response) (Framing, uint64) {
	switch {
	case len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked":
		return Chunked, 0
	case resp.ContentLength >= 0:
		return Length, uint64(resp.ContentLength)
	case resp.Body == http.NoBody:
		return Length, 0
	}
	return Close, 0
}

// Decoder takes a response body's bytes off the wire, as they come and
// in pieces of any size, and leaves its payload: it undoes the chunked
// transfer coding as net/http's chunked reader does, with the same rules
// and the same errors (a chunk line must end in CRLF and be shorter than
// 4 KiB; chunk extensions are dropped; more than 16 KiB of framing beyond
// 16 bytes a chunk and twice its data is refused; chunk data must be
// followed by CRLF), reads the trailer after the last chunk, bounded to
// 4 KiB, and stops a Content-Length body at its length.
type Decoder struct {
	framing Framing
	state   uint8
	left    uint64 // data still to come: of the chunk, or of the whole body
	line    []byte // a chunk-size or trailer line cut by the end of a read
	excess  int64  // framing overhead, as net/http counts it
	trailer int    // bytes of trailer fields so far
	Ended   bool   // the body is complete
	Extra   bool   // bytes came after its end
}

// The states of a chunked body.
const (
	chunkSize    = iota // the chunk-size line
	chunkData           // the chunk's data
	chunkCR             // the CR after the data
	chunkLF             // the LF after the data
	chunkTrailer        // the trailer after the last chunk
)

const (
	maxChunkLine   = 4096 // net/http's bound of a chunk line
	maxTrailerSize = 4096 // of the trailer fields
)

var (
	errChunkLineTooLong = errors.New("header line too long") // net/http's message for it
	errChunkedMalformed = errors.New("malformed chunked encoding")
	errChunkBareLF      = errors.New("chunked line ends with bare LF")
	errChunkCR          = errors.New("invalid CR in chunked line")
	errChunkExcess      = errors.New("chunked encoding contains too much non-data")
	errChunkLenEmpty    = errors.New("empty hex number for chunk length")
	errChunkLenInvalid  = errors.New("invalid byte in chunk length")
	errChunkLenTooLarge = errors.New("http chunk length too large")
	errTrailerTooLong   = errors.New("http: suspiciously long trailer after chunked body")
)

// NewDecoder returns a Decoder of a body framed as framing says, length
// bytes long for a Content-Length body.
func NewDecoder(framing Framing, length uint64) Decoder {
	d := Decoder{framing: framing, left: length}
	d.Ended = framing == Length && length == 0
	return d
}

// Decode takes p, the next bytes of the body as they came, and moves its
// payload to the front of p: p[:n]. It consumes all of p; bytes after the
// body's end are dropped and noted in Extra.
func (d *Decoder) Decode(p []byte) (n int, err error) {
	for i := 0; i < len(p); {
		if d.Ended {
			d.Extra = true
			return n, nil
		}
		switch {
		case d.framing == Close:
			n += copy(p[n:], p[i:])
			i = len(p)
		case d.framing == Length || d.state == chunkData:
			k := int(min(d.left, uint64(len(p)-i)))
			n += copy(p[n:], p[i:i+k])
			i += k
			d.left -= uint64(k)
			if d.left == 0 {
				if d.framing == Length {
					d.Ended = true
				} else {
					d.state = chunkCR
				}
			}
		case d.state == chunkCR || d.state == chunkLF:
			want := byte('\r')
			if d.state == chunkLF {
				want = '\n'
			}
			if p[i] != want {
				return n, errChunkedMalformed
			}
			i++
			d.state++
			if d.state > chunkLF {
				d.state = chunkSize
			}
		default: // a chunk-size or trailer line
			j := bytes.IndexByte(p[i:], '\n')
			if j < 0 {
				if len(d.line)+len(p)-i > maxChunkLine+1 {
					return n, d.longLine()
				}
				d.line = append(d.line, p[i:]...)
				i = len(p)
				continue
			}
			line := p[i : i+j+1]
			i += j + 1
			if len(d.line) > 0 {
				d.line = append(d.line, line...)
				line = d.line
			}
			err := d.onLine(line)
			d.line = d.line[:0]
			if err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// longLine is the error for a line over the bound.
func (d *Decoder) longLine() error {
	if d.state == chunkTrailer {
		return errTrailerTooLong
	}
	return errChunkLineTooLong
}

// onLine takes one whole line, its LF included.
func (d *Decoder) onLine(line []byte) error {
	if d.state == chunkTrailer {
		if len(line) == 1 || len(line) == 2 && line[0] == '\r' {
			d.Ended = true
			return nil
		}
		if d.trailer += len(line); d.trailer > maxTrailerSize {
			return errTrailerTooLong
		}
		return nil
	}
	switch idx := bytes.IndexByte(line, '\r'); {
	case idx < 0:
		return errChunkBareLF
	case idx != len(line)-2:
		return errChunkCR
	}
	line = line[:len(line)-2]
	if len(line) >= maxChunkLine {
		return errChunkLineTooLong
	}
	d.excess += int64(len(line)) + 2
	for len(line) > 0 && (line[len(line)-1] == ' ' || line[len(line)-1] == '\t') {
		line = line[:len(line)-1]
	}
	line, _, _ = bytes.Cut(line, []byte(";"))
	size, err := parseChunkSize(line)
	if err != nil {
		return err
	}
	d.excess = max(d.excess-16-2*int64(size), 0)
	if d.excess > 16<<10 {
		return errChunkExcess
	}
	if size == 0 {
		d.state = chunkTrailer
		return nil
	}
	d.left, d.state = size, chunkData
	return nil
}

// parseChunkSize reads a chunk's size in hex, as net/http does.
func parseChunkSize(v []byte) (uint64, error) {
	if len(v) == 0 {
		return 0, errChunkLenEmpty
	}
	var n uint64
	for i, b := range v {
		switch {
		case '0' <= b && b <= '9':
			b -= '0'
		case 'a' <= b && b <= 'f':
			b = b - 'a' + 10
		case 'A' <= b && b <= 'F':
			b = b - 'A' + 10
		default:
			return 0, errChunkLenInvalid
		}
		if i == 16 {
			return 0, errChunkLenTooLarge
		}
		n = n<<4 | uint64(b)
	}
	return n, nil
}

// AtEOF is the error of a body whose connection ended now: io.EOF if the
// body may end there, io.ErrUnexpectedEOF if not.
func (d *Decoder) AtEOF() error {
	if d.Ended || d.framing == Close {
		return io.EOF
	}
	return io.ErrUnexpectedEOF
}
