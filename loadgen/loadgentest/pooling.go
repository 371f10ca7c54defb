package loadgentest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmload/llmload/internal/simtokens"
)

// defaultEmbeddingSize is the length of an embedding when the profile
// sets none.
const defaultEmbeddingSize = 64

// pooler runs the simulator's pooling model, which serves /v1/embeddings
// and /v1/rerank: one step at a time, each taking every waiting request
// that fits the token budget (at least one) and costing the profile's
// PoolStep plus PoolPerToken a token of the batch. It is apart from the
// generation engine, as a pooling model is a model of its own.
type pooler struct {
	p    Profile
	mu   sync.Mutex
	wait []*pooled // guarded by mu
	wake chan struct{}
	done chan struct{}
}

// pooled is one request waiting for, or in, a pooling step.
type pooled struct {
	tokens  int
	arrived time.Time
	gone    <-chan struct{} // closed when the client has gone away
	done    chan struct{}
}

func newPooler(p Profile, done chan struct{}) *pooler {
	pl := &pooler{p: p, wake: make(chan struct{}, 1), done: done}
	go pl.run()
	return pl
}

// stepCost is a pooling step's cost over tokens input tokens, in the
// profile's own time.
func (p Profile) stepCost(tokens int) float64 {
	return p.PoolStep + p.PoolPerToken*float64(tokens)
}

// submit queues a request of tokens input tokens, whose client goes away
// when gone is closed, and returns what is closed when its step has ended.
func (pl *pooler) submit(tokens int, gone <-chan struct{}) <-chan struct{} {
	r := &pooled{tokens: tokens, arrived: time.Now(), gone: gone, done: make(chan struct{})}
	pl.mu.Lock()
	pl.wait = append(pl.wait, r)
	pl.mu.Unlock()
	select {
	case pl.wake <- struct{}{}:
	default:
	}
	return r.done
}

// run steps until the handler closes. Steps keep to the model's own
// timeline, not to when the goroutine happens to wake: a step starts when
// the last one ended, or at the arrival of the first request it takes if
// the model was idle, and takes the requests that had arrived by then. A
// timer that fires late delays the answers by its lateness, and no more:
// the lateness does not add up from step to step.
func (pl *pooler) run() {
	var end time.Time
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		pl.mu.Lock()
		batch, tokens, start := pl.take(end)
		pl.mu.Unlock()
		if len(batch) == 0 {
			select {
			case <-pl.wake:
				continue
			case <-pl.done:
				return
			}
		}
		end = start.Add(time.Duration(pl.p.stepCost(tokens) / pl.p.Speed * float64(time.Second)))
		timer.Reset(time.Until(end))
		select {
		case <-timer.C:
		case <-pl.done:
			return
		}
		for _, r := range batch {
			close(r.done)
		}
	}
}

// take removes the next step's batch from the queue, given that the last
// step ended at end, and returns it with its tokens and its start: the
// requests, in order of arrival, that had arrived by the start and whose
// tokens fit MaxNumBatchedTokens, at least one. Requests whose client has
// gone are dropped, as vLLM aborts them.
func (pl *pooler) take(end time.Time) ([]*pooled, int, time.Time) {
	pl.wait = slices.DeleteFunc(pl.wait, func(r *pooled) bool {
		select {
		case <-r.gone:
			return true
		default:
			return false
		}
	})
	if len(pl.wait) == 0 {
		return nil, 0, time.Time{}
	}
	start := end
	if first := pl.wait[0].arrived; first.After(start) {
		start = first
	}
	n, tokens := 0, 0
	for n < len(pl.wait) && !pl.wait[n].arrived.After(start) && (n == 0 || tokens+pl.wait[n].tokens <= pl.p.MaxNumBatchedTokens) {
		tokens += pl.wait[n].tokens
		n++
	}
	batch := slices.Clone(pl.wait[:n])
	pl.wait = slices.Delete(pl.wait, 0, n)
	return batch, tokens, start
}

// poolRequest is the body of /v1/embeddings and /v1/rerank.
type poolRequest struct {
	Model     string          `json:"model"`
	Input     json.RawMessage `json:"input"`
	Query     *string         `json:"query"`
	Documents []string        `json:"documents"`
	TopN      *int            `json:"top_n"`
}

// poolInputs returns the texts of an embeddings or rerank request and the
// tokens they make: each rerank document is scored with the query.
func poolInputs(body *poolRequest, rerank bool) ([]string, int, *apiError) {
	var inputs []string
	tokens := 0
	if rerank {
		if body.Query == nil || len(body.Documents) == 0 {
			return nil, 0, badRequest("a rerank request needs a query and at least one document")
		}
		q := simtokens.Count(*body.Query)
		for _, d := range body.Documents {
			tokens += q + simtokens.Count(d)
		}
		return body.Documents, tokens, nil
	}
	var s string
	switch {
	case json.Unmarshal(body.Input, &s) == nil:
		inputs = []string{s}
	case json.Unmarshal(body.Input, &inputs) == nil && len(inputs) > 0:
	default:
		return nil, 0, badRequest("input must be a string or a list of strings")
	}
	for _, in := range inputs {
		tokens += simtokens.Count(in)
	}
	return inputs, tokens, nil
}

// servePool serves /v1/embeddings (OpenAI's shape) and /v1/rerank (vLLM's,
// Cohere's and Jina's), after the pooling step that holds the request.
func (h *Handler) servePool(w http.ResponseWriter, r *http.Request) {
	rerank := strings.HasSuffix(r.URL.Path, "/rerank")
	var body poolRequest
	if err := readJSON(w, r, &body); err != nil {
		writeError(w, err)
		return
	}
	model, spec, _ := strings.Cut(body.Model, FaultModelSuffix)
	f := noFaults()
	name := ""
	for _, s := range []string{spec, r.Header.Get(FaultHeader)} {
		n, err := f.parse(s)
		if err != nil {
			writeError(w, badRequest("%v", err))
			return
		}
		if name == "" {
			name = n
		}
	}
	if !h.serves(model) {
		writeError(w, &apiError{status: http.StatusNotFound, message: fmt.Sprintf("The model `%s` does not exist.", model), param: "model"})
		return
	}
	inputs, tokens, err := poolInputs(&body, rerank)
	if err != nil {
		writeError(w, err)
		return
	}
	for _, in := range inputs {
		if n := simtokens.Count(in); n > h.p.MaxModelLen {
			writeError(w, badRequest("This model's maximum context length is %d tokens. However, you requested %d tokens in the input.", h.p.MaxModelLen, n))
			return
		}
	}
	id := fmt.Sprintf("%s%s%016x", map[bool]string{false: "embd-", true: "rerank-"}[rerank], h.idBase, h.seq.Add(1))
	w.Header().Set("X-Request-Id", id)
	ctx := r.Context()
	if h.delayHeaders(ctx, f.headerDelay) != "" {
		return
	}
	switch {
	case f.stall:
		h.stall(ctx, "stall")
		return
	case f.status != 0:
		if f.retryAfter > 0 || f.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", fmt.Sprint(f.retryAfter))
		}
		writeError(w, &apiError{status: f.status, message: fmt.Sprintf("simulated failure (fault %s)", name)})
		return
	case f.resetAfter >= 0:
		resetConn(w)
		return
	}
	select {
	case <-h.pool.submit(tokens, ctx.Done()):
	case <-ctx.Done():
		return
	case <-h.done:
		return
	}
	created := time.Now().Unix()
	if rerank {
		writeJSON(w, http.StatusOK, rerankAnswer(id, h.p.Model, *body.Query, body.Documents, body.TopN, tokens))
		return
	}
	type embedding struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	data := make([]embedding, len(inputs))
	for i, in := range inputs {
		data[i] = embedding{Object: "embedding", Index: i, Embedding: embed(in, h.p.EmbeddingSize)}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "object": "list", "created": created, "model": h.p.Model, "data": data,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens},
	})
}

// rerankAnswer is vLLM's rerank answer: the documents by relevance, the
// top n of them when top_n is set.
func rerankAnswer(id, model, query string, docs []string, topN *int, tokens int) map[string]any {
	type result struct {
		Index    int               `json:"index"`
		Document map[string]string `json:"document"`
		Score    float64           `json:"relevance_score"`
	}
	q := embed(query, 16)
	results := make([]result, len(docs))
	for i, d := range docs {
		e := embed(d, 16)
		dot := 0.0
		for k := range e {
			dot += e[k] * q[k]
		}
		results[i] = result{Index: i, Document: map[string]string{"text": d}, Score: 1 / (1 + math.Exp(-4*dot))}
	}
	slices.SortStableFunc(results, func(a, b result) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	if topN != nil && *topN > 0 && *topN < len(results) {
		results = results[:*topN]
	}
	return map[string]any{"id": id, "model": model, "results": results, "usage": map[string]int{"total_tokens": tokens}}
}

// embed is a deterministic unit vector of size dimensions for text.
func embed(text string, size int) []float64 {
	if size <= 0 {
		size = defaultEmbeddingSize
	}
	h := fnv.New64a()
	h.Write([]byte(text))
	x := h.Sum64() | 1
	v := make([]float64, size)
	sum := 0.0
	for i := range v {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		v[i] = float64(int64(x>>11)-1<<52) / (1 << 52)
		sum += v[i] * v[i]
	}
	norm := math.Sqrt(sum)
	for i := range v {
		v[i] = math.Round(v[i]/norm*1e6) / 1e6
	}
	return v
}
