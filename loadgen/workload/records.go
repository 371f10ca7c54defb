package workload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxRecordSize bounds one record of a dataset or a trace: a line of a
// JSONL or CSV file, an element of a JSON array.
const maxRecordSize = 16 << 20

// A ParseError is a malformed record of a dataset or a trace: where it is
// and what is wrong with it.
type ParseError struct {
	// Name is the file's name, or "" for a reader without one.
	Name string
	// Line is the record's line, counted from 1; for an error inside a
	// record of several lines, the line of the error.
	Line int
	Err  error
}

// Error names the file and the line: "workload: data.jsonl:12: ...".
func (e *ParseError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("workload: line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("workload: %s:%d: %v", e.Name, e.Line, e.Err)
}

// Unwrap returns the cause.
func (e *ParseError) Unwrap() error { return e.Err }

// A FileError holds the malformed records of a file, found by reading it
// through before anything is sent: the first [maxReported] of them, and
// how many there are.
type FileError struct {
	Name   string
	Errs   []*ParseError
	Count  int
	Stream error // a read that failed, or nil
}

// maxReported is how many malformed records a [FileError] keeps.
const maxReported = 5

// Error lists the malformed records on one line.
func (e *FileError) Error() string {
	var b bytes.Buffer
	if e.Count == 1 {
		fmt.Fprintf(&b, "workload: %s has a malformed record: ", e.Name)
	} else {
		fmt.Fprintf(&b, "workload: %s has %d malformed records: ", e.Name, e.Count)
	}
	for i, pe := range e.Errs {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "line %d: %v", pe.Line, pe.Err)
	}
	if n := e.Count - len(e.Errs); n > 0 {
		fmt.Fprintf(&b, "; and %d more", n)
	}
	return b.String()
}

// Unwrap returns the ParseErrors, for errors.As.
func (e *FileError) Unwrap() []error {
	errs := make([]error, len(e.Errs))
	for i, pe := range e.Errs {
		errs[i] = pe
	}
	return errs
}

// errStructure marks an error after which a file cannot be read further:
// the records' boundaries are lost.
type errStructure struct{ error }

func (e errStructure) Unwrap() error { return e.error }

// recordScanner splits a stream of JSON records into raw records, with
// the line each begins on: either one JSON value a line (JSONL, blank
// lines skipped) or the elements of one JSON array, which it finds without
// decoding them, so a large array is never held whole.
type recordScanner struct {
	r     *bufio.Reader
	line  int // the line of the next byte, from 1
	buf   []byte
	mode  int // modeUnknown until the first record
	first bool
}

func newRecordScanner(r io.Reader) *recordScanner {
	return &recordScanner{r: bufio.NewReaderSize(r, 64<<10), line: 1, first: true}
}

const (
	modeUnknown = iota
	modeLines
	modeArray
	modeDone
)

// next returns the next raw record and its line, or io.EOF. The record is
// valid until the next call. The end of the stream, an error wrapped in
// errStructure and stop end it: from then on next returns io.EOF.
func (s *recordScanner) next() ([]byte, int, error) {
	raw, line, err := s.read()
	if _, ok := errors.AsType[errStructure](err); ok || errors.Is(err, io.EOF) {
		s.stop()
	}
	return raw, line, err
}

// stop ends the stream: next returns io.EOF from now on.
func (s *recordScanner) stop() { s.mode = modeDone }

// read returns the next raw record and its line, or io.EOF.
func (s *recordScanner) read() ([]byte, int, error) {
	if s.mode == modeUnknown {
		c, err := s.skipSpace()
		if err != nil {
			return nil, 0, err
		}
		if c == '[' {
			_, _ = s.r.ReadByte()
			s.mode = modeArray
		} else {
			s.mode = modeLines
		}
	}
	switch s.mode {
	case modeLines:
		return s.nextLine()
	case modeArray:
		return s.nextElement()
	}
	return nil, 0, io.EOF
}

// skipSpace skips white space, counting lines, and peeks at the next
// byte.
func (s *recordScanner) skipSpace() (byte, error) {
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case '\n':
			s.line++
		case ' ', '\t', '\r':
		default:
			_ = s.r.UnreadByte()
			return c, nil
		}
	}
}

// nextLine returns the next line that is not blank.
func (s *recordScanner) nextLine() ([]byte, int, error) {
	for {
		line := s.line
		s.buf = s.buf[:0]
		for {
			chunk, err := s.r.ReadSlice('\n')
			if len(s.buf)+len(chunk) > maxRecordSize {
				if err := s.skipLine(err); err != nil && !errors.Is(err, io.EOF) {
					return nil, line, err
				}
				s.line++
				return nil, line, fmt.Errorf("the line is longer than %d MiB", maxRecordSize>>20)
			}
			s.buf = append(s.buf, chunk...)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, line, err
			}
			if err == nil {
				s.line++
			}
			if len(bytes.TrimSpace(s.buf)) > 0 {
				return bytes.TrimRight(s.buf, "\r\n"), line, nil
			}
			if err != nil {
				return nil, line, io.EOF
			}
			break
		}
	}
}

// skipLine reads to the end of the current line; err is the last
// ReadSlice's.
func (s *recordScanner) skipLine(err error) error {
	for errors.Is(err, bufio.ErrBufferFull) {
		_, err = s.r.ReadSlice('\n')
	}
	return err
}

// nextElement returns the next element of the array.
func (s *recordScanner) nextElement() ([]byte, int, error) {
	c, err := s.skipSpace()
	if err != nil {
		return nil, s.line, errStructure{fmt.Errorf("the JSON array ends early: %w", io.ErrUnexpectedEOF)}
	}
	if !s.first {
		switch c {
		case ',':
			_, _ = s.r.ReadByte()
			if c, err = s.skipSpace(); err != nil {
				return nil, s.line, errStructure{fmt.Errorf("the JSON array ends early: %w", io.ErrUnexpectedEOF)}
			}
			if c == ']' {
				return nil, s.line, errStructure{errors.New("a comma before the array's ]: JSON has no trailing commas")}
			}
		case ']':
			return s.end()
		default:
			return nil, s.line, errStructure{fmt.Errorf("want , or ] between the array's elements, found %q", c)}
		}
	} else if c == ']' {
		return s.end()
	}
	s.first = false
	line := s.line
	s.buf = s.buf[:0]
	if err := s.value(); err != nil {
		return nil, line, errStructure{err}
	}
	return s.buf, line, nil
}

// end reads the array's closing bracket and checks that nothing but white
// space follows.
func (s *recordScanner) end() ([]byte, int, error) {
	_, _ = s.r.ReadByte()
	s.mode = modeDone
	c, err := s.skipSpace()
	if errors.Is(err, io.EOF) {
		return nil, 0, io.EOF
	}
	if err != nil {
		return nil, s.line, err
	}
	return nil, s.line, errStructure{fmt.Errorf("%q after the end of the JSON array", c)}
}

// value appends one JSON value to buf: an object or an array up to its
// matching bracket (strings minded), or a scalar up to the next
// delimiter. Its contents are checked when it is decoded.
func (s *recordScanner) value() error {
	depth, inString, escaped := 0, false, false
	for {
		if inString && !escaped {
			// Copy a run of a string's plain bytes at once: most of a
			// dataset is text.
			if n := s.r.Buffered(); n > 0 {
				b, _ := s.r.Peek(n)
				i := bytes.IndexAny(b, "\"\\\n")
				if i < 0 {
					i = n
				}
				if i > 0 {
					if len(s.buf)+i > maxRecordSize {
						return fmt.Errorf("an element of the JSON array is longer than %d MiB", maxRecordSize>>20)
					}
					s.buf = append(s.buf, b[:i]...)
					_, _ = s.r.Discard(i)
					continue
				}
			}
		}
		c, err := s.r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("the JSON array ends inside an element: %w", io.ErrUnexpectedEOF)
			}
			return err
		}
		if len(s.buf) >= maxRecordSize {
			return fmt.Errorf("an element of the JSON array is longer than %d MiB", maxRecordSize>>20)
		}
		if c == '\n' {
			s.line++
		}
		if inString {
			s.buf = append(s.buf, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				if depth == 0 {
					return nil // a string element
				}
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				_ = s.r.UnreadByte() // the array's end, after a scalar
				return nil
			}
			depth--
			if depth == 0 {
				s.buf = append(s.buf, c)
				return nil
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				if c == '\n' {
					s.line--
				}
				_ = s.r.UnreadByte() // the end of a scalar
				return nil
			}
		}
		s.buf = append(s.buf, c)
	}
}

// lineOf returns the line, within a record beginning on line, of byte
// offset off of rec.
func lineOf(rec []byte, line int, off int64) int {
	off = min(max(off, 0), int64(len(rec)))
	return line + bytes.Count(rec[:off], []byte{'\n'})
}
