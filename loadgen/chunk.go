package loadgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// chunk is what one SSE data payload says. parseChunk fills it without
// allocating: strings are kept as slices of the payload, still quoted and
// escaped, and decoded only when someone asks for them.
type chunk struct {
	done bool // the payload was [DONE]

	// tokens counts the choices whose delta carried content, reasoning,
	// completion text or a tool call: one token each by the one-per-delta
	// rule.
	tokens int
	// role reports a delta that carried a role and nothing else.
	role bool
	// content and reasoning are choice 0's text deltas (raw JSON strings
	// with their quotes, or nil).
	content, reasoning []byte
	// finish is the first non-null finish_reason (raw JSON string).
	finish []byte

	hasUsage                   bool
	prompt, completion, cached int64

	// isError marks an error object: {"error": ...} or {"object": "error"}.
	isError                  bool
	errMsg, errType, errCode []byte // raw JSON values

	// end marks TGI's native last event (generated_text is not null).
	end bool

	topMessage, topType []byte // top-level "message"/"type", used when object is "error"
	objectIsError       bool
}

var doneData = []byte("[DONE]")

// errChunkSyntax is the cause of a payload that is not valid JSON.
var errChunkSyntax = errors.New("invalid JSON")

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

// parseChunk decodes one SSE data payload into c. It accepts exactly what
// encoding/json accepts as valid JSON, and additionally requires an object at
// the top and the documented types for the fields it reads.
func parseChunk(data []byte, c *chunk) error {
	*c = chunk{}
	if string(data) == "[DONE]" {
		c.done = true
		return nil
	}
	s := scanner{b: data}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		if err := s.value(0); err != nil {
			return err
		}
		return errors.New("chunk is not a JSON object")
	}
	if err := s.object(0, c.topField); err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return s.fail("trailing data after the object")
	}
	if string(c.topType) == `"message_stop"` { // Anthropic's end of stream
		c.done = true
	}
	if c.objectIsError {
		c.isError = true
		if c.errMsg == nil {
			c.errMsg = c.topMessage
		}
		if c.errType == nil {
			c.errType = c.topType
		}
	}
	return nil
}

func (c *chunk) topField(s *scanner, key []byte, depth int) error {
	switch string(key) {
	case "choices":
		if s.null() {
			return nil
		}
		return s.array(depth, func(s *scanner, _ int, depth int) error {
			if s.null() {
				return nil
			}
			var ch choice
			if err := s.objectOnly(depth, "choice", ch.field); err != nil {
				return err
			}
			c.addChoice(&ch)
			return nil
		})
	case "usage":
		if s.null() {
			return nil
		}
		return s.objectOnly(depth, "usage", c.usageField)
	case "error":
		switch s.peek() {
		case 'n':
			return s.lit("null")
		case '"':
			c.isError = true
			v, err := s.str()
			c.errMsg = v
			return err
		case '{':
			c.isError = true
			return s.object(depth, c.errorField)
		}
		c.isError = true
		start := s.i
		err := s.value(depth)
		c.errMsg = s.b[start:s.i]
		return err
	case "error_type":
		return s.optStr(&c.errType, "error_type")
	case "object":
		var v []byte
		if err := s.optStr(&v, "object"); err != nil {
			return err
		}
		c.objectIsError = string(v) == `"error"`
		return nil
	case "message":
		if s.peek() == '{' { // Anthropic's message_start
			return s.object(depth, func(s *scanner, key []byte, depth int) error {
				if string(key) == "usage" && !s.null() {
					return s.objectOnly(depth, "message.usage", c.usageField)
				}
				return s.value(depth)
			})
		}
		start := s.i
		err := s.value(depth)
		c.topMessage = s.b[start:s.i]
		return err
	case "delta": // Anthropic's content_block_delta and message_delta
		if s.null() {
			return nil
		}
		var ch choice
		if err := s.objectOnly(depth, "delta", ch.deltaField); err != nil {
			return err
		}
		c.addChoice(&ch)
		return nil
	case "type":
		start := s.i
		err := s.value(depth)
		c.topType = s.b[start:s.i]
		return err
	case "token": // TGI's native /generate_stream
		if s.null() {
			return nil
		}
		var text []byte
		err := s.objectOnly(depth, "token", func(s *scanner, key []byte, depth int) error {
			if string(key) == "text" {
				return s.optStr(&text, "token.text")
			}
			return s.value(depth)
		})
		c.tokens++
		c.content = text
		return err
	case "generated_text":
		if s.null() {
			return nil
		}
		c.end = true
		return s.value(depth)
	case "details":
		if s.null() {
			return nil
		}
		return s.objectOnly(depth, "details", func(s *scanner, key []byte, depth int) error {
			if string(key) == "finish_reason" {
				return s.optStr(&c.finish, "details.finish_reason")
			}
			return s.value(depth)
		})
	}
	return s.value(depth)
}

func (c *chunk) usageField(s *scanner, key []byte, depth int) error {
	switch string(key) {
	case "prompt_tokens", "input_tokens":
		return s.optInt(&c.prompt, "usage.prompt_tokens")
	case "completion_tokens":
		c.hasUsage = true
		return s.optInt(&c.completion, "usage.completion_tokens")
	case "output_tokens": // Anthropic: counted only at the end, in message_delta
		if c.topType != nil && string(c.topType) != `"message_delta"` {
			return s.value(depth)
		}
		c.hasUsage = true
		return s.optInt(&c.completion, "usage.output_tokens")
	case "cache_read_input_tokens":
		return s.optInt(&c.cached, "usage.cache_read_input_tokens")
	case "prompt_tokens_details":
		if s.null() {
			return nil
		}
		return s.objectOnly(depth, "usage.prompt_tokens_details", func(s *scanner, key []byte, depth int) error {
			if string(key) == "cached_tokens" {
				return s.optInt(&c.cached, "usage.prompt_tokens_details.cached_tokens")
			}
			return s.value(depth)
		})
	}
	return s.value(depth)
}

func (c *chunk) errorField(s *scanner, key []byte, depth int) error {
	start := s.i
	if err := s.value(depth); err != nil {
		return err
	}
	v := s.b[start:s.i]
	switch string(key) {
	case "message":
		c.errMsg = v
	case "type":
		c.errType = v
	case "code":
		c.errCode = v
	}
	return nil
}

// choice is one element of "choices".
type choice struct {
	index                    int64
	content, reasoning, text []byte
	tool, role               bool
	finish                   []byte
}

func (ch *choice) field(s *scanner, key []byte, depth int) error {
	switch string(key) {
	case "delta", "message":
		if s.null() {
			return nil
		}
		return s.objectOnly(depth, "delta", ch.deltaField)
	case "text":
		return s.optStr(&ch.text, "choice.text")
	case "index":
		return s.optInt(&ch.index, "choice.index")
	case "finish_reason":
		return s.optStr(&ch.finish, "finish_reason")
	}
	return s.value(depth)
}

func (ch *choice) deltaField(s *scanner, key []byte, depth int) error {
	switch string(key) {
	case "content":
		return s.optStr(&ch.content, "delta.content")
	case "text": // Anthropic
		return s.optStr(&ch.text, "delta.text")
	case "partial_json": // Anthropic's tool input
		var v []byte
		if err := s.optStr(&v, "delta.partial_json"); err != nil {
			return err
		}
		ch.tool = ch.tool || len(v) > 2
		return nil
	case "stop_reason": // Anthropic
		return s.optStr(&ch.finish, "delta.stop_reason")
	case "reasoning_content", "reasoning", "thinking":
		var v []byte
		if err := s.optStr(&v, "delta.reasoning"); err != nil {
			return err
		}
		if len(v) > 2 {
			ch.reasoning = v
		}
		return nil
	case "role":
		var v []byte
		if err := s.optStr(&v, "delta.role"); err != nil {
			return err
		}
		ch.role = len(v) > 2
		return nil
	case "tool_calls":
		if s.null() {
			return nil
		}
		return s.array(depth, func(s *scanner, _ int, depth int) error {
			if s.null() {
				return nil
			}
			return s.objectOnly(depth, "tool call", func(s *scanner, key []byte, depth int) error {
				if string(key) != "function" || s.null() {
					return s.value(depth)
				}
				return s.objectOnly(depth, "tool call function", func(s *scanner, key []byte, depth int) error {
					if string(key) != "name" && string(key) != "arguments" {
						return s.value(depth)
					}
					var v []byte
					if err := s.optStr(&v, "tool call function field"); err != nil {
						return err
					}
					if len(v) > 2 {
						ch.tool = true
					}
					return nil
				})
			})
		})
	}
	return s.value(depth)
}

func (c *chunk) addChoice(ch *choice) {
	// A JSON string's raw form includes its quotes: "" is empty.
	hasContent, hasText := len(ch.content) > 2, len(ch.text) > 2
	if hasContent || hasText || len(ch.reasoning) > 2 || ch.tool {
		c.tokens++
	} else if ch.role {
		c.role = true
	}
	if ch.index == 0 {
		switch {
		case hasContent:
			c.content = ch.content
		case hasText:
			c.content = ch.text
		}
		c.reasoning = ch.reasoning
	}
	if c.finish == nil && ch.finish != nil {
		c.finish = ch.finish
	}
}

// decodeString returns the Go string of a raw JSON string (with quotes),
// or of any other raw JSON value as it is written. It allocates.
func decodeString(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] != '"' {
		return string(raw)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(raw)
	}
	return s
}

// scanner is a validating JSON reader over one payload. It never allocates
// on valid input.
type scanner struct {
	b []byte
	i int
}

type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.off) }
func (e *syntaxError) Unwrap() error { return errChunkSyntax }

func (s *scanner) fail(msg string) error { return &syntaxError{msg: msg, off: s.i} }

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

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

func (s *scanner) lit(w string) error {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return s.fail("invalid literal")
	}
	s.i += len(w)
	return nil
}

// value skips any JSON value, validating it.
func (s *scanner) value(depth int) error {
	switch s.peek() {
	case '{':
		return s.object(depth, func(s *scanner, _ []byte, depth int) error { return s.value(depth) })
	case '[':
		return s.array(depth, func(s *scanner, _ int, depth int) error { return s.value(depth) })
	case '"':
		_, err := s.str()
		return err
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	case 0:
		if s.i >= len(s.b) {
			return s.fail("unexpected end of JSON")
		}
	}
	_, _, err := s.num()
	return err
}

// object reads an object, calling field for each member with the scanner
// positioned at the member's value; field must consume the value.
func (s *scanner) object(depth int, field func(s *scanner, key []byte, depth int) error) error {
	if depth++; depth > maxDepth {
		return s.fail("nesting too deep")
	}
	if s.peek() != '{' {
		return s.fail("expected an object")
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.fail("expected a member name")
		}
		k, err := s.str()
		if err != nil {
			return err
		}
		key := k[1 : len(k)-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(decodeString(k)) // rare: escaped member names
		}
		if s.peek() != ':' {
			return s.fail("expected ':'")
		}
		s.i++
		s.ws()
		if err := field(s, key, depth); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.fail("expected ',' or '}'")
		}
	}
}

// objectOnly is object with a typed error when something else comes.
func (s *scanner) objectOnly(depth int, what string, field func(s *scanner, key []byte, depth int) error) error {
	if s.peek() != '{' {
		if err := s.value(depth); err != nil {
			return err
		}
		return fmt.Errorf("%s is not an object", what)
	}
	return s.object(depth, field)
}

func (s *scanner) array(depth int, elem func(s *scanner, i int, depth int) error) error {
	if depth++; depth > maxDepth {
		return s.fail("nesting too deep")
	}
	if s.peek() != '[' {
		if err := s.value(depth); err != nil {
			return err
		}
		return errors.New("expected an array")
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for i := 0; ; i++ {
		s.ws()
		if err := elem(s, i, depth); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.fail("expected ',' or ']'")
		}
	}
}

// str reads a string and returns it raw, quotes included.
func (s *scanner) str() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.fail("expected a string")
	}
	start := s.i
	s.i++
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start:s.i], nil
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return nil, s.fail("unexpected end of JSON in string")
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if len(s.b)-s.i < 6 || !isHex(s.b[s.i+2]) || !isHex(s.b[s.i+3]) || !isHex(s.b[s.i+4]) || !isHex(s.b[s.i+5]) {
					return nil, s.fail("invalid \\u escape")
				}
				s.i += 6
			default:
				return nil, s.fail("invalid escape")
			}
		case c < 0x20:
			return nil, s.fail("control character in string")
		default:
			s.i++
		}
	}
	return nil, s.fail("unexpected end of JSON in string")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// optStr reads a string or null into *v (nil for null).
func (s *scanner) optStr(v *[]byte, what string) error {
	if s.null() {
		*v = nil
		return nil
	}
	if s.peek() != '"' {
		if err := s.value(0); err != nil {
			return err
		}
		return fmt.Errorf("%s is not a string", what)
	}
	r, err := s.str()
	*v = r
	return err
}

// num reads a number; n is its value when it is an integer that fits in
// int64, and isInt says so.
func (s *scanner) num() (n int64, isInt bool, err error) {
	start := s.i
	neg := false
	if s.i < len(s.b) && s.b[s.i] == '-' {
		neg = true
		s.i++
	}
	if s.i >= len(s.b) {
		return 0, false, s.fail("invalid number")
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
		return 0, false, s.fail("invalid character")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		isInt = false
		s.i++
		if !s.digits() {
			return 0, false, s.fail("invalid number")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		isInt = false
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return 0, false, s.fail("invalid number")
		}
	}
	if s.i == start {
		return 0, false, s.fail("invalid number")
	}
	if neg {
		n = -n
	}
	return n, isInt, nil
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// optInt reads a non-negative integer or null into *v (null leaves 0).
func (s *scanner) optInt(v *int64, what string) error {
	if s.null() {
		return nil
	}
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		if err := s.value(0); err != nil {
			return err
		}
		return fmt.Errorf("%s is not a number", what)
	}
	n, isInt, err := s.num()
	if err != nil {
		return err
	}
	if !isInt || n < 0 {
		return fmt.Errorf("%s is not a non-negative integer", what)
	}
	*v = n
	return nil
}
