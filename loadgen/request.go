package loadgen

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// API selects the endpoint a request goes to.
type API uint8

const (
	// Chat is POST /chat/completions with messages. It is the zero value.
	Chat API = iota
	// Completions is POST /completions with a prompt.
	Completions
)

// String returns "chat" or "completions".
func (a API) String() string {
	switch a {
	case Chat:
		return "chat"
	case Completions:
		return "completions"
	}
	return fmt.Sprintf("API(%d)", a)
}

// MarshalText implements [encoding.TextMarshaler].
func (a API) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText accepts "chat" or "completions".
func (a *API) UnmarshalText(b []byte) error {
	switch string(b) {
	case "chat", "":
		*a = Chat
	case "completions":
		*a = Completions
	default:
		return fmt.Errorf("loadgen: unknown API %q (want chat or completions)", b)
	}
	return nil
}

func (a API) path() string {
	if a == Completions {
		return "/completions"
	}
	return "/chat/completions"
}

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
type Request struct {
	API   API
	Model string
	// Prompt is the prompt of a Completions request; for Chat, when Messages
	// is empty, it is sent as one user message.
	Prompt   string
	Messages []Message

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
	// Extra fields are added to the JSON body as they are, and override
	// the fields above.
	Extra map[string]any
	// Header holds extra HTTP headers for this request.
	Header http.Header

	once sync.Once
	body []byte
	err  error
}

// Body returns the JSON body the request sends.
func (r *Request) Body() ([]byte, error) {
	r.once.Do(func() { r.body, r.err = r.encode() })
	return r.body, r.err
}

func (r *Request) encode() ([]byte, error) {
	m := map[string]any{"stream": true}
	if r.Model != "" {
		m["model"] = r.Model
	}
	switch r.API {
	case Completions:
		m["prompt"] = r.Prompt
	default:
		msgs := r.Messages
		if len(msgs) == 0 {
			msgs = []Message{{Role: "user", Content: r.Prompt}}
		}
		m["messages"] = msgs
	}
	if r.MaxTokens > 0 {
		m["max_tokens"] = r.MaxTokens
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
	switch r.Usage {
	case UsageContinuous:
		m["stream_options"] = map[string]bool{"include_usage": true, "continuous_usage_stats": true}
	case UsageFinal:
		m["stream_options"] = map[string]bool{"include_usage": true}
	}
	for k, v := range r.Extra {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("loadgen: encode request: %w", err)
	}
	return b, nil
}
