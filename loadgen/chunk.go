package loadgen

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// chunk is what one SSE data payload says. parseChunk fills it without
// allocating: strings are kept as slices of the payload, still quoted and
// escaped, and decoded only when someone asks for them.
type chunk struct {
	done bool // [DONE], or Anthropic's message_stop

	// tokens counts the choices whose delta carried content, reasoning,
	// completion text or a tool call: one token each by the one-per-delta
	// rule.
	tokens int
	// content and reasoning are choice 0's text deltas (raw JSON strings
	// with their quotes, or nil).
	content, reasoning []byte
	// finish is the first non-null finish_reason (raw JSON string).
	finish []byte

	// hasUsage reports a usage object with completion_tokens.
	hasUsage                   bool
	prompt, completion, cached int64

	// isError marks an error object: {"error": ...} or {"object": "error"}.
	isError                  bool
	errMsg, errType, errCode []byte // raw JSON values

	// end marks TGI's native last event (generated_text is not null).
	end bool

	// multi reports a choice other than the first (index > 0).
	multi bool

	topMessage, topType []byte // top-level "message"/"type" (raw JSON)
	objectIsError       bool
	hasOutput           bool  // Anthropic's usage.output_tokens was present
	output              int64 // and its value
}

// parseChunk decodes one SSE data payload into c. It accepts exactly the
// JSON that encoding/json accepts, requires an object at the top and the
// documented types for the fields it reads, and ignores every other field.
func parseChunk(data []byte, c *chunk) error {
	*c = chunk{}
	if string(data) == "[DONE]" {
		c.done = true
		return nil
	}
	s := scanner{b: data}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		if err := s.skip(); err != nil {
			return err
		}
		return errors.New("chunk is not a JSON object")
	}
	if err := c.parseTop(&s); err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return s.fail("trailing data after the object")
	}
	switch string(c.topType) { // Anthropic
	case `"message_stop"`:
		c.done = true
	case `"message_delta"`, "":
		// Output is counted in message_delta; message_start's figure is a
		// placeholder.
		if c.hasOutput {
			c.hasUsage, c.completion = true, c.output
		}
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

func (c *chunk) parseTop(s *scanner) error {
	if err := s.open('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, ok, err := s.member(first)
		if err != nil || !ok {
			return err
		}
		switch string(key) {
		case "choices":
			err = c.parseChoices(s)
		case "usage":
			err = c.parseUsage(s)
		case "error":
			err = c.parseError(s)
		case "error_type":
			err = s.optStr(&c.errType, "error_type")
		case "object":
			var v []byte
			err = s.optStr(&v, "object")
			c.objectIsError = string(v) == `"error"`
		case "message":
			if s.peek() == '{' {
				err = c.parseMessage(s) // Anthropic's message_start
			} else {
				c.topMessage, err = s.raw()
			}
		case "type":
			c.topType, err = s.raw()
		case "delta": // Anthropic's content_block_delta and message_delta
			var ch choice
			if err = ch.parseDelta(s); err == nil {
				c.addChoice(&ch)
			}
		case "token": // TGI's native /generate_stream
			err = c.parseToken(s)
		case "generated_text":
			if !s.null() {
				c.end = true
				err = s.skip()
			}
		case "details":
			err = c.parseDetails(s)
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

func (c *chunk) parseChoices(s *scanner) error {
	if s.null() {
		return nil
	}
	if err := s.openAs('[', "choices is not an array"); err != nil {
		return err
	}
	for first := true; ; first = false {
		ok, err := s.element(first)
		if err != nil || !ok {
			return err
		}
		if s.null() {
			continue
		}
		var ch choice
		if err := ch.parse(s); err != nil {
			return err
		}
		c.addChoice(&ch)
	}
}

func (c *chunk) parseUsage(s *scanner) error {
	if s.null() {
		return nil
	}
	if err := s.openAs('{', "usage is not an object"); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, ok, err := s.member(first)
		if err != nil || !ok {
			return err
		}
		switch string(key) {
		case "prompt_tokens", "input_tokens":
			err = s.optInt(&c.prompt, "usage.prompt_tokens")
		case "completion_tokens":
			c.hasUsage = true
			err = s.optInt(&c.completion, "usage.completion_tokens")
		case "output_tokens": // Anthropic; settled in parseChunk
			c.hasOutput = true
			err = s.optInt(&c.output, "usage.output_tokens")
		case "cache_read_input_tokens":
			err = s.optInt(&c.cached, "usage.cache_read_input_tokens")
		case "prompt_tokens_details":
			err = c.parsePromptDetails(s)
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

func (c *chunk) parsePromptDetails(s *scanner) error {
	if s.null() {
		return nil
	}
	if err := s.openAs('{', "usage.prompt_tokens_details is not an object"); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, ok, err := s.member(first)
		if err != nil || !ok {
			return err
		}
		if string(key) == "cached_tokens" {
			err = s.optInt(&c.cached, "usage.prompt_tokens_details.cached_tokens")
		} else {
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

func (c *chunk) parseError(s *scanner) error {
	switch s.peek() {
	case 'n':
		return s.lit("null")
	case '{':
	default: // TGI: "error": "message"
		c.isError = true
		var err error
		c.errMsg, err = s.raw()
		return err
	}
	c.isError = true
	if err := s.open('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, ok, err := s.member(first)
		if err != nil || !ok {
			return err
		}
		v, err := s.raw()
		if err != nil {
			return err
		}
		switch string(key) {
		case "message":
			c.errMsg = v
		case "type":
			c.errType = v
		case "code":
			c.errCode = v
		}
	}
}

// parseMessage reads Anthropic's message_start message for its usage.
func (c *chunk) parseMessage(s *scanner) error {
	if err := s.open('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, ok, err := s.member(first)
		if err != nil || !ok {
			return err
		}
		if string(key) == "usage" {
			err = c.parseUsage(s)
		} else {
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

func (c *chunk) parseToken(s *scanner) error {
	if s.null() {
		return nil
	}
	if err := s.openAs('{', "token is not an object"); err != nil {
		return err
	}
	c.tokens++
	for first := true; ; first = false {
		key, ok, err := s.member(first)
		if err != nil || !ok {
			return err
		}
		if string(key) == "text" {
			err = s.optStr(&c.content, "token.text")
		} else {
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

func (c *chunk) parseDetails(s *scanner) error {
	if s.null() {
		return nil
	}
	if err := s.openAs('{', "details is not an object"); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, ok, err := s.member(first)
		if err != nil || !ok {
			return err
		}
		if string(key) == "finish_reason" {
			var v []byte
			if err = s.optStr(&v, "details.finish_reason"); c.finish == nil {
				c.finish = v
			}
		} else {
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

// choice is one element of "choices".
type choice struct {
	index                    int64
	content, reasoning, text []byte
	tool                     bool
	finish                   []byte
}

func (ch *choice) parse(s *scanner) error {
	if err := s.openAs('{', "a choice is not an object"); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, ok, err := s.member(first)
		if err != nil || !ok {
			return err
		}
		switch string(key) {
		case "delta", "message":
			err = ch.parseDelta(s)
		case "text":
			err = s.optStr(&ch.text, "choice.text")
		case "index":
			err = s.optInt(&ch.index, "choice.index")
		case "finish_reason":
			err = s.optStr(&ch.finish, "finish_reason")
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

func (ch *choice) parseDelta(s *scanner) error {
	if s.null() {
		return nil
	}
	if err := s.openAs('{', "delta is not an object"); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, ok, err := s.member(first)
		if err != nil || !ok {
			return err
		}
		var v []byte
		switch string(key) {
		case "content":
			err = s.optStr(&ch.content, "delta.content")
		case "text": // Anthropic
			err = s.optStr(&ch.text, "delta.text")
		case "reasoning_content", "reasoning", "thinking":
			if err = s.optStr(&v, "delta.reasoning"); len(v) > 2 {
				ch.reasoning = v
			}
		case "partial_json": // Anthropic's tool input
			err = s.optStr(&v, "delta.partial_json")
			ch.tool = ch.tool || len(v) > 2
		case "stop_reason": // Anthropic
			err = s.optStr(&ch.finish, "delta.stop_reason")
		case "tool_calls":
			err = ch.parseToolCalls(s)
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

func (ch *choice) parseToolCalls(s *scanner) error {
	if s.null() {
		return nil
	}
	if err := s.openAs('[', "tool_calls is not an array"); err != nil {
		return err
	}
	for first := true; ; first = false {
		ok, err := s.element(first)
		if err != nil || !ok {
			return err
		}
		if s.null() {
			continue
		}
		if err := s.openAs('{', "a tool call is not an object"); err != nil {
			return err
		}
		for first := true; ; first = false {
			key, ok, err := s.member(first)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if string(key) == "function" && !s.null() {
				err = ch.parseFunction(s)
			} else {
				err = s.skip()
			}
			if err != nil {
				return err
			}
		}
	}
}

func (ch *choice) parseFunction(s *scanner) error {
	if err := s.openAs('{', "a tool call's function is not an object"); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, ok, err := s.member(first)
		if err != nil || !ok {
			return err
		}
		if string(key) == "name" || string(key) == "arguments" {
			var v []byte
			err = s.optStr(&v, "a tool call's function field")
			ch.tool = ch.tool || len(v) > 2
		} else {
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

func (c *chunk) addChoice(ch *choice) {
	// A JSON string's raw form includes its quotes: "" is empty.
	hasContent, hasText := len(ch.content) > 2, len(ch.text) > 2
	if hasContent || hasText || len(ch.reasoning) > 2 || ch.tool {
		c.tokens++
	}
	if ch.index != 0 {
		c.multi = true
	}
	if ch.index == 0 {
		switch {
		case hasContent:
			c.content = ch.content
		case hasText:
			c.content = ch.text
		}
		if ch.reasoning != nil {
			c.reasoning = ch.reasoning
		}
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
	if len(raw) >= 2 && bytes.IndexByte(raw[1:len(raw)-1], '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(raw)
	}
	return s
}

// errChunkSyntax is the cause of a payload that is not valid JSON.
var errChunkSyntax = errors.New("invalid JSON")

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

// scanner is a validating JSON reader over one payload. Containers are read
// with open, then member (objects) or element (arrays) until they report the
// end. It never allocates on valid input.
type scanner struct {
	b     []byte
	i     int
	depth int
}

type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.off) }
func (e *syntaxError) Unwrap() error { return errChunkSyntax }

func (s *scanner) fail(msg string) error { return &syntaxError{msg: msg, off: s.i} }

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

func (s *scanner) lit(w string) error {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return s.fail("invalid literal")
	}
	s.i += len(w)
	return nil
}

// open consumes the opening bracket of a container.
func (s *scanner) open(c byte) error {
	if s.peek() != c {
		return s.fail("expected " + string(c))
	}
	if s.depth++; s.depth > maxDepth {
		return s.fail("nesting too deep")
	}
	s.i++
	return nil
}

// openAs is open for a field whose type is wrong when something else comes:
// it still validates what came, then reports msg.
func (s *scanner) openAs(c byte, msg string) error {
	if s.peek() != c {
		if err := s.skip(); err != nil {
			return err
		}
		return errors.New(msg)
	}
	return s.open(c)
}

// member moves to the next member of an open object and returns its name,
// leaving the scanner at its value; ok is false at the closing brace.
func (s *scanner) member(first bool) (key []byte, ok bool, err error) {
	switch c := s.peek(); {
	case c == '}' && first:
		s.i++
		s.depth--
		return nil, false, nil
	case first:
	case c == ',':
		s.i++
		s.ws()
	case c == '}':
		s.i++
		s.depth--
		return nil, false, nil
	default:
		return nil, false, s.fail("expected ',' or '}'")
	}
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, s.fail("expected a member name")
	}
	k, err := s.str()
	if err != nil {
		return nil, false, err
	}
	if s.i < len(s.b) && s.b[s.i] == ':' { // compact JSON: no space before ':'
		s.i++
	} else if s.peek() == ':' {
		s.i++
	} else {
		return nil, false, s.fail("expected ':'")
	}
	key = k[1 : len(k)-1]
	if bytes.IndexByte(key, '\\') >= 0 {
		key = []byte(decodeString(k)) // rare: an escaped member name
	}
	return key, true, nil
}

// element moves to the next element of an open array; ok is false at the
// closing bracket.
func (s *scanner) element(first bool) (ok bool, err error) {
	switch c := s.peek(); {
	case c == ']' && first:
	case first:
		return true, nil
	case c == ',':
		s.i++
		s.ws()
		return true, nil
	case c == ']':
	default:
		return false, s.fail("expected ',' or ']'")
	}
	s.i++
	s.depth--
	return false, nil
}

// skip reads any value, validating it.
func (s *scanner) skip() error {
	switch s.peek() {
	case '{':
		if err := s.open('{'); err != nil {
			return err
		}
		for first := true; ; first = false {
			_, ok, err := s.member(first)
			if err != nil || !ok {
				return err
			}
			if err := s.skip(); err != nil {
				return err
			}
		}
	case '[':
		if err := s.open('['); err != nil {
			return err
		}
		for first := true; ; first = false {
			ok, err := s.element(first)
			if err != nil || !ok {
				return err
			}
			if err := s.skip(); err != nil {
				return err
			}
		}
	case '"':
		_, err := s.str()
		return err
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	}
	_, _, err := s.num()
	return err
}

// raw reads any value and returns its bytes.
func (s *scanner) raw() ([]byte, error) {
	s.ws()
	start := s.i
	err := s.skip()
	return s.b[start:s.i], err
}

// str reads a string and returns it raw, quotes included.
func (s *scanner) str() ([]byte, error) {
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
			return nil, s.fail("unexpected end of JSON in a string")
		}
		switch s.b[s.i] {
		case '"':
			s.i++
			return s.b[start:s.i], nil
		case '\\':
			if s.i+1 >= len(s.b) {
				return nil, s.fail("unexpected end of JSON in a string")
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
		default:
			return nil, s.fail("control character in a string")
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

// optStr reads a string or null into *v (nil for null).
func (s *scanner) optStr(v *[]byte, what string) error {
	if s.null() {
		*v = nil
		return nil
	}
	if s.peek() != '"' {
		if err := s.skip(); err != nil {
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
	if s.i >= len(s.b) {
		return 0, false, s.fail("unexpected end of JSON")
	}
	neg := s.b[s.i] == '-'
	if neg {
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

// optInt reads a non-negative integer or null into *v (null leaves it).
func (s *scanner) optInt(v *int64, what string) error {
	if s.null() {
		return nil
	}
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		if err := s.skip(); err != nil {
			return err
		}
		return fmt.Errorf("%s is not a number", what)
	}
	start := s.i
	n, isInt, err := s.num()
	if err != nil {
		return err
	}
	if !isInt && c != '-' && bytes.IndexAny(s.b[start:s.i], ".eE") < 0 {
		return fmt.Errorf("%s is %s, beyond any 64-bit count", what, s.b[start:min(s.i, start+40)])
	}
	if !isInt || n < 0 {
		return fmt.Errorf("%s is not a non-negative integer", what)
	}
	*v = n
	return nil
}
