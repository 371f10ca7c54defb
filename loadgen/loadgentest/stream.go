package loadgentest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// appendJSONString appends s as a JSON string, quoted and escaped (a
// name from a request or a profile may hold any character).
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// appendText appends the text of output tokens from up to to: output token i
// is a space and the word words[i mod len(words)], so the simulator's
// tokenizer counts the text back to the same number of tokens.
func appendText(b []byte, from, to int) []byte {
	for i := from; i < to; i++ {
		b = append(b, ' ')
		b = append(b, words[i%len(words)]...)
	}
	return b
}

// sseWriter writes one response's server-sent events in vLLM's shapes. Each
// chunk is appended to one buffer reused for the whole response, so a token
// costs no allocation.
type sseWriter struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	g      *generation
	head   []byte // `{"id":...,"model":...,"choices":[`
	buf    []byte
	eol    string
	events int

	// The Responses and Messages streams' state: the item open, how many
	// were opened, and the tokens written.
	item  item
	items int
	sent  int
}

func newSSEWriter(w http.ResponseWriter, g *generation) *sseWriter {
	s := &sseWriter{w: w, rc: http.NewResponseController(w), g: g, eol: "\n"}
	if g.faults.crlf {
		s.eol = "\r\n"
	}
	object := "text_completion"
	if g.chat {
		object = "chat.completion.chunk"
	}
	s.head = append(s.head, `{"id":"`...)
	s.head = append(s.head, g.id...)
	s.head = append(s.head, `","object":"`...)
	s.head = append(s.head, object...)
	s.head = append(s.head, `","created":`...)
	s.head = strconv.AppendInt(s.head, g.created, 10)
	s.head = append(s.head, `,"model":`...)
	s.head = appendJSONString(s.head, g.model)
	s.head = append(s.head, `,"choices":[`...)
	return s
}

// begin starts an event: a ": ping" comment and event/id fields if the
// request asked for them, then "data: ".
func (s *sseWriter) begin() {
	f := &s.g.faults
	if f.ping {
		s.buf = append(s.buf, ": ping"...)
		s.buf = append(s.buf, s.eol...)
		s.buf = append(s.buf, s.eol...)
	}
	if f.fields {
		s.events++
		s.buf = append(s.buf, "event: message"...)
		s.buf = append(s.buf, s.eol...)
		s.buf = append(s.buf, "id: "...)
		s.buf = strconv.AppendInt(s.buf, int64(s.events), 10)
		s.buf = append(s.buf, s.eol...)
	}
	s.buf = append(s.buf, "data: "...)
}

func (s *sseWriter) end() {
	s.buf = append(s.buf, s.eol...)
	s.buf = append(s.buf, s.eol...)
}

func (s *sseWriter) appendUsage(completion int) {
	p := s.g.promptLen
	s.buf = append(s.buf, `,"usage":{"prompt_tokens":`...)
	s.buf = strconv.AppendInt(s.buf, int64(p), 10)
	s.buf = append(s.buf, `,"total_tokens":`...)
	s.buf = strconv.AppendInt(s.buf, int64(p+completion), 10)
	s.buf = append(s.buf, `,"completion_tokens":`...)
	s.buf = strconv.AppendInt(s.buf, int64(completion), 10)
	if s.g.reasoning > 0 {
		s.buf = append(s.buf, `,"completion_tokens_details":{"reasoning_tokens":`...)
		s.buf = strconv.AppendInt(s.buf, int64(min(completion, s.g.reasoning)), 10)
		s.buf = append(s.buf, '}')
	}
	if s.g.details {
		s.buf = append(s.buf, `,"prompt_tokens_details":{"cached_tokens":`...)
		s.buf = strconv.AppendInt(s.buf, int64(s.g.cachedTokens()), 10)
		s.buf = append(s.buf, '}')
	}
	s.buf = append(s.buf, '}')
}

// role writes the chat stream's first chunk, which carries only the role.
func (s *sseWriter) role() {
	s.begin()
	s.buf = append(s.buf, s.head...)
	s.buf = append(s.buf, `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`...)
	if s.g.continuous {
		s.appendUsage(0)
	}
	s.buf = append(s.buf, '}')
	s.end()
}

// content writes a chunk carrying output tokens from up to to; the last chunk
// carries the finish reason, as vLLM's does. Tokens before the request's
// reasoning tokens end go out as reasoning deltas; a chunk never mixes the
// two.
func (s *sseWriter) content(from, to int, last bool) {
	if s.g.api >= apiResponses {
		s.delta(from, to)
		return
	}
	s.begin()
	s.buf = append(s.buf, s.head...)
	if s.g.chat && from < s.g.reasoning {
		s.buf = append(s.buf, `{"index":0,"delta":{"`...)
		s.buf = append(s.buf, s.g.reasoningField...)
		s.buf = append(s.buf, `":"`...)
		s.buf = appendText(s.buf, from, to)
		s.buf = append(s.buf, `"},"logprobs":null,"finish_reason":`...)
	} else if s.g.tool != "" {
		s.toolDelta(from, to)
	} else if s.g.chat {
		s.buf = append(s.buf, `{"index":0,"delta":{"content":"`...)
		s.buf = appendText(s.buf, from, to)
		s.buf = append(s.buf, `"},"logprobs":null,"finish_reason":`...)
	} else {
		s.buf = append(s.buf, `{"index":0,"text":"`...)
		s.buf = appendText(s.buf, from, to)
		s.buf = append(s.buf, `","logprobs":null,"finish_reason":`...)
	}
	if last && s.g.tool != "" {
		s.buf = append(s.buf, `"tool_calls","stop_reason":null}]`...)
	} else if last {
		s.buf = append(s.buf, `"length","stop_reason":null}]`...)
	} else if s.g.chat {
		s.buf = append(s.buf, `null}]`...)
	} else {
		s.buf = append(s.buf, `null,"stop_reason":null}]`...)
	}
	if s.g.continuous {
		s.appendUsage(to)
	}
	s.buf = append(s.buf, '}')
	s.end()
}

// usage writes the final chunk: no choices, the request's usage.
func (s *sseWriter) usage(completion int) {
	s.begin()
	s.buf = append(s.buf, s.head...)
	s.buf = append(s.buf, ']')
	if s.g.usage {
		s.appendUsage(completion)
	}
	s.appendMetrics()
	s.buf = append(s.buf, '}')
	s.end()
}

func (s *sseWriter) done() {
	s.begin()
	s.buf = append(s.buf, "[DONE]"...)
	s.end()
}

// errorObject writes vLLM's in-stream error event, serialized as Python's
// json.dumps does (with spaces after ':' and ',').
func (s *sseWriter) errorObject(message string) {
	if s.g.api >= apiResponses {
		s.apiError(message)
		return
	}
	s.begin()
	s.buf = append(s.buf, `{"error": {"object": "error", "message": `...)
	s.buf = strconv.AppendQuote(s.buf, message)
	s.buf = append(s.buf, `, "type": "InternalServerError", "param": null, "code": 500}}`...)
	s.end()
}

// malformed writes a data line that is not valid JSON.
func (s *sseWriter) malformed() {
	s.begin()
	s.buf = append(s.buf, s.head...)
	s.buf = append(s.buf, `{"index":0,"delta":{"content":"`...)
	s.end()
}

// spaces is the padding of oversized lines, written piece by piece.
var spaces = func() []byte {
	b := make([]byte, 32<<10)
	for i := range b {
		b[i] = ' '
	}
	return b
}()

// oversized writes a valid chunk with no tokens whose data line is padded
// with white space to size bytes, without holding it in memory.
func (s *sseWriter) oversized(size int) error {
	s.begin()
	start := len(s.buf)
	s.buf = append(s.buf, s.head...)
	s.buf = append(s.buf, `{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":null}]`...)
	pad := size - (len(s.buf) - start) - len("data: ") - 1
	if _, err := s.w.Write(s.buf); err != nil {
		return err
	}
	s.buf = s.buf[:0]
	for pad > 0 {
		n, err := s.w.Write(spaces[:min(pad, len(spaces))])
		if err != nil {
			return err
		}
		pad -= n
	}
	s.buf = append(s.buf, '}')
	s.end()
	return nil
}

// flush writes the buffered events and flushes them to the connection.
func (s *sseWriter) flush() error {
	if len(s.buf) > 0 {
		_, err := s.w.Write(s.buf)
		s.buf = s.buf[:0]
		if err != nil {
			return err
		}
	}
	return s.rc.Flush()
}

// stream answers a streaming request: headers at once, as vLLM's server
// does, then the chunks as the engine produces tokens. When the writer falls
// behind the engine, the tokens produced meanwhile go out in one chunk, as
// vLLM merges the outputs of a lagging request; but not before a fault that
// counts chunks has come, so that it comes after as many tokens whatever
// the machine's load.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, g *generation) string {
	f := &g.faults
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	s := newSSEWriter(w, g)
	s.open()
	if err := s.flush(); err != nil {
		h.eng.abort(g.req)
		return "aborted"
	}
	sent, chunks := 0, 0
	role := g.api == apiChat
	for {
		if outcome, ok := h.wait(r, g); !ok {
			return outcome
		}
		finished := g.req.state.Load() == stateFinished
		n := int(g.req.out.Load())
		for n > sent && (finished || n-sent >= f.chunkTokens) {
			if outcome, stop := h.fault(w, r, g, s, chunks); stop {
				return outcome
			}
			k := n - sent
			if f.chunkTokens > 1 || f.pending(chunks) || g.api >= apiResponses {
				// The Responses and Messages streams carry one token an
				// event (or chunk-tokens).
				// A fault due after so many chunks finds them all, each
				// of chunk-tokens tokens, however far the writer lags.
				k = min(k, f.chunkTokens)
			}
			if sent < g.reasoning {
				k = min(k, g.reasoning-sent) // reasoning and answer apart
			}
			if role {
				s.role()
				role = false
			}
			if chunks == 0 && f.oversize > 0 {
				if err := s.oversized(f.oversize); err != nil {
					h.eng.abort(g.req)
					return "aborted"
				}
			}
			s.content(sent, sent+k, finished && sent+k == n)
			if err := s.flush(); err != nil {
				h.eng.abort(g.req)
				return "aborted"
			}
			now := time.Now()
			h.truth.chunk(g.rec, now, k)
			if chunks == 0 {
				g.firstFlush = now
			}
			h.chunks.Add(1)
			h.written.Add(int64(k))
			sent += k
			chunks++
		}
		if finished && sent == n && g.api >= apiResponses {
			s.close(n)
			s.flush()
			return "length"
		}
		if finished && sent == n {
			if g.usage || g.metrics {
				s.usage(n)
			}
			if !f.noDone {
				s.done()
			}
			s.flush()
			return "length"
		}
	}
}

// fault carries out the faults due after chunks chunks; stop reports that
// the response ends here.
func (h *Handler) fault(w http.ResponseWriter, r *http.Request, g *generation, s *sseWriter, chunks int) (outcome string, stop bool) {
	f := &g.faults
	if f.malformed == chunks {
		s.malformed()
	}
	switch chunks {
	case f.resetAfter:
		s.flush()
		h.eng.abort(g.req)
		resetConn(w)
		return "fault:reset-after", true
	case f.errorAfter:
		s.errorObject("simulated failure (fault error-after)")
		if g.api < apiResponses {
			s.done()
		}
		s.flush()
		h.eng.abort(g.req)
		return "fault:error-after", true
	case f.stallAfter:
		s.flush()
		h.eng.abort(g.req)
		return h.stall(r.Context(), "stall-after"), true
	case f.eofAfter:
		s.flush()
		h.eng.abort(g.req)
		return "fault:eof-after", true
	}
	return "", false
}
