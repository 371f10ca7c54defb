package loadgentest

import (
	"encoding/json"
)

// maxToolName bounds the name of the tool the simulator calls.
const maxToolName = 64

// toolToCall returns the name of the tool the simulator calls for a
// request that carries tools: the one tool_choice names, else the first
// tool's; "" when the request carries none, or tool_choice is "none".
// Tools are read in the three APIs' forms (chat's {"type": "function",
// "function": {"name": ...}}, Responses' {"type": "function", "name":
// ...}, Messages' {"name": ..., "input_schema": ...}), as is tool_choice
// ("none", "auto", "required", chat's {"type": "function", "function":
// {"name": ...}}, Responses' {"type": "function", "name": ...},
// Messages' {"type": "auto"|"any"|"tool"|"none", "name": ...}).
func toolToCall(tools, choice json.RawMessage) (string, *apiError) {
	if len(tools) == 0 || string(tools) == "null" {
		return "", nil
	}
	var list []struct {
		Name     string `json:"name"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(tools, &list); err != nil {
		return "", badRequest("tools must be a list of tools")
	}
	if len(list) == 0 {
		return "", nil
	}
	name := list[0].Name
	if f := list[0].Function; f != nil {
		name = f.Name
	}
	if len(choice) > 0 && string(choice) != "null" {
		var s string
		if json.Unmarshal(choice, &s) == nil {
			if s == "none" {
				return "", nil
			}
		} else {
			var c struct {
				Type     string `json:"type"`
				Name     string `json:"name"`
				Function *struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if err := json.Unmarshal(choice, &c); err != nil {
				return "", badRequest("tool_choice must be a string or an object")
			}
			switch {
			case c.Type == "none":
				return "", nil
			case c.Function != nil && c.Function.Name != "":
				name = c.Function.Name
			case c.Name != "":
				name = c.Name
			}
		}
	}
	if name == "" || len(name) > maxToolName {
		return "", badRequest("a tool needs a name of 1 to %d bytes", maxToolName)
	}
	return name, nil
}

// The arguments of the simulator's tool call: one JSON object whose
// "input" is the answer's text, written piece by piece, escaped as the
// JSON string of an event's field holds them.
const (
	toolArgsOpen  = `{\"input\":\"`
	toolArgsClose = `\"}`
)

// appendToolArgs appends the arguments' piece of output tokens from up
// to to: the object's opening before the answer's first token, its
// closing after the request's last.
func (s *sseWriter) appendToolArgs(from, to int) {
	if from == s.g.reasoning {
		s.buf = append(s.buf, toolArgsOpen...)
	}
	s.buf = appendText(s.buf, from, to)
	if to >= s.g.maxTokens {
		s.buf = append(s.buf, toolArgsClose...)
	}
}

// appendToolName appends the tool's name as a JSON string.
func (s *sseWriter) appendToolName() {
	s.buf = appendJSONString(s.buf, s.g.tool)
}

// toolDelta writes a chat chunk of the tool call: the first carries the
// call's id, type and name, as vLLM's tool parsers send them, every one a
// piece of the arguments.
func (s *sseWriter) toolDelta(from, to int) {
	s.buf = append(s.buf, `{"index":0,"delta":{"tool_calls":[{"index":0,`...)
	if from == s.g.reasoning {
		s.buf = append(s.buf, `"id":"call_`...)
		s.buf = append(s.buf, s.g.id...)
		s.buf = append(s.buf, `","type":"function","function":{"name":`...)
		s.appendToolName()
		s.buf = append(s.buf, `,"arguments":"`...)
	} else {
		s.buf = append(s.buf, `"function":{"arguments":"`...)
	}
	s.appendToolArgs(from, to)
	s.buf = append(s.buf, `"}}]},"logprobs":null,"finish_reason":`...)
}
