package capacity

import (
	"fmt"
	"strings"

	"github.com/llmload/llmload/internal/setting"
)

// DefaultTemplateOverhead is the number of tokens a chat template adds around
// a prompt, counted against max_model_len when Limits.TemplateOverhead is
// zero. ChatML-style templates (Qwen, many others) wrap one user turn in
// about a dozen tokens ("<|im_start|>user\n" … "<|im_end|>\n<|im_start|>assistant\n",
// plus an empty think block where reasoning is off); 16 covers them.
const DefaultTemplateOverhead = 16

// Limits are a server's capacity limits. Each is zero when unknown; an
// unknown limit never makes a cell over capacity.
type Limits struct {
	// KVTokens is the KV cache's capacity in tokens (vLLM's
	// kv_cache_size_tokens, SGLang's max_total_num_tokens).
	KVTokens int `json:"kv_tokens"`
	// KVTokensLow and KVTokensHigh are the range an estimated KVTokens is
	// expected to fall in (Estimate.Expected); zero when KVTokens was read
	// from a server or given. A cell that needs more than KVTokensLow but
	// no more than KVTokensHigh is at risk (Verdict.AtRisk), whether it
	// fits the estimate itself (Verdict.Fits) or not.
	KVTokensLow  int `json:"kv_tokens_low,omitempty"`
	KVTokensHigh int `json:"kv_tokens_high,omitempty"`
	// MaxRunning is the most requests the server runs at once (vLLM's
	// max_num_seqs, SGLang's max_running_requests, llama.cpp's slots).
	MaxRunning int `json:"max_running"`
	// MaxModelLen is the longest request, prompt and output, in tokens.
	MaxModelLen int `json:"max_model_len"`
	// TemplateOverhead is the number of tokens the chat template adds to a
	// prompt; zero means DefaultTemplateOverhead, a negative value none.
	TemplateOverhead int `json:"template_overhead,omitempty"`
	// Source says where the limits come from ("vllm /metrics", "estimate
	// (vllm)", ...), for reports.
	Source string `json:"source,omitempty"`
}

// Merge returns l with each unknown limit taken from other, e.g. a live
// KV figure completed by the max_num_seqs flag the server was started with.
func (l Limits) Merge(other Limits) Limits {
	var from []string
	if l.KVTokens <= 0 && other.KVTokens > 0 {
		l.KVTokens, l.KVTokensLow, l.KVTokensHigh = other.KVTokens, other.KVTokensLow, other.KVTokensHigh
		from = append(from, "kv_tokens")
	}
	if l.MaxRunning <= 0 && other.MaxRunning > 0 {
		l.MaxRunning = other.MaxRunning
		from = append(from, "max_running")
	}
	if l.MaxModelLen <= 0 && other.MaxModelLen > 0 {
		l.MaxModelLen = other.MaxModelLen
		from = append(from, "max_model_len")
	}
	if l.TemplateOverhead == 0 {
		l.TemplateOverhead = other.TemplateOverhead
	}
	if len(from) > 0 && other.Source != "" {
		if l.Source != "" {
			l.Source += "; "
		}
		l.Source += strings.Join(from, ", ") + " from " + other.Source
	}
	return l
}

// templateTokens is the number of tokens the chat template adds to a
// prompt, as Check counts them: TemplateOverhead, DefaultTemplateOverhead
// when that is zero, none when it is negative.
func (l Limits) templateTokens() int {
	return setting.Resolve(l.TemplateOverhead, DefaultTemplateOverhead)
}

// Reason says why a cell fits or not, by the name the JSON writes:
// "within_limits", "limits_unknown", "max_model_len", "max_running" or
// "kv_tokens". The empty Reason means not set.
type Reason string

// Reasons.
const (
	// WithinLimits: every limit is known and the cell respects them all.
	WithinLimits Reason = "within_limits"
	// LimitsUnknown: the cell respects every known limit, but at least one
	// limit is unknown, so it is not predicted over capacity but not
	// guaranteed to fit either.
	LimitsUnknown Reason = "limits_unknown"
	// OverMaxModelLen: one request (context + max output + template
	// overhead) is longer than max_model_len; it can never run.
	OverMaxModelLen Reason = "max_model_len"
	// OverMaxRunning: more concurrent requests than the server runs at
	// once. The cell still fits: the server runs MaxRunning of them and the
	// rest wait in its queue ([Verdict.Queued]).
	OverMaxRunning Reason = "max_running"
	// OverKVTokens: concurrency × (context + max output) is more than the
	// KV cache holds.
	OverKVTokens Reason = "kv_tokens"
)

// Verdict is the capacity verdict for one cell. Need and Have are the
// numbers behind the deciding limit (tokens, or requests for OverMaxRunning);
// both are zero when no limit decided.
type Verdict struct {
	Fits   bool `json:"fits"`             // the point estimate's verdict; false: predicted over capacity, not worth sending unless AtRisk
	Queued bool `json:"queued,omitempty"` // fits, but more requests than run at once: some wait in the server's queue
	// AtRisk is the verdict of an estimated KV capacity's range: the cell
	// needs more than Limits.KVTokensLow and no more than
	// Limits.KVTokensHigh, so it may fit or not whatever Fits, the point
	// estimate's verdict, says.
	AtRisk bool   `json:"at_risk,omitempty"`
	Reason Reason `json:"reason"`         // the deciding limit, or why the cell fits
	Detail string `json:"detail"`         // the arithmetic, for reports
	Need   int    `json:"need,omitempty"` // what the cell needs of the deciding limit
	Have   int    `json:"have,omitempty"` // what the server has of it
}

// Check returns the verdict for concurrency requests of context prompt
// tokens and up to maxOutput output tokens each. Limits are checked in the
// order max_model_len (a request that can never run), KV tokens (for the
// requests that run at once: at most MaxRunning of them), max running; the
// first one exceeded decides. More requests than the server runs at once
// are not over capacity: the rest wait in its queue, and the verdict says
// so (Fits and Queued, Reason OverMaxRunning).
// Fits is the point estimate's verdict. Where the KV tokens are an
// estimate with a range (KVTokensLow, KVTokensHigh), AtRisk is the range's:
// the cell needs more than its pessimistic end and no more than its
// optimistic end, so the server may hold it or not — a cell that fits at
// risk, or one over the estimate that the range says may still fit (worth
// measuring). Negative counts count as zero, and sums or products
// beyond the int range as the largest int, so a huge cell is over capacity,
// never wrapped around to fit.
func (l Limits) Check(context, concurrency, maxOutput int) Verdict {
	context, concurrency, maxOutput = max(context, 0), max(concurrency, 0), max(maxOutput, 0)
	perRequest := addSat(context, maxOutput)
	if l.MaxModelLen > 0 {
		need := addSat(perRequest, l.templateTokens())
		if need > l.MaxModelLen {
			return Verdict{Reason: OverMaxModelLen, Need: need, Have: l.MaxModelLen,
				Detail: fmt.Sprintf("one request needs %d + %d + %d template = %d tokens > max_model_len %d",
					context, maxOutput, l.templateTokens(), need, l.MaxModelLen)}
		}
	}
	running := concurrency
	if l.MaxRunning > 0 && concurrency > l.MaxRunning {
		running = l.MaxRunning
	}
	need := mulSat(running, perRequest)
	ranged := l.KVTokensLow > 0 && l.KVTokensHigh > 0 && l.KVTokensLow <= l.KVTokens && l.KVTokens <= l.KVTokensHigh
	atRisk := ranged && need > l.KVTokensLow && need <= l.KVTokensHigh
	if l.KVTokens > 0 && need > l.KVTokens {
		detail := fmt.Sprintf("%d × (%d + %d) = %d tokens > %d KV tokens", running, context, maxOutput, need, l.KVTokens)
		switch {
		case atRisk:
			detail += fmt.Sprintf(", the estimate; at risk: ≤ %d, the optimistic end of its range (%d–%d)", l.KVTokensHigh, l.KVTokensLow, l.KVTokensHigh)
		case ranged:
			detail += fmt.Sprintf(", and > %d, the optimistic end of the estimate's range (%d–%d)", l.KVTokensHigh, l.KVTokensLow, l.KVTokensHigh)
		}
		return Verdict{AtRisk: atRisk, Reason: OverKVTokens, Need: need, Have: l.KVTokens, Detail: detail}
	}
	risk := ""
	if atRisk {
		risk = fmt.Sprintf("; at risk: %d needs more than the pessimistic end of the estimate (%d–%d KV tokens)", need, l.KVTokensLow, l.KVTokensHigh)
	}
	if running < concurrency {
		return Verdict{Fits: true, Queued: true, AtRisk: atRisk, Reason: OverMaxRunning, Need: concurrency, Have: l.MaxRunning,
			Detail: fmt.Sprintf("%d requests > %d the server runs at once: %d wait in its queue%s",
				concurrency, l.MaxRunning, concurrency-l.MaxRunning, risk)}
	}
	var unknown []string
	if l.KVTokens <= 0 {
		unknown = append(unknown, "kv_tokens")
	}
	if l.MaxRunning <= 0 {
		unknown = append(unknown, "max_running")
	}
	if l.MaxModelLen <= 0 {
		unknown = append(unknown, "max_model_len")
	}
	if len(unknown) > 0 {
		return Verdict{Fits: true, AtRisk: atRisk, Reason: LimitsUnknown,
			Detail: "not over any known limit; unknown: " + strings.Join(unknown, ", ") + risk}
	}
	return Verdict{Fits: true, AtRisk: atRisk, Reason: WithinLimits, Need: need, Have: l.KVTokens,
		Detail: fmt.Sprintf("%d × (%d + %d) = %d ≤ %d KV tokens%s", concurrency, context, maxOutput, need, l.KVTokens, risk)}
}

// A LimitName names one of the limits of [Limits], as its JSON field does.
type LimitName string

// The limits a [Gap] names.
const (
	LimitKVTokens    LimitName = "kv_tokens"
	LimitMaxRunning  LimitName = "max_running"
	LimitMaxModelLen LimitName = "max_model_len"
)

// A Gap is a limit that neither the server published nor the caller
// gave, and where to find it.
type Gap struct {
	Limit LimitName
	// Where says where the engine sets or prints it, as a parenthetical
	// ("vLLM's --max-num-seqs, 256 by default"); "" when unknown.
	Where string
	// FollowsFrom names the limit it follows from, if any: on an engine
	// that holds a context per slot, the KV tokens follow from
	// max_running (and max_model_len).
	FollowsFrom LimitName
}

// Gaps lists the limits l lacks (max_running, kv_tokens, max_model_len, in
// that order), with where engine e keeps each: what to ask the user for
// before a plan can be exact.
func (l Limits) Gaps(e Engine) []Gap {
	var out []Gap
	if l.MaxRunning <= 0 {
		g := Gap{Limit: LimitMaxRunning}
		switch e {
		case EngineVLLM:
			g.Where = "vLLM's --max-num-seqs, 256 by default"
		case EngineOllama:
			g.Where = "Ollama's OLLAMA_NUM_PARALLEL"
		}
		out = append(out, g)
	}
	if l.KVTokens <= 0 {
		g := Gap{Limit: LimitKVTokens, Where: "from the server's start-up log"}
		if e == EngineOllama || e == EngineLlamaCpp {
			g.Where, g.FollowsFrom = string(e)+" holds a context per slot", LimitMaxRunning
		}
		out = append(out, g)
	}
	if l.MaxModelLen <= 0 {
		g := Gap{Limit: LimitMaxModelLen}
		if e == EngineOllama {
			g.Where = "Ollama's OLLAMA_CONTEXT_LENGTH or the model's num_ctx, published once the model is loaded"
		}
		out = append(out, g)
	}
	return out
}

// Concurrency is how many requests of one size a server holds at once: the
// answer to "how many requests of this context and output can run
// together?".
type Concurrency struct {
	// Requests is the most requests of this size that run at once without
	// one waiting in the server's queue: 0 when one request is longer than
	// max_model_len, -1 when no known limit bounds it.
	Requests int `json:"requests"`
	// Low and High are the range Requests is expected to fall in when the KV
	// tokens are an estimate with a range ([Limits.KVTokensLow],
	// [Limits.KVTokensHigh]); both equal Requests otherwise.
	Low  int `json:"low"`
	High int `json:"high"`
	// Limit is the limit that bounds Requests: kv_tokens, max_running or
	// max_model_len; "" when none is known.
	Limit  LimitName `json:"limit,omitempty"`
	Detail string    `json:"detail"` // the arithmetic, for reports
}

// Concurrency returns how many requests of context prompt tokens and up
// to maxOutput output tokens each l holds at once, with nothing waiting in
// the server's queue. Each running request holds context + maxOutput KV
// tokens, so it is ⌊KVTokens ÷ (context + maxOutput)⌋, at most MaxRunning,
// and 0 for a request longer than max_model_len (with the template
// overhead). Where the KV tokens are an estimate with a range, Low and High
// take its ends: [Limits.Check] finds Low requests fitting, up to High
// fitting at risk, and High + 1 over capacity.
func (l Limits) Concurrency(context, maxOutput int) Concurrency {
	context, maxOutput = max(context, 0), max(maxOutput, 0)
	perRequest := max(addSat(context, maxOutput), 1)
	if l.MaxModelLen > 0 {
		if need := addSat(perRequest, l.templateTokens()); need > l.MaxModelLen {
			return Concurrency{Limit: LimitMaxModelLen,
				Detail: fmt.Sprintf("none: one request needs %d + %d + %d template = %d tokens > max_model_len %d",
					context, maxOutput, l.templateTokens(), need, l.MaxModelLen)}
		}
	}
	fit := func(kv int) int { return kv / perRequest }
	c := Concurrency{Requests: -1, Low: -1, High: -1}
	if l.KVTokens > 0 {
		c.Requests, c.Low, c.High = fit(l.KVTokens), fit(l.KVTokens), fit(l.KVTokens)
		if l.KVTokensLow > 0 && l.KVTokensLow <= l.KVTokens && l.KVTokens <= l.KVTokensHigh {
			c.Low, c.High = fit(l.KVTokensLow), fit(l.KVTokensHigh)
		}
		c.Limit = LimitKVTokens
		c.Detail = fmt.Sprintf("⌊%d KV tokens ÷ (%d + %d)⌋ = %d", l.KVTokens, context, maxOutput, c.Requests)
		if c.Low != c.High {
			c.Detail += fmt.Sprintf(", %d–%d over the estimate's %d–%d", c.Low, c.High, l.KVTokensLow, l.KVTokensHigh)
		}
	}
	if l.MaxRunning > 0 && (c.Requests < 0 || c.Requests >= l.MaxRunning) {
		detail := fmt.Sprintf("%d: the server runs at most %d at once", l.MaxRunning, l.MaxRunning)
		if c.Requests >= 0 {
			detail = c.Detail + "; " + detail
		}
		c.Requests, c.Limit, c.Detail = l.MaxRunning, LimitMaxRunning, detail
	}
	if l.MaxRunning > 0 {
		c.Low, c.High = min(c.Low, l.MaxRunning), min(c.High, l.MaxRunning)
		if c.Low < 0 {
			c.Low = l.MaxRunning
		}
		if c.High < 0 {
			c.High = l.MaxRunning
		}
	}
	if c.Limit == "" {
		c.Detail = "unknown: neither the KV tokens nor the most requests the server runs at once are known"
	}
	return c
}
