package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llmload/llmload/loadgen"
)

// BodyFlags are the flags that add to every request body: -body-extra,
// -tools, -tool-choice and -response-format. Register them with
// [BodyFlags.Register]; [BodyFlags.Extra] reads and checks them once
// the API is known, before anything is sent.
type BodyFlags struct {
	BodyExtra, Tools, ToolChoice, ResponseFormat string
}

// Register defines the flags on fs.
func (f *BodyFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.BodyExtra, "body-extra", "", "JSON file of fields merged into every request body; not the model, the prompt or the output length, which llmload reports by (use -model, -dataset and -output-len)")
	fs.StringVar(&f.Tools, "tools", "", "JSON file of OpenAI tool schemas ([{\"type\":\"function\",\"function\":{...}}]) sent with every request, in the form -api's API takes (chat, responses, messages)")
	fs.StringVar(&f.ToolChoice, "tool-choice", "", "auto, none, required, or the name of one of -tools' tools")
	fs.StringVar(&f.ResponseFormat, "response-format", "", "JSON file of an OpenAI response_format ({\"type\":\"json_schema\",...}) sent with every request (chat; responses as its text.format)")
}

// Files returns the files the flags read, for [Distinct].
func (f *BodyFlags) Files() []FileFlag {
	return []FileFlag{{"body-extra", f.BodyExtra}, {"tools", f.Tools}, {"response-format", f.ResponseFormat}}
}

// Extra returns the fields the flags add to every body of api, or an
// error naming the flag.
func (f *BodyFlags) Extra(api loadgen.API) (map[string]any, error) {
	m := map[string]any{}
	if f.Tools != "" {
		if err := conversational(api, "-tools", "calls no tools"); err != nil {
			return nil, err
		}
		tools, names, err := readTools(f.Tools, api)
		if err != nil {
			return nil, err
		}
		m["tools"] = tools
		if err := checkToolChoice(f.ToolChoice, f.Tools, names); err != nil {
			return nil, err
		}
	}
	if f.ToolChoice != "" {
		if f.Tools == "" {
			return nil, fmt.Errorf("-tool-choice %q without -tools", f.ToolChoice)
		}
		m["tool_choice"] = toolChoice(f.ToolChoice, api)
	}
	if f.ResponseFormat != "" {
		if err := conversational(api, "-response-format", "has no response format"); err != nil {
			return nil, err
		}
		var rf map[string]any
		b, err := readInput(f.ResponseFormat)
		if err != nil {
			return nil, fmt.Errorf("-response-format: %w", err)
		}
		if err := json.Unmarshal(b, &rf); err != nil || rf == nil {
			return nil, fmt.Errorf("-response-format %s: want one JSON object such as {\"type\":\"json_schema\",\"json_schema\":{...}}: %v", f.ResponseFormat, err)
		}
		switch api {
		case loadgen.Responses:
			format := maps.Clone(rf)
			if js, ok := rf["json_schema"].(map[string]any); ok { // the Responses API flattens it
				delete(format, "json_schema")
				maps.Copy(format, js)
			}
			m["text"] = map[string]any{"format": format}
		case loadgen.Messages:
			return nil, fmt.Errorf("-response-format: the Messages API has no response_format; use -tools, or -body-extra for a server's own field")
		default:
			m["response_format"] = rf
		}
	}
	if f.BodyExtra != "" {
		extra, err := ReadBodyExtra(f.BodyExtra)
		if err != nil {
			return nil, err
		}
		maps.Copy(m, extra) // -body-extra has the last word
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// checkToolChoice refuses a -tool-choice that names none of the tools
// (names, read from path): the server would refuse every request.
func checkToolChoice(choice, path string, names []string) error {
	switch {
	case choice == "", choice == "auto", choice == "none", choice == "required", slices.Contains(names, choice):
		return nil
	}
	return fmt.Errorf("-tool-choice %q: -tools %s has no such tool; give auto, none, required or one of its tools: %s", choice, path, strings.Join(names, ", "))
}

// readTools reads OpenAI chat tool schemas and writes them as api takes
// them: the Responses API's flat functions, the Messages API's
// input_schema. It returns the tools' names too.
func readTools(path string, api loadgen.API) ([]any, []string, error) {
	var tools []map[string]any
	b, err := readInput(path)
	if err != nil {
		return nil, nil, fmt.Errorf("-tools: %w", err)
	}
	if err := json.Unmarshal(b, &tools); err != nil {
		return nil, nil, fmt.Errorf("-tools %s: want a JSON array of tools such as [{\"type\":\"function\",\"function\":{\"name\":...,\"parameters\":{...}}}]: %w", path, err)
	}
	if len(tools) == 0 {
		return nil, nil, fmt.Errorf("-tools: the list is empty in %s: give one tool or more, or drop -tools", path)
	}
	out := make([]any, len(tools))
	names := make([]string, len(tools))
	for i, t := range tools {
		fn, ok := t["function"].(map[string]any)
		name, _ := fn["name"].(string)
		if t["type"] != "function" || !ok || name == "" {
			return nil, nil, fmt.Errorf("-tools %s: tool %d is not {\"type\":\"function\",\"function\":{\"name\":...}}", path, i)
		}
		names[i] = name
		switch api {
		case loadgen.Responses:
			flat := map[string]any{"type": "function"}
			maps.Copy(flat, fn)
			out[i] = flat
		case loadgen.Messages:
			schema := fn["parameters"]
			if schema == nil {
				schema = map[string]any{"type": "object", "properties": map[string]any{}}
			}
			mt := map[string]any{"name": name, "input_schema": schema}
			if d, ok := fn["description"]; ok {
				mt["description"] = d
			}
			out[i] = mt
		default:
			out[i] = t
		}
	}
	return out, names, nil
}

// toolChoice writes -tool-choice as api takes it.
func toolChoice(c string, api loadgen.API) any {
	switch api {
	case loadgen.Messages:
		switch c {
		case "auto", "none":
			return map[string]any{"type": c}
		case "required":
			return map[string]any{"type": "any"}
		}
		return map[string]any{"type": "tool", "name": c}
	case loadgen.Responses:
		switch c {
		case "auto", "none", "required":
			return c
		}
		return map[string]any{"type": "function", "name": c}
	}
	switch c {
	case "auto", "none", "required":
		return c
	}
	return map[string]any{"type": "function", "function": map[string]any{"name": c}}
}
