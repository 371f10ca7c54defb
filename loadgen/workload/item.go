package workload

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/llmload/llmload/loadgen"
)

// An Item is one request of a workload, before it is a [loadgen.Request]:
// its text, its lengths and, in a trace, when it arrives.
type Item struct {
	// At is when the item arrives, from the start of the workload: a
	// trace's recorded time. It is zero in workloads without a schedule.
	At time.Duration
	// Messages is the conversation to send: a system prompt, user turns
	// and the assistant's earlier replies. A completions request sends
	// their contents joined by blank lines.
	Messages []loadgen.Message
	// InputTokens is the prompt's size as the server counts it, template
	// included, under the workload's [Sizing]; 0 when the text is a
	// dataset's own and its size unknown.
	InputTokens int
	// OutputTokens is the output's length: max_tokens, and with ignore_eos
	// the exact length. 0 leaves it to the server.
	OutputTokens int
	// Line is where the item came from in its file, or 0.
	Line int
	// Images go with the prompt, after its text, before the Builder's
	// (see [loadgen.Request].Images): a dataset record's.
	Images []string
}

// A Reader yields the items of a workload in order. Read returns io.EOF
// after the last item; a Reader without end never does. A Reader is not
// safe for concurrent use: [Feed] serializes its calls.
type Reader interface {
	Read() (Item, error)
}

// Builder makes the [loadgen.Request] of each item for one server: the
// fields every request shares.
type Builder struct {
	API   loadgen.API
	Model string
	// IgnoreEOS asks the server to generate each item's OutputTokens in
	// full (vLLM, SGLang): the workload's output lengths, whatever the
	// model would say.
	IgnoreEOS bool
	// Usage selects the stream_options sent; the zero value asks for usage
	// on every chunk.
	Usage loadgen.Usage
	// Temperature is sent when not nil.
	Temperature *float64
	// ServerTimings asks the server for its own timings of every
	// Completions and Chat request (see [loadgen.Request].ServerTimings).
	ServerTimings bool
	// Extra and Header are shared by every request (see [loadgen.Request]).
	Extra  map[string]any
	Header http.Header
	// Batch is how many items an Embeddings request embeds, or how many
	// documents a Rerank request ranks against its query (the text of
	// one more item), when a [Feed] makes them; 0 means 1.
	Batch int
	// Images go with every prompt, after its text (see
	// [loadgen.Request].Images).
	Images []string
	// Models, if set, are the models the requests a [Feed] makes name in
	// turn, in place of Model: its n-th request names Models[n mod
	// len(Models)]. A weighted choice is a list that holds each model as
	// often as its weight.
	Models []string
}

// Request returns a new request for it. An Embeddings request embeds its
// text; a Rerank request ranks it, as its one document, against itself.
func (b *Builder) Request(it Item) *loadgen.Request {
	if b.API == loadgen.Embeddings || b.API == loadgen.Rerank {
		return b.pooled([]Item{it})
	}
	req := &loadgen.Request{
		API: b.API, Model: b.Model, MaxTokens: it.OutputTokens, IgnoreEOS: b.IgnoreEOS && it.OutputTokens > 0,
		Temperature: b.Temperature, Usage: b.Usage, ServerTimings: b.ServerTimings,
		Extra: b.Extra, Header: b.Header, Images: b.Images,
	}
	if len(it.Images) > 0 {
		req.Images = slices.Concat(it.Images, b.Images)
	}
	switch {
	case b.API == loadgen.Completions:
		req.Prompt = joinContents(it.Messages)
	case len(it.Messages) == 1 && it.Messages[0].Role == "user":
		req.Prompt = it.Messages[0].Content
	default:
		req.Messages = it.Messages
	}
	return req
}

// batch is how many items make one request: Batch for an Embeddings
// request, one more for a Rerank request's query, 1 for the others.
func (b *Builder) batch() int {
	switch b.API {
	case loadgen.Embeddings:
		return max(b.Batch, 1)
	case loadgen.Rerank:
		return max(b.Batch, 1) + 1
	}
	return 1
}

// pooled is the Embeddings or Rerank request of items: each one's text an
// input, but for Rerank the first one's, the query.
func (b *Builder) pooled(items []Item) *loadgen.Request {
	req := &loadgen.Request{API: b.API, Model: b.Model, Extra: b.Extra, Header: b.Header}
	texts := make([]string, len(items))
	for i, it := range items {
		texts[i] = joinContents(it.Messages)
	}
	switch {
	case b.API == loadgen.Rerank && len(texts) > 1:
		req.Prompt, req.Documents = texts[0], texts[1:]
	case b.API == loadgen.Rerank:
		req.Prompt, req.Documents = texts[0], texts
	case b.Batch <= 1 && len(texts) == 1:
		req.Prompt = texts[0]
	default:
		req.Documents = texts
	}
	return req
}

// joinContents is the prompt of a completions request: the messages'
// contents, separated by blank lines.
func joinContents(msgs []loadgen.Message) string {
	if len(msgs) == 1 {
		return msgs[0].Content
	}
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n\n")
}

// cycle returns a Reader that reads the Reader open returns to its end,
// then opens it again, without end. A Reader that ends before its first
// item is an error: errEmpty.
func cycleOf(open func() (Reader, error)) Reader { return &cycle{open: open} }

// errEmpty reports a workload with no item to send.
var errEmpty = errors.New("workload: no item to send")

type cycle struct {
	open func() (Reader, error)
	r    Reader
	read bool // an item was read since the last open
}

func (c *cycle) Read() (Item, error) {
	for range 2 {
		if c.r == nil {
			r, err := c.open()
			if err != nil {
				return Item{}, err
			}
			c.r, c.read = r, false
		}
		it, err := c.r.Read()
		if err == nil {
			c.read = true
			return it, nil
		}
		closeReader(c.r)
		c.r = nil
		if !errors.Is(err, io.EOF) {
			return Item{}, err
		}
		if !c.read {
			return Item{}, errEmpty
		}
	}
	return Item{}, errEmpty
}

// closeReader closes r if it holds a file.
func closeReader(r Reader) {
	if c, ok := r.(io.Closer); ok {
		_ = c.Close()
	}
}

// Close closes the Reader being read, if it holds a file.
func (c *cycle) Close() error {
	if c.r != nil {
		closeReader(c.r)
		c.r = nil
	}
	return nil
}
