package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/llmload/llmload/metrics"
)

// errAnswerTooLarge is the cause of an Embeddings or Rerank answer larger
// than MaxBodySize.
var errAnswerTooLarge = errors.New("loadgen: the answer is larger than MaxBodySize; raise Client.MaxBodySize if the server's answers are that large")

// ErrBodyInFlight is the cause of an Embeddings or Rerank answer that the
// Client could not buffer without holding more than its MaxBodyInFlight
// over all the answers it is reading.
var ErrBodyInFlight = errors.New("loadgen: the answers being read would exceed Client.MaxBodyInFlight")

// readAnswer reads the one JSON body that answers an Embeddings or Rerank
// request, at most MaxBodySize bytes of it, and records its input tokens
// and when its last byte came: the kernel's receive time where the
// transport has it. Its buffer is held against the Client's
// MaxBodyInFlight as it grows, and given back when the answer is read.
func (rs *requestState) readAnswer(ctx context.Context, c *Client, resp *http.Response, req *Request) error {
	limit := c.MaxBodySize
	if limit <= 0 {
		limit = defaultMaxBodySize
	}
	if resp.ContentLength > int64(limit) {
		return &Error{Kind: metrics.KindOversize, Err: fmt.Errorf("%w (its Content-Length is %d, the limit %d)", errAnswerTooLarge, resp.ContentLength, limit)}
	}
	held := &bodyHold{c: c, budget: c.bodyBudget(limit)}
	defer held.release()
	arrivals, _ := resp.Body.(arrivalBody)
	size := 4 << 10
	if resp.ContentLength > 0 {
		size = int(resp.ContentLength) + 1 // room to see the EOF in one more read
	}
	buf, err := held.grow(nil, size)
	if err != nil {
		return err
	}
	for {
		if len(buf) == cap(buf) {
			if buf, err = held.grow(buf, min(2*cap(buf), limit+1)); err != nil {
				return err
			}
		}
		n, err := resp.Body.Read(buf[len(buf):min(cap(buf), limit+1)])
		if n > 0 {
			buf = buf[:len(buf)+n]
			rs.answerEnd = arrivalTime(arrivals, time.Now())
			if len(buf) > limit {
				return &Error{Kind: metrics.KindOversize, Err: fmt.Errorf("%w (%d bytes)", errAnswerTooLarge, limit)}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			if context.Cause(ctx) != nil {
				return rs.classify(ctx, err, false)
			}
			return &Error{Kind: metrics.KindTruncated, Err: fmt.Errorf("loadgen: the %v answer was cut after %d bytes: %w", req.API, len(buf), err)}
		}
	}
	tokens, err := decodeAnswer(req.API, buf, inputsOf(req))
	if err != nil {
		return err
	}
	rs.tl.PromptTokens = tokens
	rs.tl.Done = true
	return nil
}

// bodyBudget is the most the Client buffers of answers at once, for
// answers of at most limit bytes.
func (c *Client) bodyBudget(limit int) int64 {
	if c.MaxBodyInFlight > 0 {
		return int64(c.MaxBodyInFlight)
	}
	return int64(max(defaultMaxBodyInFlight, limit+1))
}

// bodyHold is what one answer holds of its Client's MaxBodyInFlight.
type bodyHold struct {
	c      *Client
	budget int64
	held   int64
}

// grow returns buf in a buffer of size bytes, taking what it adds from the
// budget, or an error of kind KindOversize when the budget has not that
// much left.
func (h *bodyHold) grow(buf []byte, size int) ([]byte, error) {
	more := int64(size - cap(buf))
	if now := h.c.bodies.Add(more); now > h.budget {
		h.c.bodies.Add(-more)
		return nil, &Error{Kind: metrics.KindOversize, Err: fmt.Errorf("%w (%d bytes: %d more would be %d in all)", ErrBodyInFlight, h.budget, more, now)}
	}
	h.held += more
	return append(make([]byte, 0, size), buf...), nil
}

// release gives back what the answer held.
func (h *bodyHold) release() { h.c.bodies.Add(-h.held) }

// inputsOf is how many inputs an Embeddings or Rerank request sends: its
// Documents, or for an Embeddings request without them, its Prompt.
func inputsOf(req *Request) int {
	if req.API == Embeddings && len(req.Documents) == 0 {
		return 1
	}
	return len(req.Documents)
}

// answer is an Embeddings or Rerank answer, as far as the client reads it.
// The embeddings themselves are checked for shape, not decoded.
type answer struct {
	Data []struct {
		Index     *int            `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Results []struct {
		Index *int     `json:"index"`
		Score *float64 `json:"relevance_score"`
	} `json:"results"`
	Usage *struct {
		PromptTokens *int `json:"prompt_tokens"`
		TotalTokens  *int `json:"total_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// decodeAnswer reads the answer to an api request of inputs inputs and
// returns its input tokens: the usage's prompt_tokens, or its total_tokens
// where it has no prompt_tokens (vLLM's rerank), or 0 where it has no usage.
// An answer that is not of the API's shape is a [*ChunkError] of kind
// KindMalformed; an error object, a [*StreamError] of kind
// KindStreamError.
func decodeAnswer(api API, body []byte, inputs int) (int, error) {
	malformed := func(format string, args ...any) error {
		err := newChunkError(body, fmt.Errorf(format, args...))
		err.what = fmt.Sprintf("%v answer", api)
		return &Error{Kind: metrics.KindMalformed, Err: err}
	}
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return 0, malformed("its %s is not of the API's shape: %v", ute.Field, err)
		}
		return 0, malformed("not JSON: %v", err)
	}
	if len(a.Error) > 0 && !bytes.Equal(a.Error, []byte("null")) {
		return 0, &Error{Kind: metrics.KindStreamError, Err: eventError(body)}
	}
	var seen []bool
	if inputs > 0 && inputs <= 1<<20 {
		seen = make([]bool, inputs)
	}
	index := func(what string, i int, p *int) error {
		if p == nil {
			return malformed("its %s %d has no index", what, i)
		}
		if *p < 0 || *p >= len(seen) {
			return malformed("its %s %d has index %d, outside the request's %d inputs", what, i, *p, inputs)
		}
		if seen[*p] {
			return malformed("two of its %ss have index %d", what, *p)
		}
		seen[*p] = true
		return nil
	}
	switch api {
	case Embeddings:
		if len(a.Data) != inputs {
			return 0, malformed("it holds %d embeddings for the request's %d inputs", len(a.Data), inputs)
		}
		for i, d := range a.Data {
			if err := index("embedding", i, d.Index); err != nil {
				return 0, err
			}
			if !isEmbedding(d.Embedding) {
				return 0, malformed("its embedding %d is %.40q: want a list of numbers or a base64 string", i, d.Embedding)
			}
		}
	case Rerank:
		if len(a.Results) > inputs {
			return 0, malformed("it ranks %d documents, and the request sent %d", len(a.Results), inputs)
		}
		for i, r := range a.Results {
			if err := index("result", i, r.Index); err != nil {
				return 0, err
			}
			if r.Score == nil {
				return 0, malformed("its result %d has no relevance_score", i)
			}
		}
	}
	if a.Usage == nil {
		return 0, nil
	}
	tokens := a.Usage.PromptTokens
	if tokens == nil {
		tokens = a.Usage.TotalTokens
	}
	if tokens == nil {
		return 0, nil
	}
	if *tokens < 0 {
		return 0, malformed("its usage counts %d input tokens", *tokens)
	}
	return *tokens, nil
}

// isEmbedding reports whether e, valid JSON, is an embedding: a list that
// is not empty (of numbers, unchecked), or a string that is not empty (in
// base64, with encoding_format "base64").
func isEmbedding(e json.RawMessage) bool {
	e = bytes.TrimSpace(e)
	if len(e) < 2 {
		return false
	}
	switch e[0] {
	case '[':
		return bytes.TrimSpace(e[1:])[0] != ']'
	case '"':
		return len(e) > 2
	}
	return false
}
