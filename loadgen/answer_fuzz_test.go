package loadgen

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/llmload/llmload/metrics"
)

// FuzzAnswer feeds any body to the decoder of Embeddings and Rerank
// answers: it never panics, accepts only JSON of the API's shape with as
// many embeddings as inputs (or at most as many results), never returns a
// negative token count, and refuses only with an *Error of kind
// KindMalformed or KindStreamError. The seeds are vLLM's, Ollama's and
// OpenAI's answers, Cohere's rerank without usage, and broken ones; the
// corpus in testdata/fuzz/FuzzAnswer adds more.
func FuzzAnswer(f *testing.F) {
	for _, s := range []struct {
		rerank bool
		inputs uint8
		body   string
	}{
		{false, 1, `{"object":"list","data":[{"object":"embedding","embedding":[0.1,-0.2,0.3],"index":0}],"model":"text-embedding-3-small","usage":{"prompt_tokens":5,"total_tokens":5}}`},
		{false, 2, `{"id":"embd-1","object":"list","created":1,"model":"bge","data":[{"index":0,"object":"embedding","embedding":[1e-3,2]},{"index":1,"object":"embedding","embedding":"AACAPw=="}],"usage":{"prompt_tokens":9,"total_tokens":9,"completion_tokens":0,"prompt_tokens_details":null}}`},
		{false, 1, `{"object":"list","data":[{"object":"embedding","embedding":[0.01,0.02],"index":0}],"model":"qwen3-embedding","usage":{"prompt_tokens":3,"total_tokens":3}}`},
		{false, 2, `{"data":[{"index":0,"embedding":[1]}]}`},
		{false, 1, `{"error":{"message":"input too long","type":"BadRequestError","code":400}}`},
		{true, 3, `{"id":"rerank-1","model":"bge-reranker","usage":{"total_tokens":56},"results":[{"index":2,"document":{"text":"c"},"relevance_score":0.99},{"index":0,"document":{"text":"a"},"relevance_score":0.01}]}`},
		{true, 2, `{"id":"x","results":[{"index":1,"relevance_score":0.5},{"index":0,"relevance_score":0.1}],"meta":{"billed_units":{"search_units":1}}}`},
		{true, 2, `{"results":[{"index":5,"relevance_score":0.5}]}`},
		{false, 1, `{"data":[{"index":0,"embedding":[1]}],"usage":{"prompt_tokens":-1}}`},
		{false, 1, `not json`},
	} {
		f.Add(s.rerank, s.inputs, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, rerank bool, inputs uint8, body []byte) {
		api := Embeddings
		if rerank {
			api = Rerank
		}
		tokens, err := decodeAnswer(api, body, int(inputs))
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || (e.Kind != metrics.KindMalformed && e.Kind != metrics.KindStreamError) {
				t.Fatalf("refused with %T %v, not an *Error of kind malformed or stream error", err, err)
			}
			if len(err.Error()) > 2000 {
				t.Fatalf("an error of %d bytes: it quotes the start of the body only", len(err.Error()))
			}
			return
		}
		if tokens < 0 {
			t.Fatalf("%d tokens", tokens)
		}
		if !json.Valid(body) {
			t.Fatalf("accepted a body that is not JSON: %q", body)
		}
		var a answer
		if json.Unmarshal(body, &a) != nil {
			t.Fatalf("accepted a body not of the shape: %q", body)
		}
		if api == Embeddings && len(a.Data) != int(inputs) {
			t.Fatalf("accepted %d embeddings for %d inputs", len(a.Data), inputs)
		}
		if api == Rerank && len(a.Results) > int(inputs) {
			t.Fatalf("accepted %d results for %d documents", len(a.Results), inputs)
		}
	})
}
