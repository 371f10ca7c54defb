package matrixcmd

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/cmd/cli"
	"github.com/llmload/llmload/internal/tokencount"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/metrics"
)

// SpecFlags are the flags that set each field of a [matrix.Spec] but the
// server's (-url, -model and -api are the client flags): the grid, the
// window, the warm-up, the objectives and the server's limits. Their
// defaults are the library's, from [matrix.Spec.WithDefaults].
type SpecFlags struct {
	spec                         matrix.Spec
	contexts, concurrency        string
	prefill                      string
	duration, series             time.Duration
	warmMin, warmFlow, warmTO    time.Duration
	warmPerK                     time.Duration
	sloTTFT, sloTPOT, sloLatency time.Duration
	kvTokens, maxSeqs, maxLen    int
	durationSet, maxTokensSet    bool
	thresholdSet, gridSet        bool
	images                       cli.ImageFlags
}

// Register defines the flags on fs.
func (f *SpecFlags) Register(fs *flag.FlagSet) {
	d := matrix.Spec{}.WithDefaults()
	fs.StringVar(&f.contexts, "contexts", tokenList(d.Contexts), "context lengths, the grid's rows (K = 1024)")
	fs.StringVar(&f.concurrency, "concurrency", tokenList(d.Concurrency), "requests at once, the grid's columns")
	fs.StringVar(&f.prefill, "prefill", tokenList(d.Prefill), "prefill contexts ('' skips the prefill table)")
	fs.IntVar(&f.spec.PrefillRepeat, "prefill-repeat", d.PrefillRepeat, "cold requests that measure each prefill row (their median, and a range to compare)")
	fs.DurationVar(&f.duration, "duration", d.Duration, "measurement window of each cell")
	fs.IntVar(&f.spec.MaxTokens, "max-tokens", d.MaxTokens, "max output tokens per request")
	fs.DurationVar(&f.series, "series", d.Series, "interval of each cell's time series, in the results and the reports (0 keeps none)")
	fs.DurationVar(&f.warmMin, "warmup-min", d.WarmupRule.Min, "least warm-up of a cell")
	fs.DurationVar(&f.warmFlow, "warmup-flow", d.WarmupRule.Flow, "how long tokens must flow from every stream before the window")
	fs.DurationVar(&f.warmTO, "warmup-timeout", d.WarmupRule.Timeout, "warm-up timeout, plus -warmup-per-k per 1,024 tokens of context")
	fs.DurationVar(&f.warmPerK, "warmup-per-k", d.WarmupRule.PerContextK, "warm-up timeout added per 1,024 tokens of context")
	fs.DurationVar(&f.sloTTFT, "slo-ttft", 0, "SLO on time to first token, for goodput (0: none)")
	fs.DurationVar(&f.sloTPOT, "slo-tpot", 0, "SLO on time per output token, for goodput (0: none)")
	fs.DurationVar(&f.sloLatency, "slo-latency", 0, "SLO on end-to-end latency, for goodput (0: none)")
	fs.Float64Var(&f.spec.ErrorThreshold, "error-threshold", d.ErrorThreshold, "share of failed requests above which a cell is Failed")
	fs.IntVar(&f.kvTokens, "kv-tokens", 0, "KV-cache capacity in tokens, if the server does not publish it (e.g. from its start-up log)")
	fs.IntVar(&f.maxSeqs, "max-num-seqs", 0, "the server's max running requests, if known")
	fs.IntVar(&f.maxLen, "max-model-len", 0, "the server's max_model_len, if it does not publish it")
	f.images.Register(fs)
	fs.BoolVar(&f.spec.SkipQueued, "skip-queued", false, "do not measure the cells predicted to queue (more requests than -max-num-seqs or the server's own limit)")
}

// tokenList writes a list of token counts as a flag takes it.
func tokenList(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = tokencount.Format(n)
	}
	return strings.Join(s, ",")
}

// Spec returns the spec the flags on fs (parsed) set, with every field
// but the server's; its errors name the flag at fault. It checks what
// only the flags can tell (a window of 0 given on purpose), and leaves the
// rest to the runner's check ([matrix.Runner.Validate]), whose errors
// [Fields] words.
func (f *SpecFlags) Spec(fs *flag.FlagSet) (matrix.Spec, error) {
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "duration":
			f.durationSet = true
		case "max-tokens":
			f.maxTokensSet = true
		case "error-threshold":
			f.thresholdSet = true
		case "contexts", "concurrency", "prefill":
			f.gridSet = true
		}
	})
	s := f.spec
	var err error
	if s.Contexts, err = tokencount.ParseList(f.contexts); err != nil {
		return s, fmt.Errorf("-contexts: %w", err)
	}
	if s.Concurrency, err = tokencount.ParseList(f.concurrency); err != nil {
		return s, fmt.Errorf("-concurrency: %w", err)
	}
	if s.Prefill, err = tokencount.ParseList(f.prefill); err != nil {
		return s, fmt.Errorf("-prefill: %w", err)
	}
	s.Duration = f.duration
	s.Images, s.ImageFormat = f.images.Sizes()
	if len(s.Images) == 0 {
		s.ImageFormat = ""
	} else if s.ImageFormat == "" {
		s.ImageFormat = f.images.Format() // an unknown one, for Validate to refuse
	}
	s.Series = f.series
	if f.series <= 0 {
		s.Series = -1 // none
	}
	s.WarmupRule = &matrix.WarmupRule{Min: f.warmMin, Flow: f.warmFlow,
		Timeout: f.warmTO, PerContextK: f.warmPerK}
	if f.sloTTFT > 0 || f.sloTPOT > 0 || f.sloLatency > 0 {
		s.SLO = &metrics.SLO{TTFT: f.sloTTFT, TPOT: f.sloTPOT, Latency: f.sloLatency}
	}
	if f.kvTokens > 0 || f.maxSeqs > 0 || f.maxLen > 0 {
		s.Limits = &capacity.Limits{KVTokens: f.kvTokens, MaxRunning: f.maxSeqs, MaxModelLen: f.maxLen, Source: "flags"}
	}
	switch {
	case f.duration <= 0 && f.durationSet:
		return s, fmt.Errorf("-duration %v: the window must be longer than 0", f.duration)
	case s.MaxTokens <= 0 && f.maxTokensSet:
		return s, fmt.Errorf("-max-tokens %d: a request must generate at least one token", s.MaxTokens)
	case f.kvTokens < 0 || f.maxSeqs < 0 || f.maxLen < 0:
		return s, errors.New("-kv-tokens, -max-num-seqs and -max-model-len cannot be negative")
	case s.ErrorThreshold == 0 && f.thresholdSet:
		return s, errors.New("-error-threshold 0 would fail a cell for one broken request; give a share above 0 and at most 1")
	}
	return s, nil
}

// GridSet reports whether -contexts, -concurrency or -prefill was given:
// whether the grid is the library's default one.
func (f *SpecFlags) GridSet() bool { return f.gridSet }

// Fields is the table of the flags that set each field of a
// [matrix.Spec], for [cli.Fields.Error]: a spec the runner refuses is
// said in the flags the user typed.
func Fields() cli.Fields {
	return cli.Fields{
		"Spec.URL": "-url", "Spec.Model": "-model", "Spec.API": "-api",
		"Spec.Contexts": "-contexts", "Spec.Concurrency": "-concurrency", "Spec.Prefill": "-prefill", "Spec.PrefillRepeat": "-prefill-repeat",
		"Spec.Duration": "-duration", "Spec.Series": "-series", "Spec.MaxTokens": "-max-tokens", "Spec.ErrorThreshold": "-error-threshold",
		"Spec.WarmupRule.Min": "-warmup-min", "Spec.WarmupRule.Flow": "-warmup-flow", "Spec.WarmupRule.Timeout": "-warmup-timeout",
		"Spec.WarmupRule.PerContextK": "-warmup-per-k", "Spec.SLO": "-slo-ttft, -slo-tpot or -slo-latency",
		"Spec.Images": "-image", "Spec.ImageFormat": "-image-format",
	}
}
