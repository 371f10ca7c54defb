package loadgen

import (
	"github.com/llmload/llmload/loadgen/internal/chunk"
	"github.com/llmload/llmload/metrics"
)

// tokenCount counts a response's output tokens as its chunks arrive, and
// refuses counts that cannot be true (see [UsageError]). Every count it
// keeps is at most its limit, so none of its arithmetic can overflow.
//
// It counts one token per non-empty delta until the server reports usage.
// Usage on the first chunks, before any token, is taken for a running
// count (vLLM's continuous_usage_stats): each chunk then carries the growth
// of completion_tokens. A running count must grow with the text: a chunk
// that brings text while the count stays put (Ollama's completions API
// sends an all-zero usage on every chunk) shows it is not one, and counting
// goes back to one token per delta, with the last usage, if larger,
// reconciling at the end. Usage that first comes after tokens is such a
// reconciling total too.
type tokenCount struct {
	limit     int64 // the most tokens the response may carry
	maxTokens int   // the request's MaxTokens, for errors

	mode       countMode
	attributed int64 // tokens given to chunks so far, pending included
	pending    int64 // tokens that came before any visible token
	observed   bool  // tokens were handed out
	usage      int64 // the last completion_tokens reported
	usageSeen  bool
	multi      bool // a choice other than the first was seen: usage may be per choice
}

type countMode uint8

const (
	countDeltas     countMode = iota // no usage seen yet: one token per delta
	countContinuous                  // a running count from the start: completion_tokens deltas
	countFinal                       // one per delta; the last usage reconciles
)

// tokenLimit is the most tokens a response to a request with maxTokens may
// carry: maxTokensFactor times maxTokens, at least 1,000, at most
// maxReportedTokens.
func tokenLimit(maxTokens int) int64 {
	if maxTokens <= 0 || maxTokens >= maxReportedTokens/maxTokensFactor {
		return maxReportedTokens
	}
	return max(int64(maxTokens)*maxTokensFactor, 1000)
}

// add counts ch and returns the tokens to hand out now: the chunk's own
// and, with the first visible token, those that came before it. On an
// error nothing of ch is counted.
func (tc *tokenCount) add(ch *chunk.Chunk) (int, error) {
	if err := tc.check(ch); err != nil {
		return 0, err
	}
	multi := tc.multi || ch.Multi
	mode := tc.mode
	k := int64(ch.Tokens)
	if ch.HasUsage {
		if mode == countDeltas {
			mode = countFinal
			if tc.attributed == 0 {
				mode = countContinuous
			}
		}
		if mode == countContinuous {
			if growth := ch.Completion - tc.attributed; growth <= 0 && ch.Tokens > 0 {
				mode = countFinal // text came and the count stayed put: not a running count
			} else {
				k = max(growth, 0)
			}
		}
	}
	if tc.attributed+k > tc.limit { // both at most limit: no overflow
		field := "tokens counted one per delta"
		if mode == countContinuous {
			field = "usage.completion_tokens"
		}
		return 0, &UsageError{Field: field, Got: tc.attributed + k, Before: -1, Limit: tc.limit, MaxTokens: tc.maxTokens}
	}
	tc.mode, tc.multi = mode, multi
	if ch.HasUsage {
		tc.usage, tc.usageSeen = ch.Completion, true
	}
	tc.attributed += k
	if !tc.observed && ch.Tokens == 0 {
		tc.pending += k // tokens before the first visible one arrive with it
		return 0, nil
	}
	k += tc.pending
	tc.pending = 0
	if k > 0 {
		tc.observed = true
	}
	return int(k), nil
}

// check refuses the counts of ch that cannot be true.
func (tc *tokenCount) check(ch *chunk.Chunk) error {
	bad := func(field string, got, before, limit int64) error {
		return &UsageError{Field: field, Got: got, Before: before, Limit: limit, MaxTokens: tc.maxTokens}
	}
	if ch.HasUsage {
		switch {
		case ch.Completion < 0:
			return bad("usage.completion_tokens", ch.Completion, -1, tc.limit)
		case ch.Completion > tc.limit:
			return bad("usage.completion_tokens", ch.Completion, -1, tc.limit)
		case tc.usageSeen && ch.Completion < tc.usage && !tc.multi && !ch.Multi:
			return bad("usage.completion_tokens", ch.Completion, tc.usage, 0)
		}
	}
	if ch.Prompt < 0 || ch.Prompt > maxReportedTokens {
		return bad("usage.prompt_tokens", ch.Prompt, -1, maxReportedTokens)
	}
	if ch.ReasoningUsage < 0 || ch.ReasoningUsage > maxReportedTokens {
		return bad("usage.completion_tokens_details.reasoning_tokens", ch.ReasoningUsage, -1, maxReportedTokens)
	}
	if ch.Cached < 0 || ch.Cached > maxReportedTokens {
		return bad("usage.cached_tokens", ch.Cached, -1, maxReportedTokens)
	}
	return nil
}

// empty reports that the response carried no token: no delta, and no
// usage that counted any.
func (tc *tokenCount) empty() bool { return tc.attributed == 0 && tc.usage == 0 }

// flush returns the tokens still waiting for a visible one, if none came.
func (tc *tokenCount) flush() int {
	p := tc.pending
	tc.pending = 0
	if p > 0 {
		tc.observed = true
	}
	return int(p)
}

// source says how the tokens were counted, and what the last usage
// reported beyond them. observed reports that tokens were handed out.
func (tc *tokenCount) source(observed bool) (metrics.TokenSource, int) {
	switch {
	case tc.mode == countContinuous:
		return metrics.SourceUsageDeltas, 0
	case tc.mode == countFinal && tc.usage > tc.attributed && observed:
		return metrics.SourceFinalUsage, int(tc.usage - tc.attributed)
	case observed:
		return metrics.SourceChunks, 0
	}
	return "", 0
}
