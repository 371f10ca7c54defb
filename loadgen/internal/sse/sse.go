// Package sse frames a text/event-stream (the HTML standard's event
// stream interpretation) as its bytes come, without copying an event's
// data, from a reader that may say it has nothing for now (ErrWouldBlock).
package sse

import (
	"bytes"
	"errors"
	"io"
)

// ErrEventTooLarge is the cause of an event longer than MaxEventSize.
var ErrEventTooLarge = errors.New("loadgen: SSE event too large")

// ErrWouldBlock is returned by the reader under a Reader that is fed
// by a poller when it has no more bytes until the socket is readable again.
// The Reader then returns it as it is, keeps its state, and goes on
// where it stopped at the next call.
var ErrWouldBlock = errors.New("loadgen: no bytes until the socket is readable")

// Reader frames a text/event-stream as the HTML standard's event
// stream interpretation does: lines end in LF, CRLF or CR; a blank line
// dispatches the event; a line beginning with ":" is a comment; "data"
// fields are joined with LF; an "event" field of "error" marks the event
// (ErrorEvent), other event types and the "id" and "retry" fields are read
// and ignored; a leading byte-order mark is skipped. One difference:
// at the end of the stream, an event whose last line is complete is
// dispatched even without the blank line the standard asks for, since some
// servers and proxies close the stream right after "data: [DONE]\n"; an
// event cut inside a line is dropped, as the standard says.
//
// The data of an event with one data line is a slice of the reader's
// buffer: nothing is copied or allocated. It is valid until the next call
// to next. go-sse's sse.Read is the reference it is fuzzed against.
type Reader struct {
	r   io.Reader
	buf []byte // buf[start:end] is read and not yet framed
	max int    // the largest event

	start, end int
	eof        bool
	err        error
	begun      bool // past the byte-order mark, if any
	skipLF     bool // the last line ended in a CR at the end of a read
	full       bool // the last read filled the buffer: there is a backlog
	partial    bool // the stream ended inside a line
	scanned    int  // bytes from start known to hold no line end
	quiet      int  // reads in a row that took under a quarter of the buffer
	resume     bool // next stopped at ErrWouldBlock inside an event

	// The event being framed: one data line (a slice of buf, still where
	// it was read), or several joined in data.
	single   []byte
	data     []byte
	hasData  bool
	multiple bool
	// ErrorEvent reports that the event returned last has the type
	// "error".
	ErrorEvent bool
}

// The reader's buffer starts small, since a live stream brings one event
// per read, and doubles, up to eventReaderBulk, while reads fill it: a
// backlog is read in large pieces, with few system calls. It grows beyond
// that only for an event that needs it. Once the backlog is gone, and
// eventReaderQuiet reads in a row have each taken under a quarter of it, it
// halves again, so that thousands of live streams keep small buffers after
// a burst.
const (
	eventReaderStart = 1 << 10
	eventReaderBulk  = 16 << 10
	eventReaderQuiet = 64
)

func NewReader(r io.Reader, maxEvent int) *Reader {
	return &Reader{r: r, buf: make([]byte, eventReaderStart), max: maxEvent}
}

// Next returns the data of the next event. At the end of the stream it
// returns io.EOF; an event over the size limit is ErrEventTooLarge; a read
// error is returned as it is. After ErrWouldBlock, the next call goes on
// with the event it was framing.
func (e *Reader) Next() ([]byte, error) {
	if !e.resume {
		e.single, e.data, e.hasData, e.multiple, e.ErrorEvent = nil, e.data[:0], false, false, false
	}
	e.resume = false
	for {
		line, ok, err := e.line()
		if err == ErrWouldBlock {
			e.resume = true
			return nil, err
		}
		if err != nil {
			return nil, err
		}
		if !ok { // the end of the stream
			if e.hasData && !e.partial {
				return e.event(), nil
			}
			return nil, io.EOF
		}
		if len(line) == 0 {
			if e.hasData {
				return e.event(), nil
			}
			e.ErrorEvent = false // an event without data is dropped, type and all
			continue
		}
		if line[0] == ':' {
			continue // a comment
		}
		name, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(name) != "data" {
			if string(name) == "event" {
				e.ErrorEvent = string(value) == "error" // the last event field counts
			}
			continue // other event types, id, retry and unknown fields: not needed here
		}
		if err := e.addData(value); err != nil {
			return nil, err
		}
	}
}

// addData appends one data line to the event.
func (e *Reader) addData(value []byte) error {
	switch {
	case !e.hasData:
		e.single, e.hasData = value, true
		if len(value) > e.max {
			return ErrEventTooLarge
		}
		return nil
	case !e.multiple:
		e.data = append(e.data[:0], e.single...)
		e.single, e.multiple = nil, true
	}
	if len(e.data)+1+len(value) > e.max {
		return ErrEventTooLarge
	}
	e.data = append(e.data, '\n')
	e.data = append(e.data, value...)
	return nil
}

func (e *Reader) event() []byte {
	if e.multiple {
		return e.data
	}
	return e.single
}

// line returns the next complete line, without its line ending. ok is
// false at the end of the stream; an unterminated last line is dropped and
// noted in partial.
func (e *Reader) line() (line []byte, ok bool, err error) {
	for {
		window := e.buf[e.start:e.end]
		if !e.begun {
			// A byte-order mark may open the stream; it may come split.
			if len(window) < len(bom) && !e.eof && bytes.HasPrefix(bom, window) {
				if err := e.fill(); err != nil {
					return nil, false, err
				}
				continue
			}
			e.begun = true
			if bytes.HasPrefix(window, bom) {
				e.start += len(bom)
				continue
			}
		}
		if e.skipLF && len(window) > 0 {
			// The previous line ended in a CR at the end of a read; an LF
			// now is the rest of a CRLF.
			e.skipLF = false
			if window[0] == '\n' {
				e.start++
				continue
			}
		}
		i := lineEnd(window[e.scanned:])
		if i >= 0 {
			i += e.scanned
			e.scanned = 0
			e.start += i + 1
			if window[i] == '\r' {
				switch {
				case i+1 == len(window):
					e.skipLF = true
				case window[i+1] == '\n':
					e.start++
				}
			}
			return window[:i], true, nil
		}
		if e.eof {
			e.partial = len(window) > 0
			return nil, false, e.err
		}
		e.scanned = len(window) // no line end there: do not scan it again
		if err := e.fill(); err != nil {
			return nil, false, err
		}
	}
}

// lineEnd returns the index of the first CR or LF in b, or -1.
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	lim := i
	if i < 0 {
		lim = len(b)
	}
	if j := bytes.IndexByte(b[:lim], '\r'); j >= 0 {
		return j
	}
	return i
}

// fill reads more of the stream, making room first.
func (e *Reader) fill() error {
	if e.start > 0 {
		if e.hasData && !e.multiple {
			// The pending data line points into the bytes about to move.
			e.data = append(e.data[:0], e.single...)
			e.single, e.multiple = nil, true
		}
		e.end = copy(e.buf, e.buf[e.start:e.end])
		e.start = 0
	}
	if e.end == 0 && e.quiet >= eventReaderQuiet && len(e.buf) > eventReaderStart {
		// A pending data line, if any, still points into the old buffer,
		// which nothing overwrites.
		e.buf = make([]byte, len(e.buf)/2)
		e.quiet = 0
	}
	if e.end == len(e.buf) || (e.full && len(e.buf) < eventReaderBulk) {
		if e.end == len(e.buf) && len(e.buf) >= e.max+2 { // a line ending's worth over the limit
			return ErrEventTooLarge
		}
		bigger := make([]byte, min(2*len(e.buf), max(e.max+2, eventReaderBulk)))
		copy(bigger, e.buf[:e.end])
		e.buf = bigger
		e.full = false // taken into account: a read that comes back for more must not grow it again
	}
	for {
		space := len(e.buf) - e.end
		n, err := e.r.Read(e.buf[e.end:])
		if err == ErrWouldBlock {
			return err
		}
		e.full = n == space
		e.end += n
		if n < len(e.buf)/4 {
			e.quiet++
		} else {
			e.quiet = 0
		}
		if err != nil {
			e.eof = true
			if err != io.EOF {
				e.err = err
			}
			return nil
		}
		if n > 0 {
			return nil
		}
	}
}

var bom = []byte("\xEF\xBB\xBF")

// CheckStart reads the start of the stream, without consuming it, until it
// holds the first line (or limit bytes of it, or the stream ends), and
// returns the start of the body when that line is not one of an event
// stream: a field (data, event, id, retry) or a comment. Blank lines and a
// byte-order mark before it are skipped. An empty body, or a read error
// before any byte, is left to the reader.
func (e *Reader) CheckStart(limit int) (notSSE []byte, err error) {
	for {
		window := e.buf[e.start:e.end]
		head := bytes.TrimLeft(bytes.TrimPrefix(window, bom), "\r\n")
		if i := lineEnd(head); i >= 0 || len(head) > limit || e.eof {
			line := head
			if i >= 0 {
				line = head[:i]
			}
			if len(head) == 0 || isFieldLine(line) {
				return nil, nil
			}
			return bytes.Clone(head[:min(len(head), limit+1)]), nil
		}
		if err := e.fill(); err != nil {
			return nil, err
		}
	}
}

// isFieldLine reports whether line begins an event stream: a comment, or a
// field an event stream's first line carries.
func isFieldLine(line []byte) bool {
	if len(line) > 0 && line[0] == ':' {
		return true
	}
	name := line
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name = line[:i]
	}
	switch string(name) {
	case "data", "event", "id", "retry":
		return true
	}
	return false
}

// Drained reports that the stream has ended and left nothing unframed.
func (e *Reader) Drained() bool { return e.end == e.start && e.eof }
