package loadgentest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/simtokens"
)

// maxBodyBytes bounds a request body: a 262,144-token prompt is about 2 MB.
const maxBodyBytes = 64 << 20

// genRequest is the body of /v1/completions and /v1/chat/completions, as far
// as the simulator reads it. Other fields are accepted and ignored.
type genRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           int             `json:"min_tokens"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	N                   *int            `json:"n"`
	Stream              bool            `json:"stream"`
	IncludeMetrics      bool            `json:"include_metrics"`
	// The Responses API's input, instructions and max_output_tokens; the
	// Messages API's system prompt.
	Input           json.RawMessage `json:"input"`
	Instructions    string          `json:"instructions"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	System          json.RawMessage `json:"system"`
	// Tools and ToolChoice, in any of the three APIs' forms: a request
	// that carries tools gets a tool call as its answer.
	Tools         json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
	StreamOptions *struct {
		IncludeUsage         *bool `json:"include_usage"`
		ContinuousUsageStats bool  `json:"continuous_usage_stats"`
	} `json:"stream_options"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// prompt is a request's input before tokenization.
type prompt struct {
	text string
	ids  []int // a prompt given as token ids
	msgs []message
	chat bool
}

// each calls yield with each token id of the prompt.
func (p *prompt) each(yield func(id uint32)) {
	if p.ids != nil {
		for _, id := range p.ids {
			yield(uint32(id))
		}
		return
	}
	promptTokens(p.text, p.msgs, p.chat, yield)
}

// apiError is an error answered in vLLM's JSON shape.
type apiError struct {
	status  int
	message string
	param   string
}

func (e *apiError) Error() string { return e.message }

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, message: fmt.Sprintf(format, args...)}
}

// errorType names an HTTP status the way vLLM's error bodies do.
func errorType(status int) string {
	t := strings.ReplaceAll(http.StatusText(status), " ", "")
	if !strings.HasSuffix(t, "Error") {
		t += "Error"
	}
	return t
}

// writeError answers with vLLM's error body:
// {"error":{"message":...,"type":...,"param":...,"code":...}}.
func writeError(w http.ResponseWriter, e *apiError) {
	type info struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	}
	body := struct {
		Error info `json:"error"`
	}{info{Message: e.message, Type: errorType(e.status), Code: e.status}}
	if e.param != "" {
		body.Error.Param = &e.param
	}
	writeJSON(w, e.status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// readJSON decodes the request body into v. It reads the body to its end, so
// the server notices when the client goes away.
func readJSON(w http.ResponseWriter, r *http.Request, v any) *apiError {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return badRequest("could not read the request body: %v", err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequest("invalid JSON body: %v", err)
	}
	return nil
}

// parsePrompt reads the prompt of a completions request: a string, a list of
// one string, or a list of token ids.
func parsePrompt(raw json.RawMessage) (prompt, *apiError) {
	var s string
	var ss []string
	var ids []int
	switch {
	case json.Unmarshal(raw, &s) == nil:
	case json.Unmarshal(raw, &ss) == nil && len(ss) == 1:
		s = ss[0]
	case json.Unmarshal(raw, &ids) == nil && len(ids) > 0:
		return prompt{ids: ids}, nil
	default:
		return prompt{}, badRequest("prompt must be a string, a list of one string, or a list of token ids; the simulator serves one prompt a request")
	}
	if simtokens.Count(s) == 0 {
		return prompt{}, badRequest("the prompt is empty")
	}
	return prompt{text: s}, nil
}

// parseMessages flattens chat messages to text: string content as is, and
// the text parts of a list content joined by newlines; its image parts
// are read as vision's rule says. It returns the prompt and the encoder's
// cost of its images, in profile seconds.
func parseMessages(msgs []chatMessage, vision *Profile) (prompt, float64, *apiError) {
	if len(msgs) == 0 {
		return prompt{}, 0, badRequest("messages must hold at least one message")
	}
	p := prompt{chat: true, msgs: make([]message, len(msgs))}
	images, visionTokens := 0, 0
	for i, m := range msgs {
		p.msgs[i].Role = m.Role
		if len(m.Content) == 0 || string(m.Content) == "null" {
			continue
		}
		if err := json.Unmarshal(m.Content, &p.msgs[i].Content); err == nil {
			continue
		}
		var parts []json.RawMessage
		if err := json.Unmarshal(m.Content, &parts); err != nil {
			return prompt{}, 0, badRequest("messages[%d].content must be a string or a list of parts", i)
		}
		var texts []string
		for j, raw := range parts {
			var part struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if err := json.Unmarshal(raw, &part); err != nil {
				return prompt{}, 0, badRequest("messages[%d].content[%d] must be an object with a type", i, j)
			}
			if part.Type == "text" || part.Type == "input_text" {
				texts = append(texts, part.Text)
				continue
			}
			img, ok, err := vision.imagePart(part.Type, raw)
			if !ok {
				continue
			}
			if err != nil {
				return prompt{}, 0, badRequest("messages[%d].content[%d]: %v", i, j, err)
			}
			if images++; images > maxImages {
				return prompt{}, 0, badRequest("more than %d images in one request", maxImages)
			}
			visionTokens += img.tokens
			p.msgs[i].images = append(p.msgs[i].images, img)
		}
		p.msgs[i].Content = strings.Join(texts, "\n")
	}
	return p, float64(visionTokens) * vision.VisionEncodePerToken, nil
}

// generation is one accepted generation request.
type generation struct {
	id             string
	model          string
	created        int64
	chat           bool // the prompt is messages: chat, responses or messages
	api            api
	promptLen      int
	maxTokens      int
	stream         bool
	usage          bool   // send a final usage chunk
	continuous     bool   // send usage on every chunk
	details        bool   // send prompt_tokens_details.cached_tokens in usage
	reasoning      int    // the output tokens that are reasoning
	reasoningField string // the chat delta's field for them
	tool           string // the tool the answer calls, or ""
	metrics        bool   // send the request's timings (include_metrics)
	received       time.Time
	firstFlush     time.Time // when its first chunk of tokens was flushed
	faults         faults
	fault          string // the first fault's name, for the record
	req            *request
	rec            *record
}

// parseGeneration reads and checks a generation request as vLLM does.
func (h *Handler) parseGeneration(w http.ResponseWriter, r *http.Request) (*generation, *apiError) {
	a := apiOf(r.URL.Path)
	chat := a != apiCompletions
	var body genRequest
	if err := readJSON(w, r, &body); err != nil {
		return nil, err
	}
	if err := body.normalize(a); err != nil {
		return nil, err
	}
	g := &generation{chat: chat, api: a, stream: body.Stream, created: time.Now().Unix(), faults: noFaults(), metrics: body.IncludeMetrics}
	model, spec, _ := strings.Cut(body.Model, FaultModelSuffix)
	for _, s := range []string{spec, r.Header.Get(FaultHeader)} {
		name, err := g.faults.parse(s)
		if err != nil {
			return nil, badRequest("%v", err)
		}
		if g.fault == "" {
			g.fault = name
		}
	}
	if !h.serves(model) {
		return nil, &apiError{status: http.StatusNotFound, message: fmt.Sprintf("The model `%s` does not exist.", model), param: "model"}
	}
	g.model = h.p.Model
	if model != "" {
		g.model = model
	}
	g.details = h.p.PromptTokensDetails
	if chat {
		g.reasoning, g.reasoningField = h.p.ReasoningTokens, h.p.ReasoningField
		tool, err := toolToCall(body.Tools, body.ToolChoice)
		if err != nil {
			return nil, err
		}
		g.tool = tool
	}
	if a >= apiResponses && !body.Stream {
		return nil, badRequest("the simulator serves %s streaming only: set \"stream\": true", r.URL.Path)
	}
	if body.N != nil && *body.N != 1 {
		return nil, badRequest("n must be 1: the simulator generates one choice a request")
	}
	if body.StreamOptions != nil {
		if !body.Stream {
			return nil, badRequest("Stream options can only be defined when `stream=True`.")
		}
		g.usage = body.StreamOptions.IncludeUsage == nil || *body.StreamOptions.IncludeUsage
		g.continuous = g.usage && body.StreamOptions.ContinuousUsageStats
	}
	var p prompt
	var perr *apiError
	var encode float64
	if chat {
		p, encode, perr = parseMessages(body.Messages, &h.p)
	} else {
		p, perr = parsePrompt(body.Prompt)
	}
	if perr != nil {
		return nil, perr
	}
	hb := blockHasher{size: h.p.BlockSize}
	p.each(hb.add)
	g.promptLen = hb.n
	maxLen := h.p.MaxModelLen
	if g.promptLen >= maxLen {
		return nil, badRequest("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.", maxLen, g.promptLen)
	}
	maxTokens := body.MaxTokens
	if body.MaxCompletionTokens != nil {
		maxTokens = body.MaxCompletionTokens
	}
	g.maxTokens = maxLen - g.promptLen
	if maxTokens != nil {
		if *maxTokens < 1 {
			return nil, badRequest("max_tokens must be at least 1, got %d.", *maxTokens)
		}
		if g.promptLen+*maxTokens > maxLen {
			return nil, badRequest("'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d).",
				*maxTokens, maxLen, g.promptLen, *maxTokens, maxLen, g.promptLen)
		}
		g.maxTokens = *maxTokens
	}
	if body.MinTokens < 0 || body.MinTokens > g.maxTokens {
		return nil, badRequest("min_tokens must be between 0 and max_tokens (%d), got %d.", g.maxTokens, body.MinTokens)
	}
	prefix := "cmpl-"
	switch a {
	case apiChat:
		prefix = "chatcmpl-"
	case apiResponses:
		prefix = "resp_"
	case apiMessages:
		prefix = "msg_"
	}
	g.id = fmt.Sprintf("%s%s%016x", prefix, h.idBase, h.seq.Add(1))
	g.req = newRequest(g.promptLen, hb.hashes, g.maxTokens)
	g.req.encode, g.req.visionEnd = encode, p.visionEnd()
	return g, nil
}

// serveGenerate serves /v1/completions and /v1/chat/completions.
func (h *Handler) serveGenerate(w http.ResponseWriter, r *http.Request) {
	received := time.Now()
	g, err := h.parseGeneration(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	g.rec = h.truth.start(g.id, received, g.promptLen)
	g.received = received
	w.Header().Set("X-Request-Id", g.id)
	outcome := h.generate(w, r, g)
	h.truth.finish(g.rec, time.Now(), outcome, int(g.req.cached.Load()))
	h.truth.scheduled(g.rec, g.req)
}

// delayHeaders holds the answer's headers back for d (the headerDelay
// fault). It returns "" once d has passed, else how the wait ended:
// "aborted" (the client left) or "closed" (the server is closing).
func (h *Handler) delayHeaders(ctx context.Context, d time.Duration) string {
	if d <= 0 {
		return ""
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return ""
	case <-ctx.Done():
		return "aborted"
	case <-h.done:
		return "closed"
	}
}

// generate answers g and returns how it ended, for the record.
func (h *Handler) generate(w http.ResponseWriter, r *http.Request, g *generation) string {
	f := &g.faults
	ctx := r.Context()
	if end := h.delayHeaders(ctx, f.headerDelay); end != "" {
		return end
	}
	switch {
	case f.stall:
		return h.stall(ctx, "stall")
	case f.status != 0:
		if f.retryAfter > 0 || f.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", fmt.Sprint(f.retryAfter))
		}
		writeError(w, &apiError{status: f.status, message: fmt.Sprintf("simulated failure (fault %s)", g.fault)})
		return "fault:" + g.fault
	case !g.stream && f.resetAfter >= 0:
		resetConn(w)
		return "fault:reset-after"
	}
	g.req.arrived = time.Now()
	h.truth.queued(g.rec, g.req.arrived)
	h.eng.submit(g.req)
	if g.stream {
		return h.stream(w, r, g)
	}
	return h.complete(w, r, g)
}

// stall sends nothing until the client goes away or the handler closes.
func (h *Handler) stall(ctx context.Context, name string) string {
	select {
	case <-ctx.Done():
	case <-h.done:
	}
	return "fault:" + name
}

// wait blocks until g's request has news; it returns false, with the
// outcome, if the client went away or the handler closed.
func (h *Handler) wait(r *http.Request, g *generation) (string, bool) {
	select {
	case <-g.req.wake:
		if g.req.state.Load() == stateClosed {
			return "closed", false
		}
		return "", true
	case <-r.Context().Done():
		h.eng.abort(g.req)
		return "aborted", false
	case <-h.done:
		return "closed", false
	}
}

// complete answers a non-streaming request once it has finished.
func (h *Handler) complete(w http.ResponseWriter, r *http.Request, g *generation) string {
	for g.req.state.Load() != stateFinished {
		if outcome, ok := h.wait(r, g); !ok {
			return outcome
		}
	}
	n := int(g.req.out.Load())
	text := string(appendText(nil, 0, n))
	usage := usageJSON{PromptTokens: g.promptLen, CompletionTokens: n, TotalTokens: g.promptLen + n}
	if g.details {
		usage.PromptTokensDetails = &promptDetails{CachedTokens: g.cachedTokens()}
	}
	if g.chat {
		choice := chatChoice{Message: chatReply{Role: "assistant", Content: &text, ToolCalls: []any{}}, FinishReason: "length"}
		if g.tool != "" && n > g.reasoning {
			args, _ := json.Marshal(map[string]string{"input": string(appendText(nil, g.reasoning, n))})
			choice.Message.Content, choice.FinishReason = nil, "tool_calls"
			choice.Message.ToolCalls = []any{map[string]any{"id": "call_" + g.id, "type": "function", "function": map[string]string{"name": g.tool, "arguments": string(args)}}}
		}
		writeJSON(w, http.StatusOK, wholeAnswer[chatChoice]{
			ID: g.id, Object: "chat.completion", Created: g.created, Model: g.model,
			Choices: []chatChoice{choice}, Usage: usage, Metrics: g.timings(),
		})
	} else {
		writeJSON(w, http.StatusOK, wholeAnswer[textChoice]{
			ID: g.id, Object: "text_completion", Created: g.created, Model: g.model,
			Choices: []textChoice{{Text: text, FinishReason: "length"}},
			Usage:   usage, Metrics: g.timings(),
		})
	}
	h.truth.chunk(g.rec, time.Now(), n)
	h.chunks.Add(1)
	h.written.Add(int64(n))
	return "length"
}

type usageJSON struct {
	PromptTokens        int            `json:"prompt_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	PromptTokensDetails *promptDetails `json:"prompt_tokens_details"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// cachedTokens is how many of the prompt's tokens the prefix cache held at
// the request's last admission.
func (g *generation) cachedTokens() int {
	if g.req == nil {
		return 0
	}
	return min(int(g.req.cached.Load()), g.promptLen)
}

// wholeAnswer is a whole (not streamed) answer of the chat API (its
// choices chatChoice) or of the completions API (textChoice).
type wholeAnswer[C chatChoice | textChoice] struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []C          `json:"choices"`
	Usage   usageJSON    `json:"usage"`
	Metrics *timingsJSON `json:"metrics,omitempty"`
}

type chatChoice struct {
	Index        int       `json:"index"`
	Message      chatReply `json:"message"`
	Logprobs     *int      `json:"logprobs"`
	FinishReason string    `json:"finish_reason"`
	StopReason   *int      `json:"stop_reason"`
}

type chatReply struct {
	Role      string  `json:"role"`
	Content   *string `json:"content"`
	ToolCalls []any   `json:"tool_calls"`
}

type textChoice struct {
	Index        int    `json:"index"`
	Text         string `json:"text"`
	Logprobs     *int   `json:"logprobs"`
	FinishReason string `json:"finish_reason"`
	StopReason   *int   `json:"stop_reason"`
}

// resetConn resets the client's connection: it takes the connection over and
// closes it with SO_LINGER 0, so the peer gets a TCP RST. Where the
// connection cannot be taken over (HTTP/2), it aborts the handler instead.
func resetConn(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	rc.Flush()
	conn, _, err := rc.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// serveModels serves /v1/models.
func (h *Handler) serveModels(w http.ResponseWriter, r *http.Request) {
	type permission struct {
		ID                 string  `json:"id"`
		Object             string  `json:"object"`
		Created            int64   `json:"created"`
		AllowCreateEngine  bool    `json:"allow_create_engine"`
		AllowSampling      bool    `json:"allow_sampling"`
		AllowLogprobs      bool    `json:"allow_logprobs"`
		AllowSearchIndices bool    `json:"allow_search_indices"`
		AllowView          bool    `json:"allow_view"`
		AllowFineTuning    bool    `json:"allow_fine_tuning"`
		Organization       string  `json:"organization"`
		Group              *string `json:"group"`
		IsBlocking         bool    `json:"is_blocking"`
	}
	type card struct {
		ID          string       `json:"id"`
		Object      string       `json:"object"`
		Created     int64        `json:"created"`
		OwnedBy     string       `json:"owned_by"`
		Root        string       `json:"root"`
		Parent      *string      `json:"parent"`
		MaxModelLen int          `json:"max_model_len"`
		Permission  []permission `json:"permission"`
	}
	type list struct {
		Object string `json:"object"`
		Data   []card `json:"data"`
	}
	created := h.started.Unix()
	perm := []permission{{
		ID: "modelperm-" + h.idBase, Object: "model_permission", Created: created,
		AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*",
	}}
	cards := []card{{ID: h.p.Model, Object: "model", Created: created, OwnedBy: "vllm", Root: h.p.Model, MaxModelLen: h.p.MaxModelLen, Permission: perm}}
	for _, a := range h.p.Adapters {
		parent := h.p.Model
		cards = append(cards, card{ID: a, Object: "model", Created: created, OwnedBy: "vllm", Root: "/adapters/" + a, Parent: &parent, MaxModelLen: h.p.MaxModelLen, Permission: perm})
	}
	writeJSON(w, http.StatusOK, list{Object: "list", Data: cards})
}

// serves reports whether a request naming model is served: no model, the
// profile's, or one of its adapters.
func (h *Handler) serves(model string) bool {
	return model == "" || model == h.p.Model || slices.Contains(h.p.Adapters, model)
}

// serveTokenize serves /tokenize: {"prompt": ...} or {"messages": ...}, as
// vLLM does.
func (h *Handler) serveTokenize(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Prompt              json.RawMessage `json:"prompt"`
		Messages            []chatMessage   `json:"messages"`
		AddGenerationPrompt *bool           `json:"add_generation_prompt"`
		ReturnTokenStrs     bool            `json:"return_token_strs"`
	}
	if err := readJSON(w, r, &body); err != nil {
		writeError(w, err)
		return
	}
	var p prompt
	var err *apiError
	if body.Messages != nil {
		p, _, err = parseMessages(body.Messages, &h.p)
	} else {
		p, err = parsePrompt(body.Prompt)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	tokens := []uint32{}
	p.each(func(id uint32) { tokens = append(tokens, id) })
	if p.chat && body.AddGenerationPrompt != nil && !*body.AddGenerationPrompt {
		tokens = tokens[:len(tokens)-simtokens.ReplyTokens]
	}
	writeJSON(w, http.StatusOK, struct {
		Count       int      `json:"count"`
		MaxModelLen int      `json:"max_model_len"`
		Tokens      []uint32 `json:"tokens"`
		TokenStrs   []string `json:"token_strs"`
	}{len(tokens), h.p.MaxModelLen, tokens, nil})
}

// serveTruth serves /debug/truth: every request's record as JSON, or one
// with ?id=, and with ?from= and ?to= (RFC 3339) the tokens written between.
func (h *Handler) serveTruth(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var out struct {
		Requests  []RequestTruth `json:"requests"`
		Forgotten int64          `json:"forgotten"`
		Tokens    *int           `json:"tokens,omitempty"`
	}
	if id := q.Get("id"); id != "" {
		t, ok := h.truth.Request(id)
		if !ok {
			writeError(w, &apiError{status: http.StatusNotFound, message: fmt.Sprintf("no record of request %q", id), param: "id"})
			return
		}
		out.Requests = []RequestTruth{t}
	} else {
		out.Requests = h.truth.Requests()
	}
	out.Forgotten = h.truth.Forgotten()
	if q.Has("from") || q.Has("to") {
		from, err1 := time.Parse(time.RFC3339Nano, q.Get("from"))
		to, err2 := time.Parse(time.RFC3339Nano, q.Get("to"))
		if err := errors.Join(err1, err2); err != nil {
			writeError(w, badRequest("from and to must be RFC 3339 times: %v", err))
			return
		}
		n := h.truth.Tokens(from, to)
		out.Tokens = &n
	}
	writeJSON(w, http.StatusOK, out)
}
