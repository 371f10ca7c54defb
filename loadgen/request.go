package loadgen

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/llmload/llmload/internal/enumtext"
)

// API selects the endpoint a request goes to.
type API uint8

const (
	// Chat is POST /chat/completions with messages. It is the zero value.
	Chat API = iota
	// Completions is POST /completions with a prompt.
	Completions
	// Responses is POST /responses (OpenAI's Responses API, served by
	// vLLM and SGLang): input and max_output_tokens; typed events, usage
	// in response.completed.
	Responses
	// Messages is POST /messages (Anthropic's Messages API, served by
	// vLLM): messages, a system prompt apart, and max_tokens, which it
	// requires; content blocks, usage in message_delta.
	Messages
	// Embeddings is POST /embeddings: input, Prompt alone as a string or
	// Documents as an array. Its answer is one JSON body, not a stream:
	// the request records its input tokens, from the usage, and its
	// latency, and no output.
	Embeddings
	// Rerank is POST /rerank (vLLM's, Cohere's and Jina's shape): Prompt
	// as the query, Documents to rank against it. Like Embeddings, its
	// answer is one JSON body.
	Rerank
)

var apiNames = [...]string{Chat: "chat", Completions: "completions", Responses: "responses", Messages: "messages", Embeddings: "embeddings", Rerank: "rerank"}

// String returns "chat", "completions", "responses", "messages",
// "embeddings" or "rerank".
func (a API) String() string { return enumtext.Name(apiNames[:], a, "API") }

// MarshalText implements [encoding.TextMarshaler].
func (a API) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText accepts "chat", "completions", "responses", "messages",
// "embeddings" or "rerank".
func (a *API) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*a = Chat
		return nil
	}
	for i, n := range apiNames {
		if string(b) == n {
			*a = API(i)
			return nil
		}
	}
	return fmt.Errorf("loadgen: unknown API %q (want chat, completions, responses, messages, embeddings or rerank)", b)
}

func (a API) path() string {
	switch a {
	case Completions:
		return "/completions"
	case Responses:
		return "/responses"
	case Messages:
		return "/messages"
	case Embeddings:
		return "/embeddings"
	case Rerank:
		return "/rerank"
	}
	return "/chat/completions"
}

// pooled reports that the API answers with one JSON body, not a stream:
// Embeddings and Rerank.
func (a API) pooled() bool { return a == Embeddings || a == Rerank }

// Usage selects which usage reports the request asks for in
// stream_options.
type Usage uint8

const (
	// UsageContinuous asks for usage on every chunk (include_usage and vLLM's
	// continuous_usage_stats), so every chunk's tokens are counted exactly.
	// It is the zero value.
	UsageContinuous Usage = iota
	// UsageFinal asks for one usage report at the end (include_usage), for
	// servers that reject continuous_usage_stats.
	UsageFinal
	// UsageNone sends no stream_options.
	UsageNone
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one streaming completion request. The client encodes it once,
// on first use, and reuses the encoding: a Request may be sent many times
// and from many goroutines, but must not be changed after its first use.
// A change is noticed: from then on the Request is refused with a
// [*ConfigError] naming the field, rather than sent as it was. (Within a
// slice or a map held in Extra, only a different length or a different
// slice or map is noticed.) To send something else, make a new Request.
type Request struct {
	API   API
	Model string
	// Prompt is the prompt of a Completions request; for Chat, when Messages
	// is empty, it is sent as one user message.
	Prompt   string
	Messages []Message
	// Documents are the texts of an Embeddings request, sent as its input
	// array (without them, Prompt is sent as one string), or the documents
	// a Rerank request ranks against Prompt, its query. Other APIs refuse
	// them.
	Documents []string
	// Images go with the prompt, after its text, in the last user message
	// (the prompt's own message when Messages is empty): each a data URL
	// ("data:image/png;base64,...") or an http(s) URL the server fetches.
	// Chat sends them as image_url content parts, Responses as
	// input_image parts, Messages as image blocks (a data URL's base64
	// source). A Completions request cannot carry them.
	Images []string

	// MaxTokens caps the output; 0 leaves it to the server.
	MaxTokens int
	// MinTokens asks the server not to stop before this many (vLLM).
	MinTokens int
	// IgnoreEOS asks the server to generate until MaxTokens (vLLM, SGLang).
	IgnoreEOS bool
	// Temperature is sent when not nil.
	Temperature *float64
	// Usage selects the stream_options sent.
	Usage Usage
	// ServerTimings asks the server for its own timings of the request:
	// its queue, its prefill and its generation, which the Client reads
	// into the Timeline's Server (see [metrics.ServerTimings]) to split the
	// time to first token into the server's part and the rest. It sends
	// "include_metrics": true, which vLLM honours when started with
	// --enable-per-request-metrics (and ignores otherwise), and llmload's
	// simulator always; servers that send their timings unasked (TGI's
	// x-queue-time header) need nothing. Only Completions and Chat
	// requests send it, whose streams carry the timings back. An
	// "include_metrics" in Extra overrides it.
	ServerTimings bool
	// Extra fields are added to the JSON body as they are, and override
	// the fields above.
	Extra map[string]any
	// Header holds extra HTTP headers for this request.
	Header http.Header

	once sync.Once
	body []byte
	err  error
	sent *Request // the fields as first encoded, to notice a change
}

// Body returns the JSON body the request sends. It returns a
// [*ConfigError] for a Request that cannot work (see [Request.Validate]) or
// that was changed after its first use.
func (r *Request) Body() ([]byte, error) {
	if r == nil {
		return nil, &ConfigError{Field: "Request", Reason: "is nil"}
	}
	r.once.Do(func() {
		if r.err = r.Validate(); r.err != nil {
			return
		}
		r.body, r.err = r.encode()
		r.sent = r.snapshot()
	})
	if r.err != nil {
		return nil, r.err
	}
	if field := r.changed(); field != "" {
		return nil, &ConfigError{Field: "Request." + field, Reason: "was changed after the request was first sent: a Request is encoded once, on first use, and would go on sending its first body; make a new Request for a new body"}
	}
	return r.body, nil
}

// snapshot copies the fields a body is made of.
func (r *Request) snapshot() *Request {
	s := &Request{
		API: r.API, Model: r.Model, Prompt: r.Prompt, Messages: slices.Clone(r.Messages), Documents: slices.Clone(r.Documents), Images: slices.Clone(r.Images),
		MaxTokens: r.MaxTokens, MinTokens: r.MinTokens, IgnoreEOS: r.IgnoreEOS, Usage: r.Usage,
		ServerTimings: r.ServerTimings, Extra: maps.Clone(r.Extra), Header: r.Header.Clone(),
	}
	if r.Temperature != nil {
		t := *r.Temperature
		s.Temperature = &t
	}
	return s
}

// changed returns the name of the first field that differs from the
// snapshot taken at the first encoding, or "". It costs a comparison per
// field, message, header value and Extra entry, and allocates nothing;
// strings that still share their bytes compare at once.
func (r *Request) changed() string {
	s := r.sent
	switch {
	case r.API != s.API:
		return "API"
	case r.Model != s.Model:
		return "Model"
	case r.Prompt != s.Prompt:
		return "Prompt"
	case !slices.Equal(r.Messages, s.Messages):
		return "Messages"
	case !slices.Equal(r.Documents, s.Documents):
		return "Documents"
	case !slices.Equal(r.Images, s.Images):
		return "Images"
	case r.MaxTokens != s.MaxTokens:
		return "MaxTokens"
	case r.MinTokens != s.MinTokens:
		return "MinTokens"
	case r.IgnoreEOS != s.IgnoreEOS:
		return "IgnoreEOS"
	case (r.Temperature == nil) != (s.Temperature == nil) || (r.Temperature != nil && *r.Temperature != *s.Temperature):
		return "Temperature"
	case r.Usage != s.Usage:
		return "Usage"
	case r.ServerTimings != s.ServerTimings:
		return "ServerTimings"
	case !sameExtra(r.Extra, s.Extra):
		return "Extra"
	case !maps.EqualFunc(r.Header, s.Header, slices.Equal[[]string]):
		return "Header"
	}
	return ""
}

// sameExtra reports whether the Extra fields a and b hold the same values:
// equal where the values are comparable, the same slice or map of the same
// length where they are not.
func sameExtra(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || !sameValue(va, vb) {
			return false
		}
	}
	return true
}

func sameValue(a, b any) bool {
	ta := reflect.TypeOf(a)
	if ta != reflect.TypeOf(b) {
		return false
	}
	if ta == nil {
		return true // both nil
	}
	switch ta.Kind() {
	case reflect.Slice, reflect.Map:
		va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
		return va.UnsafePointer() == vb.UnsafePointer() && va.Len() == vb.Len()
	}
	if !ta.Comparable() {
		return true // a struct holding a slice or a map: not compared
	}
	return equal(a, b)
}

// equal is a == b, and true where the comparison panics: a struct whose
// interface field holds a slice or a map cannot be compared.
func equal(a, b any) (eq bool) {
	defer func() {
		if recover() != nil {
			eq = true
		}
	}()
	return a == b
}

// encode is the request's body: the API's fields, then r.Extra's over
// them.
func (r *Request) encode() ([]byte, error) {
	m := map[string]any{}
	if r.Model != "" {
		m["model"] = r.Model
	}
	if r.API.pooled() {
		r.pooledFields(m)
	} else {
		r.streamedFields(m)
	}
	maps.Copy(m, r.Extra)
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("loadgen: encode request: %w", err)
	}
	return b, nil
}

// streamedFields sets the fields of a streamed request: the prompt or
// messages in the API's shape, the output settings and the usage asked
// for.
func (r *Request) streamedFields(m map[string]any) {
	m["stream"] = true
	msgs := r.Messages
	if len(msgs) == 0 {
		msgs = []Message{{Role: "user", Content: r.Prompt}}
	}
	switch r.API {
	case Completions:
		m["prompt"] = r.Prompt
	case Responses:
		switch {
		case len(r.Images) > 0:
			m["input"] = withImages(r.API, msgs, r.Images)
		case len(r.Messages) == 0:
			m["input"] = r.Prompt
		default:
			m["input"] = msgs
		}
	case Messages:
		// The system prompt goes apart; the messages keep their order.
		var system []string
		var rest []Message
		for _, msg := range msgs {
			if msg.Role == "system" {
				system = append(system, msg.Content)
			} else {
				rest = append(rest, msg)
			}
		}
		if len(system) > 0 {
			m["system"] = strings.Join(system, "\n\n")
		}
		m["messages"] = withImages(r.API, rest, r.Images)
	default:
		m["messages"] = withImages(r.API, msgs, r.Images)
	}
	if r.MaxTokens > 0 {
		if r.API == Responses {
			m["max_output_tokens"] = r.MaxTokens
		} else {
			m["max_tokens"] = r.MaxTokens
		}
	}
	if r.MinTokens > 0 {
		m["min_tokens"] = r.MinTokens
	}
	if r.IgnoreEOS {
		m["ignore_eos"] = true
	}
	if r.Temperature != nil {
		m["temperature"] = *r.Temperature
	}
	if r.ServerTimings && (r.API == Completions || r.API == Chat) {
		m["include_metrics"] = true
	}
	switch {
	case r.API == Responses || r.API == Messages:
		// Their usage comes in the last events, unasked.
	case r.Usage == UsageContinuous:
		m["stream_options"] = map[string]bool{"include_usage": true, "continuous_usage_stats": true}
	case r.Usage == UsageFinal:
		m["stream_options"] = map[string]bool{"include_usage": true}
	}
}

// pooledFields sets the fields of an Embeddings or Rerank request: not
// streamed, with no output settings.
func (r *Request) pooledFields(m map[string]any) {
	switch {
	case r.API == Rerank:
		m["query"] = r.Prompt
		m["documents"] = r.Documents
	case len(r.Documents) > 0:
		m["input"] = r.Documents
	default:
		m["input"] = r.Prompt
	}
}

// withImages returns msgs with images added to the last user message, as
// content parts of api, or msgs as they are when there are none.
func withImages(api API, msgs []Message, images []string) any {
	if len(images) == 0 {
		return msgs
	}
	last := -1
	for i, m := range msgs {
		if m.Role == "user" {
			last = i
		}
	}
	out := make([]any, len(msgs))
	for i, m := range msgs {
		out[i] = m
	}
	if last < 0 {
		return out // Validate refuses images without a user message
	}
	text := "text"
	if api == Responses {
		text = "input_text"
	}
	parts := make([]any, 0, 1+len(images))
	if msgs[last].Content != "" {
		parts = append(parts, map[string]any{"type": text, "text": msgs[last].Content})
	}
	for _, u := range images {
		parts = append(parts, imagePart(api, u))
	}
	out[last] = map[string]any{"role": "user", "content": parts}
	return out
}

// imagePart is one image as a content part of api.
func imagePart(api API, u string) any {
	switch api {
	case Responses:
		return map[string]any{"type": "input_image", "image_url": u}
	case Messages:
		if mediaType, data, ok := splitDataURL(u); ok {
			return map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": mediaType, "data": data}}
		}
		return map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": u}}
	}
	return map[string]any{"type": "image_url", "image_url": map[string]any{"url": u}}
}

// splitDataURL splits "data:MEDIATYPE;base64,DATA".
func splitDataURL(u string) (mediaType, data string, ok bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", false
	}
	head, data, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", false
	}
	mediaType, ok = strings.CutSuffix(head, ";base64")
	return mediaType, data, ok && strings.HasPrefix(mediaType, "image/")
}

// checkImage says what is wrong with an image URL, or "".
func checkImage(u string) string {
	switch {
	case strings.HasPrefix(u, "data:"):
		if _, _, ok := splitDataURL(u); !ok {
			return "is a data URL that is not data:image/TYPE;base64,DATA"
		}
	case strings.HasPrefix(u, "https://"), strings.HasPrefix(u, "http://"):
	default:
		return "is neither a data URL nor an http(s) URL"
	}
	return ""
}
