package chunk

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseChunk checks the chunk scanner against encoding/json: it accepts
// exactly the JSON encoding/json accepts, and on valid JSON it reads the
// same fields as a reference decoder written over encoding/json's generic
// values. The seed corpus (testdata/fuzz/FuzzParseChunk) holds every data
// payload of the transcripts.
func FuzzParseChunk(f *testing.F) {
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`))
	f.Add([]byte(`[DONE]`))
	f.Fuzz(checkChunk)
}

// FuzzResponsesEvent fuzzes the chunk parser from the Responses API's
// events (testdata/fuzz/FuzzResponsesEvent holds every one of the
// transcripts'): the reference reads them by their type as the parser
// does.
func FuzzResponsesEvent(f *testing.F) {
	f.Add([]byte(`{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi"}`))
	f.Add([]byte(`{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":5,"output_tokens":9,"output_tokens_details":{"reasoning_tokens":4}}}}`))
	f.Fuzz(checkChunk)
}

// FuzzMessagesEvent fuzzes the chunk parser from the Anthropic Messages
// API's events (testdata/fuzz/FuzzMessagesEvent).
func FuzzMessagesEvent(f *testing.F) {
	f.Add([]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hm"}}`))
	f.Add([]byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":42}}`))
	f.Fuzz(checkChunk)
}

// checkChunk parses data and compares what the parser makes of it with
// what encoding/json's reading of it says.
func checkChunk(t *testing.T, data []byte) {
	var c Chunk
	err := Parse(data, &c)
	if string(data) == "[DONE]" {
		if err != nil || !c.Done {
			t.Fatalf("[DONE] not recognised: %v", err)
		}
		return
	}
	if !json.Valid(data) {
		if err == nil && c.Timings.Literal {
			return // NaN or Infinity in vLLM's metrics, passed over on purpose
		}
		if !errors.Is(err, ErrJSONSyntax) {
			t.Fatalf("invalid JSON %q not refused as such: %v", data, err)
		}
		return
	}
	if errors.Is(err, ErrJSONSyntax) {
		t.Fatalf("rejected valid JSON %q as a syntax error: %v", data, err)
	}
	if hasDuplicateKeys(data) {
		return // encoding/json keeps the last; the scanner reads them all
	}
	want, wantErr := referenceChunk(data)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: scanner error %v, reference error %v", data, err, wantErr)
	}
	if err != nil {
		return
	}
	got := view(&c)
	want.compare(t, data, got)
}

// chunkView is what a chunk says, decoded, for comparison.
type chunkView struct {
	Done, HasUsage, IsError, End bool
	Tokens                       int
	Content, Reasoning, Finish   string
	Prompt, Completion, Cached   int64
	ErrMsg                       string
	ReasoningTokens              int
	ToolCall                     bool
	HasReasoning                 bool
	ReasoningUsage               int64

	// Fields the reference cannot settle, because the JSON gives them twice
	// under different names and only the order decides.
	skipContent, skipReasoning, skipFinish, skipPrompt, skipCached bool
	skipReasoningUsage, skipErrMsg                                 bool
}

func view(c *Chunk) chunkView {
	return chunkView{
		Done: c.Done, HasUsage: c.HasUsage, IsError: c.IsError, End: c.End, Tokens: c.Tokens,
		Content: DecodeString(c.Content), Reasoning: DecodeString(c.Reasoning), Finish: DecodeString(c.Finish),
		Prompt: c.Prompt, Completion: c.Completion, Cached: c.Cached, ErrMsg: DecodeString(c.ErrMsg),
		ReasoningTokens: c.ReasoningTokens, ToolCall: c.ToolCall, HasReasoning: c.HasReasoning, ReasoningUsage: c.ReasoningUsage,
	}
}

func (w chunkView) compare(t *testing.T, data []byte, got chunkView) {
	t.Helper()
	check := func(name string, skip bool, a, b any) {
		if !skip && a != b {
			t.Fatalf("%q: %s = %v, reference says %v", data, name, a, b)
		}
	}
	check("done", false, got.Done, w.Done)
	check("tokens", false, got.Tokens, w.Tokens)
	check("hasUsage", false, got.HasUsage, w.HasUsage)
	check("completion", false, got.Completion, w.Completion)
	check("isError", false, got.IsError, w.IsError)
	check("end", false, got.End, w.End)
	check("content", w.skipContent, got.Content, w.Content)
	check("reasoning", w.skipReasoning, got.Reasoning, w.Reasoning)
	check("finish", w.skipFinish, got.Finish, w.Finish)
	check("prompt", w.skipPrompt, got.Prompt, w.Prompt)
	check("cached", w.skipCached, got.Cached, w.Cached)
	check("reasoningTokens", w.skipContent || w.skipReasoning, got.ReasoningTokens, w.ReasoningTokens)
	check("toolCall", false, got.ToolCall, w.ToolCall)
	check("hasReasoning", w.skipReasoningUsage, got.HasReasoning, w.HasReasoning)
	check("reasoningUsage", w.skipReasoningUsage, got.ReasoningUsage, w.ReasoningUsage)
	if w.IsError {
		check("errMsg", w.skipErrMsg, got.ErrMsg, w.ErrMsg)
	}
}

var errShape = errors.New("unexpected shape")

// referenceChunk reads what the scanner reads, from encoding/json's generic
// values. It returns errShape where the scanner must refuse the chunk.
func referenceChunk(data []byte) (chunkView, error) {
	var w chunkView
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return w, err
	}
	top, ok := v.(map[string]any)
	if !ok {
		return w, errShape
	}
	str := func(v any, present bool) (s string, isStr bool, err error) {
		switch x := v.(type) {
		case nil:
			return "", false, nil
		case string:
			return x, true, nil
		}
		if !present {
			return "", false, nil
		}
		return "", false, errShape
	}
	num := func(v any) (int64, bool, error) {
		switch x := v.(type) {
		case nil:
			return 0, false, nil
		case json.Number:
			n, err := strconv.ParseInt(string(x), 10, 64)
			if err != nil || n < 0 {
				return 0, false, errShape
			}
			return n, true, nil
		}
		return 0, false, errShape
	}
	obj := func(v any) (map[string]any, error) {
		switch x := v.(type) {
		case nil:
			return nil, nil
		case map[string]any:
			return x, nil
		}
		return nil, errShape
	}
	arr := func(v any) ([]any, error) {
		switch x := v.(type) {
		case nil:
			return nil, nil
		case []any:
			return x, nil
		}
		return nil, errShape
	}
	raw := func(v any) string {
		if s, ok := v.(string); ok {
			return s
		}
		b, _ := json.Marshal(v)
		return string(b)
	}

	finishSet := false
	contentSources := 0
	// addChoice mirrors chunk.addChoice.
	addChoice := func(index int64, content, text, reasoning string, tool bool, finish string, hasFinish bool) {
		w.ToolCall = w.ToolCall || tool
		if content != "" || text != "" || reasoning != "" || tool {
			w.Tokens++
			if content == "" && text == "" && !tool {
				w.ReasoningTokens++
			}
		}
		if index == 0 {
			switch {
			case content != "":
				w.Content = content
			case text != "":
				w.Content = text
			}
			if reasoning != "" {
				w.Reasoning = reasoning
			}
		}
		if !finishSet && hasFinish {
			w.Finish, finishSet = finish, true
		}
	}
	// delta reads a delta object; text and finish may come from the choice.
	delta := func(m map[string]any) (content, text, reasoning string, tool bool, finish string, hasFinish bool, err error) {
		if content, _, err = str(m["content"], true); err != nil {
			return
		}
		if text, _, err = str(m["text"], true); err != nil {
			return
		}
		nonEmpty := 0
		for _, k := range []string{"reasoning_content", "reasoning", "thinking"} {
			var r string
			if r, _, err = str(m[k], true); err != nil {
				return
			}
			if r != "" {
				reasoning = r
				nonEmpty++
			}
		}
		if nonEmpty > 1 {
			w.skipReasoning = true
		}
		var pj string
		if pj, _, err = str(m["partial_json"], true); err != nil {
			return
		}
		tool = pj != ""
		if finish, hasFinish, err = str(m["stop_reason"], true); err != nil {
			return
		}
		var calls []any
		if calls, err = arr(m["tool_calls"]); err != nil {
			return
		}
		for _, c := range calls {
			var cm, fm map[string]any
			if cm, err = obj(c); err != nil {
				return
			}
			if fm, err = obj(cm["function"]); err != nil {
				return
			}
			for _, k := range []string{"name", "arguments"} {
				var s string
				if s, _, err = str(fm[k], true); err != nil {
					return
				}
				tool = tool || s != ""
			}
		}
		return
	}

	if _, ok := top["token"]; ok {
		contentSources++
	}
	if _, ok := top["delta"]; ok {
		contentSources++
	}
	choices, err := arr(top["choices"])
	if err != nil {
		return w, err
	}
	if len(choices) > 0 {
		contentSources++
	}
	if contentSources > 1 {
		w.skipContent, w.skipReasoning, w.skipFinish = true, true, true
	}
	for _, c := range choices {
		if c == nil {
			continue
		}
		m, ok := c.(map[string]any)
		if !ok {
			return w, errShape
		}
		index, _, err := num(m["index"])
		if err != nil {
			return w, err
		}
		choiceText, _, err := str(m["text"], true)
		if err != nil {
			return w, err
		}
		finish, hasFinish, err := str(m["finish_reason"], true)
		if err != nil {
			return w, err
		}
		var content, text, reasoning string
		var tool bool
		for _, k := range []string{"delta", "message"} {
			dm, err := obj(m[k])
			if err != nil {
				return w, err
			}
			if dm == nil {
				continue
			}
			c2, t2, r2, tool2, f2, hf2, err := delta(dm)
			if err != nil {
				return w, err
			}
			if c2 != "" || dm["content"] != nil {
				content = c2
			}
			if _, ok := dm["text"]; ok {
				text = t2
				if _, both := m["text"]; both {
					w.skipContent = true
				}
			}
			if r2 != "" {
				reasoning = r2
			}
			tool = tool || tool2
			if hf2 {
				if hasFinish {
					w.skipFinish = true
				}
				finish, hasFinish = f2, true
			}
		}
		if _, ok := m["delta"]; ok {
			if _, ok := m["message"]; ok {
				w.skipContent, w.skipReasoning = true, true
			}
		}
		if text == "" {
			text = choiceText
		}
		addChoice(index, content, text, reasoning, tool, finish, hasFinish)
	}

	deltaText, hasDeltaText := top["delta"].(string)
	if hasDeltaText {
		// The Responses API's text delta: settled by the event's type below.
	} else if dm, err := obj(top["delta"]); err != nil {
		return w, err
	} else if dm != nil {
		content, text, reasoning, tool, finish, hasFinish, err := delta(dm)
		if err != nil {
			return w, err
		}
		addChoice(0, content, text, reasoning, tool, finish, hasFinish)
	}

	var usages []map[string]any
	u, err := obj(top["usage"])
	if err != nil {
		return w, err
	}
	usages = append(usages, u)
	if mv, ok := top["message"].(map[string]any); ok {
		mu, err := obj(mv["usage"])
		if err != nil {
			return w, err
		}
		usages = append(usages, mu)
	}
	// The Responses API's response object: usage, status, incomplete
	// reason and error.
	var status, incomplete string
	var hasStatus, hasIncomplete, responseError bool
	var responseErrMsg string
	rv, err := obj(top["response"])
	if err != nil {
		return w, err
	}
	if rv != nil {
		ru, err := obj(rv["usage"])
		if err != nil {
			return w, err
		}
		usages = append(usages, ru)
		if status, hasStatus, err = str(rv["status"], true); err != nil {
			return w, err
		}
		id, err := obj(rv["incomplete_details"])
		if err != nil {
			return w, err
		}
		if id != nil {
			if incomplete, hasIncomplete, err = str(id["reason"], true); err != nil {
				return w, err
			}
		}
		if e, ok := rv["error"]; ok && e != nil {
			responseError = true
			if em, ok := e.(map[string]any); ok {
				if m, ok := em["message"]; ok {
					responseErrMsg = raw(m)
				}
			} else {
				responseErrMsg = raw(e)
			}
		}
	}
	var output int64
	hasOutput, prompts, cacheds := false, 0, 0
	for _, u := range usages {
		if u == nil {
			continue
		}
		for _, k := range []string{"prompt_tokens", "input_tokens"} {
			if _, ok := u[k]; ok {
				prompts++
				n, set, err := num(u[k])
				if err != nil {
					return w, err
				}
				if set {
					w.Prompt = n
				}
			}
		}
		if _, ok := u["completion_tokens"]; ok {
			w.HasUsage = true
			n, _, err := num(u["completion_tokens"])
			if err != nil {
				return w, err
			}
			w.Completion = n
		}
		if _, ok := u["output_tokens"]; ok {
			n, _, err := num(u["output_tokens"])
			if err != nil {
				return w, err
			}
			hasOutput, output = true, n
		}
		if _, ok := u["cache_read_input_tokens"]; ok {
			cacheds++
			n, set, err := num(u["cache_read_input_tokens"])
			if err != nil {
				return w, err
			}
			if set {
				w.Cached = n
			}
		}
		for _, k := range []string{"prompt_tokens_details", "input_tokens_details"} {
			pd, err := obj(u[k])
			if err != nil {
				return w, err
			}
			if pd != nil {
				if _, ok := pd["cached_tokens"]; ok {
					cacheds++
					n, set, err := num(pd["cached_tokens"])
					if err != nil {
						return w, err
					}
					if set {
						w.Cached = n
					}
				}
			}
		}
		details := 0
		for _, k := range []string{"completion_tokens_details", "output_tokens_details"} {
			cd, err := obj(u[k])
			if err != nil {
				return w, err
			}
			if cd != nil {
				if _, ok := cd["reasoning_tokens"]; ok {
					details++
					n, set, err := num(cd["reasoning_tokens"])
					if err != nil {
						return w, err
					}
					if set {
						w.HasReasoning, w.ReasoningUsage = true, n
					}
				}
			}
		}
		if details > 1 {
			w.skipReasoningUsage = true
		}
	}
	if len(usages) > 1 {
		w.skipReasoningUsage = true
	}
	if prompts > 1 {
		w.skipPrompt = true
	}
	if cacheds > 1 {
		w.skipCached = true
	}

	if tok, err := obj(top["token"]); err != nil {
		return w, err
	} else if tok != nil {
		w.Tokens++
		s, _, err := str(tok["text"], true)
		if err != nil {
			return w, err
		}
		w.Content = s
	}
	if gt, ok := top["generated_text"]; ok && gt != nil {
		w.End = true
	}
	if det, err := obj(top["details"]); err != nil {
		return w, err
	} else if det != nil {
		f, isStr, err := str(det["finish_reason"], true)
		if err != nil {
			return w, err
		}
		if isStr && !finishSet {
			w.Finish = f
		}
		if isStr && finishSet {
			w.skipFinish = true
		}
	}

	if _, _, err := str(top["error_type"], true); err != nil {
		return w, err
	}
	objectIsError := false
	if o, isStr, err := str(top["object"], true); err != nil {
		return w, err
	} else if isStr && o == "error" {
		objectIsError = true
	}
	topErr := false
	if e, ok := top["error"]; ok && e != nil {
		topErr = true
		w.IsError = true
		if em, ok := e.(map[string]any); ok {
			if m, ok := em["message"]; ok {
				w.ErrMsg = raw(m)
			}
		} else {
			w.ErrMsg = raw(e)
		}
	}
	typ, _ := top["type"].(string)
	_, typePresent := top["type"]
	switch {
	case typ == "message_stop":
		w.Done = true
	case typ == "message_delta" || !typePresent:
		if hasOutput {
			w.HasUsage, w.Completion = true, output
		}
	case (typ == "response.output_text.delta" || typ == "response.refusal.delta") && deltaText != "":
		w.Tokens++
		w.Content = deltaText
		if contentSources > 1 {
			w.skipContent = true
		}
	case (typ == "response.reasoning_text.delta" || typ == "response.reasoning_summary_text.delta") && deltaText != "":
		w.Tokens++
		w.ReasoningTokens++
		w.Reasoning = deltaText
	case typ == "response.function_call_arguments.delta" && deltaText != "":
		w.Tokens++
		w.ToolCall = true
	case typ == "response.completed" || typ == "response.incomplete":
		w.End = true
		if hasOutput {
			w.HasUsage, w.Completion = true, output
		}
		w.Finish = ""
		if hasStatus {
			w.Finish = status
		}
		if hasIncomplete {
			w.Finish = incomplete
		}
		w.skipFinish = false // the response's status settles it
	case typ == "response.failed":
		w.IsError = true
		if topErr || responseError {
			w.skipErrMsg = true // set unless the error object had a message
		} else {
			w.ErrMsg = "the response failed"
		}
	case typ == "error":
		w.IsError = true
		if topErr || responseError {
			w.skipErrMsg = true
		} else if m, ok := top["message"]; ok {
			if _, isObj := m.(map[string]any); !isObj {
				w.ErrMsg = raw(m)
			}
		}
	}
	if responseError {
		w.IsError = true
		if topErr {
			w.skipErrMsg = true
		} else {
			w.ErrMsg = responseErrMsg
		}
	}
	if objectIsError {
		w.IsError = true
		if _, ok := top["error"].(map[string]any); !ok || top["error"].(map[string]any)["message"] == nil {
			if m, ok := top["message"]; ok {
				if _, isObj := m.(map[string]any); !isObj && w.ErrMsg == "" {
					w.ErrMsg = raw(m)
				}
			}
		}
	}
	return w, nil
}

// hasDuplicateKeys reports whether any object in data repeats a member name.
func hasDuplicateKeys(data []byte) bool {
	d := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		keys   map[string]bool
		isObj  bool
		expKey bool
	}
	var stack []frame
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			return false
		}
		switch x := tok.(type) {
		case json.Delim:
			switch x {
			case '{':
				stack = append(stack, frame{keys: map[string]bool{}, isObj: true, expKey: true})
				continue
			case '[':
				stack = append(stack, frame{})
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].isObj && stack[n-1].expKey {
				if stack[n-1].keys[x] {
					return true
				}
				stack[n-1].keys[x] = true
				stack[n-1].expKey = false
				continue
			}
		}
		if n := len(stack); n > 0 && stack[n-1].isObj {
			stack[n-1].expKey = true
		}
	}
}

// TestFuzzCorpusIsCurrent checks that the seed corpus holds every data
// payload of the transcripts.
func TestFuzzCorpusIsCurrent(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "transcripts", "*.sse"))
	want := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n") {
			if strings.HasPrefix(line, "data:") {
				want++
			}
		}
	}
	corpus, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzParseChunk", "*"))
	if len(corpus) < want/2 {
		t.Errorf("seed corpus has %d entries for %d data lines; regenerate it", len(corpus), want)
	}
}
