package chunk

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"unicode/utf8"
)

// scanner is a validating JSON reader over one payload that never
// allocates on valid input: it accepts exactly the JSON that encoding/json
// accepts, and hands out strings raw, as slices of the payload with their
// quotes and escapes (see DecodeString).
//
// A reader walks a container with object or array and reads each value
// with one of the value methods (nullableString, nullableCount, raw, null,
// skip); a value the reader does not want must be skipped. Errors stick.
// The first syntax error ends every walk and makes every later call do
// nothing. A value of the wrong type is read and refused, and reading goes
// on, so that a payload that is also invalid JSON further on is reported
// as invalid JSON: error returns the syntax error, or the first refusal.
type scanner struct {
	b       []byte
	i       int
	depth   int
	err     error // the first syntax error
	refused error // the first value of the wrong type
}

// error returns the first syntax error, or else the first value refused,
// or nil.
func (s *scanner) error() error {
	if s.err != nil {
		return s.err
	}
	return s.refused
}

// ErrJSONSyntax is the cause of a payload that is not valid JSON.
var ErrJSONSyntax = errors.New("invalid JSON")

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

// syntaxError is invalid JSON at an offset.
type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.off) }
func (e *syntaxError) Unwrap() error { return ErrJSONSyntax }

// typeError is valid JSON of another type than a field's.
type typeError struct {
	field, want string // "usage", "an object"
}

func (e *typeError) Error() string { return e.field + " is not " + e.want }

// fail records a syntax error at the current offset, unless one came
// first.
func (s *scanner) fail(msg string) {
	if s.err == nil {
		s.err = &syntaxError{msg: msg, off: s.i}
	}
}

// refuse records that a value of the wrong type was read, unless one was
// before.
func (s *scanner) refuse(field, want string) {
	if s.refused == nil {
		s.refused = &typeError{field: field, want: want}
	}
}

// object walks the object that comes next: it yields each member's name
// and leaves the scanner at its value, which the loop body reads or skips.
// A name with escapes is decoded (it allocates); others are slices of the
// payload. A null is an object with no members; any other value is read
// and refused (field is not an object). The walk ends at the closing brace
// or at the first syntax error; a loop over it must not break, or the rest
// of the object is left unread.
func (s *scanner) object(field string) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		if !s.open('{', field, "an object") {
			return
		}
		for first := true; ; first = false {
			key, ok := s.member(first)
			if !ok || !yield(key) || s.err != nil {
				return
			}
		}
	}
}

// array walks the array that comes next as object walks an object: it
// yields once for each element and leaves the scanner at it.
func (s *scanner) array(field string) iter.Seq[int] {
	return func(yield func(int) bool) {
		if !s.open('[', field, "an array") {
			return
		}
		for i := 0; s.element(i == 0); i++ {
			if !yield(i) || s.err != nil {
				return
			}
		}
	}
}

// open consumes the opening bracket c of a container and reports whether
// one came. A null is consumed; any other value is read and refused.
func (s *scanner) open(c byte, field, want string) bool {
	switch s.peek() {
	case c:
		if s.depth++; s.depth > maxDepth {
			s.fail("nesting too deep")
			return false
		}
		s.i++
		return true
	case 'n':
		if s.null() {
			return false
		}
	}
	s.skip()
	s.refuse(field, want)
	return false
}

// member moves to the next member of an open object and returns its name,
// leaving the scanner at its value; ok is false at the closing brace and
// after an error.
func (s *scanner) member(first bool) (key []byte, ok bool) {
	if s.err != nil {
		return nil, false
	}
	switch c := s.peek(); {
	case c == '}':
		s.i++
		s.depth--
		return nil, false
	case first:
	case c == ',':
		s.i++
		s.ws()
	default:
		s.fail("expected ',' or '}'")
		return nil, false
	}
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		s.fail("expected a member name")
		return nil, false
	}
	k := s.str()
	if s.i < len(s.b) && s.b[s.i] == ':' { // compact JSON: no space before ':'
		s.i++
	} else if s.peek() == ':' {
		s.i++
	} else {
		s.fail("expected ':'")
	}
	if s.err != nil {
		return nil, false
	}
	key = k[1 : len(k)-1]
	if bytes.IndexByte(key, '\\') >= 0 {
		key = []byte(DecodeString(k)) // rare: an escaped member name
	}
	return key, true
}

// element moves to the next element of an open array; it reports false at
// the closing bracket and after an error.
func (s *scanner) element(first bool) bool {
	if s.err != nil {
		return false
	}
	switch c := s.peek(); {
	case c == ']':
		s.i++
		s.depth--
		return false
	case first:
	case c == ',':
		s.i++
		s.ws()
	default:
		s.fail("expected ',' or ']'")
		return false
	}
	return true
}

// space marks JSON's whitespace; plain marks the bytes a string may hold
// without an escape.
var space, plain [256]bool

func init() {
	for _, c := range " \t\n\r" {
		space[c] = true
	}
	for c := 0x20; c < 256; c++ {
		plain[c] = c != '"' && c != '\\'
	}
}

func (s *scanner) ws() {
	// Compact JSON has no white space: one comparison settles most calls.
	for s.i < len(s.b) && s.b[s.i] <= ' ' && space[s.b[s.i]] {
		s.i++
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// null consumes a null if one comes next.
func (s *scanner) null() bool {
	if s.peek() == 'n' && len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// lit consumes the literal w, which must come next.
func (s *scanner) lit(w string) {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		s.fail("invalid literal")
		return
	}
	s.i += len(w)
}

// skip reads any value, validating it.
func (s *scanner) skip() {
	if s.err != nil {
		return
	}
	switch s.peek() {
	case '{':
		for range s.object("") {
			s.skip()
		}
	case '[':
		for range s.array("") {
			s.skip()
		}
	case '"':
		s.str()
	case 't':
		s.lit("true")
	case 'f':
		s.lit("false")
	case 'n':
		s.lit("null")
	default:
		s.num()
	}
}

// raw reads any value and returns its bytes.
func (s *scanner) raw() []byte {
	s.ws()
	start := s.i
	s.skip()
	return s.b[start:s.i]
}

// str reads the string that starts at the current byte and returns it raw,
// quotes included.
func (s *scanner) str() []byte {
	start := s.i
	s.i++ // the opening quote
	for {
		// Eight bytes at a time while none needs attention, then one by one.
		for s.i+8 <= len(s.b) && plain8(binary.LittleEndian.Uint64(s.b[s.i:])) {
			s.i += 8
		}
		for s.i < len(s.b) && plain[s.b[s.i]] {
			s.i++
		}
		if s.i >= len(s.b) {
			s.fail("unexpected end of JSON in a string")
			return nil
		}
		switch s.b[s.i] {
		case '"':
			s.i++
			return s.b[start:s.i]
		case '\\':
			if s.i+1 >= len(s.b) {
				s.fail("unexpected end of JSON in a string")
				return nil
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if len(s.b)-s.i < 6 || !isHex(s.b[s.i+2]) || !isHex(s.b[s.i+3]) || !isHex(s.b[s.i+4]) || !isHex(s.b[s.i+5]) {
					s.fail("invalid \\u escape")
					return nil
				}
				s.i += 6
			default:
				s.fail("invalid escape")
				return nil
			}
		default:
			s.fail("control character in a string")
			return nil
		}
	}
}

// plain8 reports whether none of the eight bytes in x is a quote, a
// backslash or a control character, with the bit tricks of "Bit Twiddling
// Hacks" (hasless, haszero).
func plain8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	hasZero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	less20 := (x - 0x20*ones) & ^x & highs
	return less20|hasZero(x^('"'*ones))|hasZero(x^('\\'*ones)) == 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// nullableString reads a string, raw, or a null (nil). Any other value is
// read and refused as field not being a string.
func (s *scanner) nullableString(field string) []byte {
	switch s.peek() {
	case '"':
		return s.str()
	case 'n':
		if s.null() {
			return nil
		}
	}
	s.skip()
	s.refuse(field, "a string")
	return nil
}

// nullableCount reads a non-negative integer into *v, or a null, which
// leaves *v as it is. Any other value is read and refused.
func (s *scanner) nullableCount(v *int64, field string) {
	if s.null() {
		return
	}
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		s.skip()
		s.refuse(field, "a number")
		return
	}
	start := s.i
	n, isInt := s.num()
	switch {
	case s.err != nil:
	case !isInt && c != '-' && !bytes.ContainsAny(s.b[start:s.i], ".eE"):
		if s.refused == nil {
			s.refused = fmt.Errorf("%s is %s, beyond any 64-bit count", field, s.b[start:min(s.i, start+40)])
		}
	case !isInt || n < 0:
		s.refuse(field, "a non-negative integer")
	default:
		*v = n
	}
}

// num reads a number; n is its value when it is an integer that fits in
// int64, and isInt says so.
func (s *scanner) num() (n int64, isInt bool) {
	if s.i >= len(s.b) {
		s.fail("unexpected end of JSON")
		return 0, false
	}
	neg := s.b[s.i] == '-'
	if neg {
		s.i++
	}
	if s.i >= len(s.b) {
		s.fail("invalid number")
		return 0, false
	}
	isInt = true
	switch c := s.b[s.i]; {
	case c == '0':
		s.i++
	case '1' <= c && c <= '9':
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			d := int64(s.b[s.i] - '0')
			if n > (1<<63-1-d)/10 {
				isInt = false
			}
			n = n*10 + d
			s.i++
		}
	default:
		s.fail("invalid character")
		return 0, false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		isInt = false
		s.i++
		if !s.digits() {
			s.fail("invalid number")
			return 0, false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		isInt = false
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			s.fail("invalid number")
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	return n, isInt
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// DecodeString returns the Go string of a raw JSON string (with quotes),
// or of any other raw JSON value as it is written. It allocates.
func DecodeString(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] != '"' {
		return string(raw)
	}
	if len(raw) >= 2 && bytes.IndexByte(raw[1:len(raw)-1], '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(raw)
	}
	return s
}
