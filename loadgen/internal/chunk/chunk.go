// Package chunk parses the data of one SSE event, without allocating: an
// OpenAI chat or completion chunk, a Responses API event, an Anthropic
// Messages event or a TGI /generate_stream event. It accepts exactly the
// JSON that encoding/json accepts. ReasoningSplit tells the reasoning
// tokens of a response from its answer tokens as its chunks come.
package chunk

// chunk is what one SSE data payload says. Parse fills it without
// allocating: strings are kept as slices of the payload, still quoted and
// escaped, and decoded only when someone asks for them.
type Chunk struct {
	Done bool // [DONE], or Anthropic's message_stop

	// tokens counts the choices whose delta carried content, reasoning,
	// completion text or a tool call: one token each by the one-per-delta
	// rule.
	Tokens int
	// reasoningTokens counts those of tokens whose delta carried reasoning
	// and nothing else.
	ReasoningTokens int
	// toolCall reports a tool call's name or arguments in a delta.
	ToolCall bool
	// content and reasoning are choice 0's text deltas (raw JSON strings
	// with their quotes, or nil).
	Content, Reasoning []byte
	// finish is the first non-null finish_reason (raw JSON string).
	Finish []byte

	// hasUsage reports a usage object with completion_tokens.
	HasUsage                   bool
	Prompt, Completion, Cached int64
	// hasReasoning reports the usage's reasoning_tokens
	// (completion_tokens_details or output_tokens_details).
	HasReasoning   bool
	ReasoningUsage int64

	// isError marks an error object: {"error": ...} or {"object": "error"}.
	IsError                  bool
	ErrMsg, ErrType, ErrCode []byte // raw JSON values

	// end marks TGI's native last event (generated_text is not null).
	End bool

	// multi reports a choice other than the first (index > 0).
	Multi bool

	TopMessage, TopType []byte // top-level "message"/"type" (raw JSON)
	objectIsError       bool
	hasOutput           bool   // usage.output_tokens (Anthropic, Responses) was present
	output              int64  // and its value
	topCode             []byte // top-level "code" (raw JSON)

	// The Responses API's events: the string delta, and the response's
	// status and incomplete_details.reason (raw JSON strings).
	deltaText          []byte
	status, incomplete []byte

	Timings Timings // vLLM's per-request metrics
}

// Parse decodes one SSE data payload into c. It accepts exactly the
// JSON that encoding/json accepts, requires an object at the top and the
// documented types for the fields it reads, and ignores every other field.
func Parse(data []byte, c *Chunk) error {
	*c = Chunk{}
	if string(data) == "[DONE]" {
		c.Done = true
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
	switch string(c.TopType) {
	case `"message_stop"`: // Anthropic
		c.Done = true
	case `"message_delta"`, "":
		// Output is counted in message_delta; message_start's figure is a
		// placeholder.
		if c.hasOutput {
			c.HasUsage, c.Completion = true, c.output
		}
	default:
		c.settleResponses()
	}
	if c.objectIsError {
		c.IsError = true
		if c.ErrMsg == nil {
			c.ErrMsg = c.TopMessage
		}
		if c.ErrType == nil {
			c.ErrType = c.TopType
		}
	}
	if c.IsError && c.ErrCode == nil {
		c.ErrCode = c.topCode
	}
	return nil
}

// settleResponses reads a Responses API event by its type, once the whole
// event is read (its fields may come in any order).
func (c *Chunk) settleResponses() {
	hasDelta := len(c.deltaText) > 2 // a raw string: "" is empty
	switch string(c.TopType) {
	case `"response.output_text.delta"`, `"response.refusal.delta"`:
		if hasDelta {
			c.Tokens++
			c.Content = c.deltaText
		}
	case `"response.reasoning_text.delta"`, `"response.reasoning_summary_text.delta"`:
		if hasDelta {
			c.Tokens++
			c.ReasoningTokens++
			c.Reasoning = c.deltaText
		}
	case `"response.function_call_arguments.delta"`:
		if hasDelta {
			c.Tokens++
			c.ToolCall = true
		}
	case `"response.completed"`, `"response.incomplete"`:
		c.End = true
		if c.hasOutput {
			c.HasUsage, c.Completion = true, c.output
		}
		c.Finish = c.status
		if c.incomplete != nil {
			c.Finish = c.incomplete
		}
	case `"response.failed"`:
		c.IsError = true
		if c.ErrMsg == nil {
			c.ErrMsg = []byte(`"the response failed"`)
		}
	case `"error"`: // the Responses API's error event: code and message at the top
		c.IsError = true
		if c.ErrMsg == nil {
			c.ErrMsg = c.TopMessage
		}
	}
}

// The read methods below follow the chunk's schema, one object each. A
// null where an object or an array may come is read as an empty one.

func (c *Chunk) readTop(s *scanner) {
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
			c.ErrType = s.nullableString("error_type")
		case "object":
			c.objectIsError = string(s.nullableString("object")) == `"error"`
		case "message":
			if s.peek() == '{' {
				c.readMessage(s) // Anthropic's message_start
			} else {
				c.TopMessage = s.raw()
			}
		case "type":
			c.TopType = s.raw()
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
				c.End = true
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

func (c *Chunk) readUsage(s *scanner) {
	for key := range s.object("usage") {
		switch string(key) {
		case "prompt_tokens", "input_tokens":
			s.nullableCount(&c.Prompt, "usage.prompt_tokens")
		case "completion_tokens":
			c.HasUsage = true
			s.nullableCount(&c.Completion, "usage.completion_tokens")
		case "output_tokens": // Anthropic; settled in Parse
			c.hasOutput = true
			s.nullableCount(&c.output, "usage.output_tokens")
		case "cache_read_input_tokens":
			s.nullableCount(&c.Cached, "usage.cache_read_input_tokens")
		case "completion_tokens_details", "output_tokens_details":
			for key := range s.object("usage.completion_tokens_details") {
				switch string(key) {
				case "reasoning_tokens":
					if !s.null() {
						c.HasReasoning = true
						s.nullableCount(&c.ReasoningUsage, "usage.completion_tokens_details.reasoning_tokens")
					}
				default:
					s.skip()
				}
			}
		case "prompt_tokens_details", "input_tokens_details":
			for key := range s.object("usage.prompt_tokens_details") {
				switch string(key) {
				case "cached_tokens":
					s.nullableCount(&c.Cached, "usage.prompt_tokens_details.cached_tokens")
				default:
					s.skip()
				}
			}
		default:
			s.skip()
		}
	}
}

func (c *Chunk) readError(s *scanner) {
	switch s.peek() {
	case 'n':
		s.lit("null")
	case '{':
		c.IsError = true
		for key := range s.object("error") {
			switch v := s.raw(); string(key) {
			case "message":
				c.ErrMsg = v
			case "type":
				c.ErrType = v
			case "code":
				c.ErrCode = v
			}
		}
	default: // TGI: "error": "message"
		c.IsError = true
		c.ErrMsg = s.raw()
	}
}

// readMessage reads Anthropic's message_start message for its usage.
func (c *Chunk) readMessage(s *scanner) {
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
func (c *Chunk) readResponse(s *scanner) {
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

func (c *Chunk) readToken(s *scanner) {
	if s.peek() == '{' {
		c.Tokens++
	}
	for key := range s.object("token") {
		switch string(key) {
		case "text":
			c.Content = s.nullableString("token.text")
		default:
			s.skip()
		}
	}
}

func (c *Chunk) readDetails(s *scanner) {
	for key := range s.object("details") {
		switch string(key) {
		case "finish_reason":
			if v := s.nullableString("details.finish_reason"); c.Finish == nil {
				c.Finish = v
			}
		default:
			s.skip()
		}
	}
}

// choice is one element of "choices".
type choice struct {
	index                    int64
	Content, Reasoning, text []byte
	tool                     bool
	Finish                   []byte
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
			ch.Finish = s.nullableString("finish_reason")
		default:
			s.skip()
		}
	}
}

func (ch *choice) readDelta(s *scanner) {
	for key := range s.object("delta") {
		switch string(key) {
		case "content":
			ch.Content = s.nullableString("delta.Content")
		case "text": // Anthropic
			ch.text = s.nullableString("delta.text")
		case "reasoning_content", "reasoning", "thinking":
			if v := s.nullableString("delta.Reasoning"); len(v) > 2 {
				ch.Reasoning = v
			}
		case "partial_json": // Anthropic's tool input
			if len(s.nullableString("delta.partial_json")) > 2 {
				ch.tool = true
			}
		case "stop_reason": // Anthropic
			ch.Finish = s.nullableString("delta.stop_reason")
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

func (c *Chunk) addChoice(ch *choice) {
	// A JSON string's raw form includes its quotes: "" is empty.
	hasContent, hasText := len(ch.Content) > 2, len(ch.text) > 2
	c.ToolCall = c.ToolCall || ch.tool
	if hasContent || hasText || len(ch.Reasoning) > 2 || ch.tool {
		c.Tokens++
		if !hasContent && !hasText && !ch.tool {
			c.ReasoningTokens++
		}
	}
	if ch.index != 0 {
		c.Multi = true
	}
	if ch.index == 0 {
		switch {
		case hasContent:
			c.Content = ch.Content
		case hasText:
			c.Content = ch.text
		}
		if ch.Reasoning != nil {
			c.Reasoning = ch.Reasoning
		}
	}
	if c.Finish == nil && ch.Finish != nil {
		c.Finish = ch.Finish
	}
}
