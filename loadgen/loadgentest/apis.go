package loadgentest

import (
	"encoding/json"
	"strconv"
)

// api is the endpoint a generation request came to.
type api uint8

const (
	apiCompletions api = iota
	apiChat
	apiResponses // OpenAI's Responses API
	apiMessages  // Anthropic's Messages API
)

func apiOf(path string) api {
	switch path {
	case "/v1/chat/completions":
		return apiChat
	case "/v1/responses":
		return apiResponses
	case "/v1/messages":
		return apiMessages
	}
	return apiCompletions
}

// normalize turns a Responses or Messages body into the chat fields the
// rest of the handler reads: the input or the system prompt as messages,
// max_output_tokens as max_tokens. Messages requires max_tokens, as
// Anthropic's API and vLLM's do.
func (b *genRequest) normalize(a api) *apiError {
	switch a {
	case apiResponses:
		if len(b.Input) == 0 || string(b.Input) == "null" {
			return badRequest("input is required")
		}
		var text string
		if json.Unmarshal(b.Input, &text) == nil {
			b.Messages = []chatMessage{{Role: "user", Content: b.Input}}
		} else if err := json.Unmarshal(b.Input, &b.Messages); err != nil {
			return badRequest("input must be a string or a list of messages")
		}
		if b.Instructions != "" {
			sys, _ := json.Marshal(b.Instructions)
			b.Messages = append([]chatMessage{{Role: "system", Content: sys}}, b.Messages...)
		}
		b.MaxTokens, b.MaxCompletionTokens = b.MaxOutputTokens, nil
		b.StreamOptions = nil
	case apiMessages:
		if b.MaxTokens == nil {
			return badRequest("max_tokens: Field required")
		}
		if len(b.System) > 0 && string(b.System) != "null" {
			b.Messages = append([]chatMessage{{Role: "system", Content: b.System}}, b.Messages...)
		}
		b.StreamOptions = nil
	}
	return nil
}

// The Responses and Messages streams: typed events, each on an "event:"
// line and with its type in its data, in the order of OpenAI's and
// Anthropic's API references and vLLM's implementation. Reasoning goes in
// an item (a block) of its own before the answer's; every event carries
// one token.

// event starts an event of the given type: "event: TYPE", then the data
// line's start, `{"type":"TYPE"` and, for Responses, its sequence number.
func (s *sseWriter) event(typ string) {
	f := &s.g.faults
	if f.ping {
		s.buf = append(s.buf, ": ping"...)
		s.buf = append(s.buf, s.eol...)
		s.buf = append(s.buf, s.eol...)
	}
	s.buf = append(s.buf, "event: "...)
	s.buf = append(s.buf, typ...)
	s.buf = append(s.buf, s.eol...)
	s.buf = append(s.buf, `data: {"type":"`...)
	s.buf = append(s.buf, typ...)
	s.buf = append(s.buf, '"')
	if s.g.api == apiResponses {
		s.buf = append(s.buf, `,"sequence_number":`...)
		s.buf = strconv.AppendInt(s.buf, int64(s.events), 10)
		s.events++
	}
}

// endEvent closes the data's object and the event.
func (s *sseWriter) endEvent() {
	s.buf = append(s.buf, '}')
	s.end()
}

// response writes the Responses API's response object.
func (s *sseWriter) response(status string, completion int) {
	g := s.g
	s.buf = append(s.buf, `,"response":{"id":"`...)
	s.buf = append(s.buf, g.id...)
	s.buf = append(s.buf, `","object":"response","created_at":`...)
	s.buf = strconv.AppendInt(s.buf, g.created, 10)
	s.buf = append(s.buf, `,"status":"`...)
	s.buf = append(s.buf, status...)
	s.buf = append(s.buf, `","model":`...)
	s.buf = appendJSONString(s.buf, g.model)
	s.buf = append(s.buf, `,"output":[],"error":null,"incomplete_details":`...)
	if status == "incomplete" {
		s.buf = append(s.buf, `{"reason":"max_output_tokens"}`...)
	} else {
		s.buf = append(s.buf, "null"...)
	}
	s.buf = append(s.buf, `,"max_output_tokens":`...)
	s.buf = strconv.AppendInt(s.buf, int64(g.maxTokens), 10)
	s.buf = append(s.buf, `,"usage":`...)
	if status == "in_progress" {
		s.buf = append(s.buf, "null}"...)
		return
	}
	p := g.promptLen
	s.buf = append(s.buf, `{"input_tokens":`...)
	s.buf = strconv.AppendInt(s.buf, int64(p), 10)
	s.buf = append(s.buf, `,"input_tokens_details":{"cached_tokens":`...)
	s.buf = strconv.AppendInt(s.buf, int64(g.cachedTokens()), 10)
	s.buf = append(s.buf, `},"output_tokens":`...)
	s.buf = strconv.AppendInt(s.buf, int64(completion), 10)
	s.buf = append(s.buf, `,"output_tokens_details":{"reasoning_tokens":`...)
	s.buf = strconv.AppendInt(s.buf, int64(min(completion, g.reasoning)), 10)
	s.buf = append(s.buf, `},"total_tokens":`...)
	s.buf = strconv.AppendInt(s.buf, int64(p+completion), 10)
	s.buf = append(s.buf, "}}"...)
}

// item names the Responses item or the Messages block open: none, the
// reasoning's, the answer's, or the answer's tool call.
type item uint8

const (
	itemNone item = iota
	itemReasoning
	itemAnswer
	itemTool
)

// open writes the stream's first events: response.created and
// response.in_progress, or message_start and a ping.
func (s *sseWriter) open() {
	g := s.g
	switch g.api {
	case apiResponses:
		for _, typ := range []string{"response.created", "response.in_progress"} {
			s.event(typ)
			s.response("in_progress", 0)
			s.endEvent()
		}
	case apiMessages:
		s.event("message_start")
		s.buf = append(s.buf, `,"message":{"id":"`...)
		s.buf = append(s.buf, g.id...)
		s.buf = append(s.buf, `","type":"message","role":"assistant","model":`...)
		s.buf = appendJSONString(s.buf, g.model)
		s.buf = append(s.buf, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
		s.buf = strconv.AppendInt(s.buf, int64(g.promptLen), 10)
		s.buf = append(s.buf, `,"output_tokens":0}}`...)
		s.endEvent()
		s.event("ping")
		s.endEvent()
	}
}

// index appends the output_index (Responses) or the block's index
// (Messages) of the item open.
func (s *sseWriter) index() {
	if s.g.api == apiResponses {
		s.buf = append(s.buf, `,"item_id":"`...)
		s.buf = append(s.buf, s.itemID()...)
		s.buf = append(s.buf, `","output_index":`...)
	} else {
		s.buf = append(s.buf, `,"index":`...)
	}
	s.buf = strconv.AppendInt(s.buf, int64(s.items-1), 10)
}

func (s *sseWriter) itemID() string {
	switch s.item {
	case itemReasoning:
		return "rs_" + s.g.id
	case itemTool:
		return "fc_" + s.g.id
	}
	return "msg_" + s.g.id
}

// appendFunctionCall appends the rest of a Responses function_call item,
// after its id: its status, the arguments so far (done) or none, its call
// id and its name.
func (s *sseWriter) appendFunctionCall(done bool) {
	s.buf = append(s.buf, `","type":"function_call","status":"`...)
	if done {
		s.buf = append(s.buf, `completed","arguments":"`...)
		s.appendToolArgs(s.g.reasoning, s.sent)
	} else {
		s.buf = append(s.buf, `in_progress","arguments":"`...)
	}
	s.buf = append(s.buf, `","call_id":"call_`...)
	s.buf = append(s.buf, s.g.id...)
	s.buf = append(s.buf, `","name":`...)
	s.appendToolName()
	s.buf = append(s.buf, '}')
}

// startItem opens the item for tokens of kind k, closing the one open.
// itemEvent starts a Responses event about the current output item
// (response.output_item.added or .done): its index, and the item up to
// its id.
func (s *sseWriter) itemEvent(name string) {
	s.event(name)
	s.buf = append(s.buf, `,"output_index":`...)
	s.buf = strconv.AppendInt(s.buf, int64(s.items-1), 10)
	s.buf = append(s.buf, `,"item":{"id":"`...)
	s.buf = append(s.buf, s.itemID()...)
}

func (s *sseWriter) startItem(k item) {
	if s.item == k {
		return
	}
	s.closeItem()
	s.item = k
	s.items++
	switch s.g.api {
	case apiResponses:
		s.itemEvent("response.output_item.added")
		if k == itemTool {
			s.appendFunctionCall(false)
			s.endEvent()
			return
		}
		if k == itemReasoning {
			s.buf = append(s.buf, `","type":"reasoning","summary":[],"content":[]}`...)
			s.endEvent()
			s.event("response.reasoning_part.added")
			s.index()
			s.buf = append(s.buf, `,"content_index":0,"part":{"type":"reasoning_text","text":""}`...)
		} else {
			s.buf = append(s.buf, `","type":"message","status":"in_progress","role":"assistant","content":[]}`...)
			s.endEvent()
			s.event("response.content_part.added")
			s.index()
			s.buf = append(s.buf, `,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}`...)
		}
		s.endEvent()
	case apiMessages:
		s.event("content_block_start")
		s.index()
		switch k {
		case itemReasoning:
			s.buf = append(s.buf, `,"content_block":{"type":"thinking","thinking":""}`...)
		case itemTool:
			s.buf = append(s.buf, `,"content_block":{"type":"tool_use","id":"toolu_`...)
			s.buf = append(s.buf, s.g.id...)
			s.buf = append(s.buf, `","name":`...)
			s.appendToolName()
			s.buf = append(s.buf, `,"input":{}}`...)
		default:
			s.buf = append(s.buf, `,"content_block":{"type":"text","text":""}`...)
		}
		s.endEvent()
	}
}

// closeItem closes the item open, if any. The done events of the
// Responses API repeat the item's text, as the reference's do.
func (s *sseWriter) closeItem() {
	if s.item == itemNone {
		return
	}
	switch s.g.api {
	case apiResponses:
		if s.item == itemTool {
			s.event("response.function_call_arguments.done")
			s.index()
			s.buf = append(s.buf, `,"arguments":"`...)
			s.appendToolArgs(s.g.reasoning, s.sent)
			s.buf = append(s.buf, '"')
			s.endEvent()
			s.itemEvent("response.output_item.done")
			s.appendFunctionCall(true)
			s.endEvent()
			break
		}
		from, to := 0, s.g.reasoning
		part, done, partDone := "reasoning_text", "response.reasoning_text.done", "response.reasoning_part.done"
		if s.item == itemAnswer {
			from, to = s.g.reasoning, s.sent
			part, done, partDone = "output_text", "response.output_text.done", "response.content_part.done"
		}
		s.event(done)
		s.index()
		s.buf = append(s.buf, `,"content_index":0,"text":"`...)
		s.buf = appendText(s.buf, from, to)
		s.buf = append(s.buf, '"')
		s.endEvent()
		s.event(partDone)
		s.index()
		s.buf = append(s.buf, `,"content_index":0,"part":{"type":"`...)
		s.buf = append(s.buf, part...)
		s.buf = append(s.buf, `","text":"`...)
		s.buf = appendText(s.buf, from, to)
		s.buf = append(s.buf, `"}`...)
		s.endEvent()
		s.itemEvent("response.output_item.done")
		if s.item == itemReasoning {
			s.buf = append(s.buf, `","type":"reasoning","summary":[]}`...)
		} else {
			s.buf = append(s.buf, `","type":"message","status":"completed","role":"assistant"}`...)
		}
		s.endEvent()
	case apiMessages:
		if s.item == itemReasoning {
			s.event("content_block_delta")
			s.index()
			s.buf = append(s.buf, `,"delta":{"type":"signature_delta","signature":"c2ltdWxhdGVk"}`...)
			s.endEvent()
		}
		s.event("content_block_stop")
		s.index()
		s.endEvent()
	}
	s.item = itemNone
}

// delta writes output tokens from up to to, all reasoning or all answer.
func (s *sseWriter) delta(from, to int) {
	k := itemAnswer
	switch {
	case from < s.g.reasoning:
		k = itemReasoning
	case s.g.tool != "":
		k = itemTool
	}
	s.startItem(k)
	switch {
	case k == itemTool && s.g.api == apiResponses:
		s.event("response.function_call_arguments.delta")
		s.index()
		s.buf = append(s.buf, `,"delta":"`...)
		s.appendToolArgs(from, to)
		s.buf = append(s.buf, '"')
	case k == itemTool:
		s.event("content_block_delta")
		s.index()
		s.buf = append(s.buf, `,"delta":{"type":"input_json_delta","partial_json":"`...)
		s.appendToolArgs(from, to)
		s.buf = append(s.buf, `"}`...)
	case s.g.api == apiResponses:
		if k == itemReasoning {
			s.event("response.reasoning_text.delta")
		} else {
			s.event("response.output_text.delta")
		}
		s.index()
		s.buf = append(s.buf, `,"content_index":0,"delta":"`...)
		s.buf = appendText(s.buf, from, to)
		s.buf = append(s.buf, '"')
		if k == itemAnswer {
			s.buf = append(s.buf, `,"logprobs":[]`...)
		}
	default:
		s.event("content_block_delta")
		s.index()
		if k == itemReasoning {
			s.buf = append(s.buf, `,"delta":{"type":"thinking_delta","thinking":"`...)
		} else {
			s.buf = append(s.buf, `,"delta":{"type":"text_delta","text":"`...)
		}
		s.buf = appendText(s.buf, from, to)
		s.buf = append(s.buf, `"}`...)
	}
	s.endEvent()
	s.sent = to
}

// close ends the stream of a response that generated completion tokens,
// all it was allowed: response.incomplete (max_output_tokens), or
// message_delta (stop_reason max_tokens) and message_stop; a response
// whose answer was a tool call ends response.completed, or with
// stop_reason tool_use.
func (s *sseWriter) close(completion int) {
	s.closeItem()
	switch s.g.api {
	case apiResponses:
		if s.g.tool != "" && completion > s.g.reasoning {
			s.event("response.completed")
			s.response("completed", completion)
		} else {
			s.event("response.incomplete")
			s.response("incomplete", completion)
		}
		s.endEvent()
	case apiMessages:
		s.event("message_delta")
		if s.g.tool != "" && completion > s.g.reasoning {
			s.buf = append(s.buf, `,"delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":`...)
		} else {
			s.buf = append(s.buf, `,"delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"input_tokens":`...)
		}
		s.buf = strconv.AppendInt(s.buf, int64(s.g.promptLen), 10)
		s.buf = append(s.buf, `,"output_tokens":`...)
		s.buf = strconv.AppendInt(s.buf, int64(completion), 10)
		s.buf = append(s.buf, '}')
		s.endEvent()
		s.event("message_stop")
		s.endEvent()
	}
}

// apiError writes the stream's error event: the Responses API's (code and
// message at the top) or Anthropic's (an error object).
func (s *sseWriter) apiError(message string) {
	s.event("error")
	if s.g.api == apiResponses {
		s.buf = append(s.buf, `,"code":"server_error","message":`...)
		s.buf = strconv.AppendQuote(s.buf, message)
		s.buf = append(s.buf, `,"param":null`...)
	} else {
		s.buf = append(s.buf, `,"error":{"type":"api_error","message":`...)
		s.buf = strconv.AppendQuote(s.buf, message)
		s.buf = append(s.buf, '}')
	}
	s.endEvent()
}
