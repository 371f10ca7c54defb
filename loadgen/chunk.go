package loadgen

// chunk is what one SSE data payload says. parseChunk fills it without
// allocating: strings are kept as slices of the payload, still quoted and
// escaped, and decoded only when someone asks for them.
type chunk struct {
	done bool // [DONE], or Anthropic's message_stop

	// tokens counts the choices whose delta carried content, reasoning,
	// completion text or a tool call: one token each by the one-per-delta
	// rule.
	tokens int
	// reasoningTokens counts those of tokens whose delta carried reasoning
	// and nothing else.
	reasoningTokens int
	// toolCall reports a tool call's name or arguments in a delta.
	toolCall bool
	// content and reasoning are choice 0's text deltas (raw JSON strings
	// with their quotes, or nil).
	content, reasoning []byte
	// finish is the first non-null finish_reason (raw JSON string).
	finish []byte

	// hasUsage reports a usage object with completion_tokens.
	hasUsage                   bool
	prompt, completion, cached int64
	// hasReasoning reports the usage's reasoning_tokens
	// (completion_tokens_details or output_tokens_details).
	hasReasoning   bool
	reasoningUsage int64

	// isError marks an error object: {"error": ...} or {"object": "error"}.
	isError                  bool
	errMsg, errType, errCode []byte // raw JSON values

	// end marks TGI's native last event (generated_text is not null).
	end bool

	// multi reports a choice other than the first (index > 0).
	multi bool

	topMessage, topType []byte // top-level "message"/"type" (raw JSON)
	objectIsError       bool
	hasOutput           bool   // usage.output_tokens (Anthropic, Responses) was present
	output              int64  // and its value
	topCode             []byte // top-level "code" (raw JSON)

	// The Responses API's events: the string delta, and the response's
	// status and incomplete_details.reason (raw JSON strings).
	deltaText          []byte
	status, incomplete []byte

	timings serverTimings // vLLM's per-request metrics
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
	if s.peek() == '{' {
		c.readTop(&s)
	} else {
		s.skip()
		s.refuse("chunk", "a JSON object")
	}
	if s.ws(); s.i != len(s.b) {
		s.fail("trailing data after the JSON value")
	}
	if err := s.error(); err != nil {
		return err
	}
	switch string(c.topType) {
	case `"message_stop"`: // Anthropic
		c.done = true
	case `"message_delta"`, "":
		// Output is counted in message_delta; message_start's figure is a
		// placeholder.
		if c.hasOutput {
			c.hasUsage, c.completion = true, c.output
		}
	default:
		c.settleResponses()
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
	if c.isError && c.errCode == nil {
		c.errCode = c.topCode
	}
	return nil
}

// settleResponses reads a Responses API event by its type, once the whole
// event is read (its fields may come in any order).
func (c *chunk) settleResponses() {
	hasDelta := len(c.deltaText) > 2 // a raw string: "" is empty
	switch string(c.topType) {
	case `"response.output_text.delta"`, `"response.refusal.delta"`:
		if hasDelta {
			c.tokens++
			c.content = c.deltaText
		}
	case `"response.reasoning_text.delta"`, `"response.reasoning_summary_text.delta"`:
		if hasDelta {
			c.tokens++
			c.reasoningTokens++
			c.reasoning = c.deltaText
		}
	case `"response.function_call_arguments.delta"`:
		if hasDelta {
			c.tokens++
			c.toolCall = true
		}
	case `"response.completed"`, `"response.incomplete"`:
		c.end = true
		if c.hasOutput {
			c.hasUsage, c.completion = true, c.output
		}
		c.finish = c.status
		if c.incomplete != nil {
			c.finish = c.incomplete
		}
	case `"response.failed"`:
		c.isError = true
		if c.errMsg == nil {
			c.errMsg = []byte(`"the response failed"`)
		}
	case `"error"`: // the Responses API's error event: code and message at the top
		c.isError = true
		if c.errMsg == nil {
			c.errMsg = c.topMessage
		}
	}
}

// The read methods below follow the chunk's schema, one object each. A
// null where an object or an array may come is read as an empty one.

func (c *chunk) readTop(s *scanner) {
	for key := range s.object("chunk") {
		switch string(key) {
		case "choices":
			for range s.array("choices") {
				var ch choice
				ch.read(s)
				c.addChoice(&ch) // a null choice adds nothing
			}
		case "usage":
			c.readUsage(s)
		case "error":
			c.readError(s)
		case "error_type":
			c.errType = s.nullableString("error_type")
		case "object":
			c.objectIsError = string(s.nullableString("object")) == `"error"`
		case "message":
			if s.peek() == '{' {
				c.readMessage(s) // Anthropic's message_start
			} else {
				c.topMessage = s.raw()
			}
		case "type":
			c.topType = s.raw()
		case "code":
			c.topCode = s.raw()
		case "response": // the Responses API's response object
			c.readResponse(s)
		case "delta":
			if s.peek() == '"' { // the Responses API's text deltas
				c.deltaText = s.nullableString("delta")
				continue
			}
			// Anthropic's content_block_delta and message_delta
			var ch choice
			ch.readDelta(s)
			c.addChoice(&ch)
		case "token": // TGI's native /generate_stream
			c.readToken(s)
		case "generated_text":
			if !s.null() {
				c.end = true
				s.skip()
			}
		case "details":
			c.readDetails(s)
		case "metrics":
			c.readMetrics(s)
		default:
			s.skip()
		}
	}
}

func (c *chunk) readUsage(s *scanner) {
	for key := range s.object("usage") {
		switch string(key) {
		case "prompt_tokens", "input_tokens":
			s.nullableCount(&c.prompt, "usage.prompt_tokens")
		case "completion_tokens":
			c.hasUsage = true
			s.nullableCount(&c.completion, "usage.completion_tokens")
		case "output_tokens": // Anthropic; settled in parseChunk
			c.hasOutput = true
			s.nullableCount(&c.output, "usage.output_tokens")
		case "cache_read_input_tokens":
			s.nullableCount(&c.cached, "usage.cache_read_input_tokens")
		case "completion_tokens_details", "output_tokens_details":
			for key := range s.object("usage.completion_tokens_details") {
				switch string(key) {
				case "reasoning_tokens":
					if !s.null() {
						c.hasReasoning = true
						s.nullableCount(&c.reasoningUsage, "usage.completion_tokens_details.reasoning_tokens")
					}
				default:
					s.skip()
				}
			}
		case "prompt_tokens_details", "input_tokens_details":
			for key := range s.object("usage.prompt_tokens_details") {
				switch string(key) {
				case "cached_tokens":
					s.nullableCount(&c.cached, "usage.prompt_tokens_details.cached_tokens")
				default:
					s.skip()
				}
			}
		default:
			s.skip()
		}
	}
}

func (c *chunk) readError(s *scanner) {
	switch s.peek() {
	case 'n':
		s.lit("null")
	case '{':
		c.isError = true
		for key := range s.object("error") {
			switch v := s.raw(); string(key) {
			case "message":
				c.errMsg = v
			case "type":
				c.errType = v
			case "code":
				c.errCode = v
			}
		}
	default: // TGI: "error": "message"
		c.isError = true
		c.errMsg = s.raw()
	}
}

// readMessage reads Anthropic's message_start message for its usage.
func (c *chunk) readMessage(s *scanner) {
	for key := range s.object("message") {
		switch string(key) {
		case "usage":
			c.readUsage(s)
		default:
			s.skip()
		}
	}
}

// readResponse reads the Responses API's response object for its usage,
// status and error.
func (c *chunk) readResponse(s *scanner) {
	for key := range s.object("response") {
		switch string(key) {
		case "usage":
			c.readUsage(s)
		case "status":
			c.status = s.nullableString("response.status")
		case "incomplete_details":
			for key := range s.object("response.incomplete_details") {
				switch string(key) {
				case "reason":
					c.incomplete = s.nullableString("response.incomplete_details.reason")
				default:
					s.skip()
				}
			}
		case "error":
			c.readError(s)
		default:
			s.skip()
		}
	}
}

func (c *chunk) readToken(s *scanner) {
	if s.peek() == '{' {
		c.tokens++
	}
	for key := range s.object("token") {
		switch string(key) {
		case "text":
			c.content = s.nullableString("token.text")
		default:
			s.skip()
		}
	}
}

func (c *chunk) readDetails(s *scanner) {
	for key := range s.object("details") {
		switch string(key) {
		case "finish_reason":
			if v := s.nullableString("details.finish_reason"); c.finish == nil {
				c.finish = v
			}
		default:
			s.skip()
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

func (ch *choice) read(s *scanner) {
	for key := range s.object("a choice") {
		switch string(key) {
		case "delta", "message":
			ch.readDelta(s)
		case "text":
			ch.text = s.nullableString("choice.text")
		case "index":
			s.nullableCount(&ch.index, "choice.index")
		case "finish_reason":
			ch.finish = s.nullableString("finish_reason")
		default:
			s.skip()
		}
	}
}

func (ch *choice) readDelta(s *scanner) {
	for key := range s.object("delta") {
		switch string(key) {
		case "content":
			ch.content = s.nullableString("delta.content")
		case "text": // Anthropic
			ch.text = s.nullableString("delta.text")
		case "reasoning_content", "reasoning", "thinking":
			if v := s.nullableString("delta.reasoning"); len(v) > 2 {
				ch.reasoning = v
			}
		case "partial_json": // Anthropic's tool input
			if len(s.nullableString("delta.partial_json")) > 2 {
				ch.tool = true
			}
		case "stop_reason": // Anthropic
			ch.finish = s.nullableString("delta.stop_reason")
		case "tool_calls":
			for range s.array("tool_calls") {
				ch.readToolCall(s)
			}
		default:
			s.skip()
		}
	}
}

func (ch *choice) readToolCall(s *scanner) {
	for key := range s.object("a tool call") {
		switch string(key) {
		case "function":
			for key := range s.object("a tool call's function") {
				switch string(key) {
				case "name", "arguments":
					if len(s.nullableString("a tool call's function field")) > 2 {
						ch.tool = true
					}
				default:
					s.skip()
				}
			}
		default:
			s.skip()
		}
	}
}

func (c *chunk) addChoice(ch *choice) {
	// A JSON string's raw form includes its quotes: "" is empty.
	hasContent, hasText := len(ch.content) > 2, len(ch.text) > 2
	c.toolCall = c.toolCall || ch.tool
	if hasContent || hasText || len(ch.reasoning) > 2 || ch.tool {
		c.tokens++
		if !hasContent && !hasText && !ch.tool {
			c.reasoningTokens++
		}
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
