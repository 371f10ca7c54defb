package matrix

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/errlist"
	"github.com/llmload/llmload/internal/picture"
	"github.com/llmload/llmload/internal/redact"
	"github.com/llmload/llmload/internal/tokencount"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/matrix/internal/fleet"
	"github.com/llmload/llmload/metrics"
)

// tokensK is the unit of context lengths in the matrix: 16K is 16,384 tokens.
const tokensK = 1024

// maxPrefillRepeat bounds Spec.PrefillRepeat: each is a cold prefill of
// the row's whole prompt.
const maxPrefillRepeat = 100

// Defaults of a [Spec], the seed page's.
var (
	defaultContexts    = []int{0, 16 * tokensK, 32 * tokensK, 64 * tokensK, 128 * tokensK, 248 * tokensK}
	defaultConcurrency = []int{1, 2, 4, 8, 16, 32, 64, 128}
	defaultPrefill     = []int{8 * tokensK, 16 * tokensK, 32 * tokensK, 64 * tokensK, 128 * tokensK}
)

// More defaults of a [Spec].
const (
	defaultDuration = 30 * time.Second
	// defaultSeries is the interval of a cell's time series.
	defaultSeries = time.Second
	// defaultPrefillRepeat is how many cold requests measure a prefill
	// row: three give its median and a range that holds it (between the
	// least and the most of them) three times in four.
	defaultPrefillRepeat = 3
	defaultMaxTokens     = 8192
	// defaultErrorThreshold is the share of failed requests above which a
	// cell is Failed.
	defaultErrorThreshold = 0.5
	// MaxStreams is the most requests at once one process may keep in
	// flight: one process holds about 10^4 streams (a connection, a
	// goroutine and their buffers each) and keeps its timing honest; beyond
	// that, split the load over machines. A sharded run (see [Runner].Fleet) may
	// ask for MaxStreams a shard.
	MaxStreams = 16384
)

// maxContextTokens is the longest prompt a spec may ask for (see
// fleet.MaxContextTokens).
const maxContextTokens = fleet.MaxContextTokens

// WarmupRule says when a cell's window may open: after at least Min, once every
// stream has a token, the server's waiting queue is empty and tokens have
// flowed for Flow; or, failing that, at Timeout plus PerContextK for every
// 1,024 tokens of context.
type WarmupRule struct {
	Min         time.Duration
	Flow        time.Duration
	Timeout     time.Duration
	PerContextK time.Duration
}

// defaultWarmupRule is the warm-up rule of a [Spec] that sets none.
var defaultWarmupRule = WarmupRule{
	Min:         2 * time.Second,
	Flow:        3 * time.Second,
	Timeout:     60 * time.Second,
	PerContextK: time.Second,
}

// Spec is what to measure. It is a plain value that marshals to JSON, its
// durations as text ("30s"), so every result file carries the spec that
// made it. Zero fields take the seed page's defaults (see
// [Spec.WithDefaults]).
type Spec struct {
	// URL is the API's base URL, such as "http://127.0.0.1:8000/v1".
	URL string
	// Model is the served model name.
	Model string
	// API is "chat", "completions", "responses" or "messages": the
	// matrix measures streamed generation, and refuses "embeddings" and
	// "rerank".
	API loadgen.API

	// Contexts are the decode grid's rows, in prompt tokens; nil means
	// 0, 16K, 32K, 64K, 128K and 248K (K = 1,024).
	Contexts []int
	// Concurrency levels are its columns; nil means 1, 2, 4 … 128.
	Concurrency []int
	// Prefill contexts each get PrefillRepeat cold requests whose median
	// time to first token is the prefill measurement; nil means 8K, 16K,
	// 32K, 64K and 128K. An empty, non-nil list skips them.
	Prefill []int
	// PrefillRepeat is how many cold requests measure each prefill row,
	// each a prompt of its own; 0 means 3.
	PrefillRepeat int

	// Duration is each cell's measurement window; 0 means 30 s.
	Duration time.Duration
	// MaxTokens is each request's max_tokens, generated with ignore_eos;
	// 0 means 8,192.
	MaxTokens int
	// Series is the interval of each measured cell's time series (see
	// [Measurement].Series); 0 means 1 s, a negative one keeps none.
	Series time.Duration
	// WarmupRule says when each cell's window opens; nil means a Min of 2 s,
	// a Flow of 3 s, a Timeout of 60 s and a PerContextK of 1 s.
	WarmupRule *WarmupRule

	// SLO, if set, adds goodput to every cell.
	SLO *metrics.SLO
	// ErrorThreshold is the share of failed requests above which a cell is
	// Failed; 0 means 0.5.
	ErrorThreshold float64
	// Limits are capacity limits the user knows, from a start-up log or an
	// estimate. Where the server publishes a limit itself (KV tokens,
	// requests run at once, max_model_len, the chat template's overhead),
	// the server's figure is used and the one given here is ignored; a
	// limit given here is used only where the server publishes none, or
	// when it cannot be asked at all. For Ollama and llama.cpp, KV tokens
	// still unknown then are max running × max_model_len. nil gives none.
	Limits *capacity.Limits
	// Images are pictures sent with every prompt, after its text: each
	// "WIDTHxHEIGHT" in pixels (at most 64), drawn by llmload
	// from the run's id, the same in every request of the run, encoded as
	// ImageFormat: "png" ("" too) or "jpeg". The tokens the server counts
	// for them are part of each context (its text is that much shorter)
	// and are reported beside each row's and cell's prompt tokens. The
	// completions API cannot carry them.
	Images      []string
	ImageFormat string
	// SkipQueued leaves unmeasured the cells predicted to queue (more
	// requests than the server runs at once): they are Requests queued by
	// prediction. By default they are measured.
	SkipQueued bool
}

// WithDefaults returns a copy of s with every zero field set to its
// default.
func (s Spec) WithDefaults() Spec {
	if s.Contexts == nil {
		s.Contexts = defaultContexts
	}
	if s.Concurrency == nil {
		s.Concurrency = defaultConcurrency
	}
	if s.Prefill == nil {
		s.Prefill = defaultPrefill
	}
	if s.Duration == 0 {
		s.Duration = defaultDuration
	}
	if s.MaxTokens == 0 {
		s.MaxTokens = defaultMaxTokens
	}
	if s.Series == 0 {
		s.Series = defaultSeries
	}
	if s.PrefillRepeat == 0 {
		s.PrefillRepeat = defaultPrefillRepeat
	}
	if s.WarmupRule == nil {
		w := defaultWarmupRule
		s.WarmupRule = &w
	}
	if s.ErrorThreshold == 0 {
		s.ErrorThreshold = defaultErrorThreshold
	}
	return s
}

// Validate reports the fields of a spec that cannot work in one process,
// as [*loadgen.ConfigError]s whose Field names the spec's field
// ("Spec.Concurrency", "Spec.WarmupRule.Flow"). A zero field means its default, which is valid: s
// needs no [Spec.WithDefaults] first. [Runner.Run] refuses such a spec
// before it sends anything; [Runner.Validate] runs the runner's whole
// check, of its spec split over its Fleet's shards and of its client.
func (s Spec) Validate() error { return s.validateSharded(1) }

// validateSharded is [Spec.Validate] for a run split over shards
// processes (see [Runner].Fleet): each concurrency level is checked
// against [MaxStreams] a shard, its streams split as evenly as
// possible.
func (s Spec) validateSharded(shards int) error {
	shards = max(shards, 1)
	var errs errlist.List
	bad := func(field, format string, args ...any) {
		errs = append(errs, &loadgen.ConfigError{Field: "Spec." + field, Reason: fmt.Sprintf(format, args...)})
	}
	if s.URL == "" {
		bad("URL", "is empty: set the server's API root, such as http://127.0.0.1:8000/v1")
	} else if err := checkURL(s.URL); err != nil {
		bad("URL", "%s", strings.TrimPrefix(err.Error(), "matrix: URL "))
	} else if ce, ok := errors.AsType[*loadgen.ConfigError]((&loadgen.Client{BaseURL: s.URL}).Validate()); ok {
		bad("URL", "%s", ce.Reason)
	}
	if s.API == loadgen.Embeddings || s.API == loadgen.Rerank {
		bad("API", "is %v, which answers in one body with no tokens to time: the matrix measures streamed generation (chat, completions, responses or messages); load %v with loadgen/sweep or go run ./examples/bench -api %v", s.API, s.API, s.API)
	}
	if s.Contexts != nil && len(s.Contexts) == 0 {
		bad("Contexts", "is empty: the decode grid would have no rows (nil means the defaults)")
	}
	for _, c := range s.Contexts {
		if c < 0 {
			bad("Contexts", "holds %d: a context is 0 tokens or more", c)
		}
		if c > maxContextTokens {
			bad("Contexts", "holds %d, above %d tokens, longer than any model's context", c, maxContextTokens)
		}
	}
	if s.Concurrency != nil && len(s.Concurrency) == 0 {
		bad("Concurrency", "is empty: the decode grid would have no columns (nil means the defaults)")
	}
	for _, n := range s.Concurrency {
		if n < 1 {
			bad("Concurrency", "holds %d, below 1: a concurrency is 1 request or more", n)
		}
		switch share := fleet.Largest(n, shards); {
		case share <= MaxStreams:
		case shards == 1:
			bad("Concurrency", "holds %d, above %d, the most one process runs with honest timing: split the load over machines", n, MaxStreams)
		default:
			bad("Concurrency", "holds %d, %d a shard over %d shards, above %d, the most one process runs with honest timing: add shards", n, share, shards, MaxStreams)
		}
	}
	for _, c := range s.Prefill {
		if c < 1 {
			bad("Prefill", "holds %d: a prefill context is 1 token or more", c)
		}
		if c > maxContextTokens {
			bad("Prefill", "holds %d, above %d tokens, longer than any model's context", c, maxContextTokens)
		}
	}
	if s.Duration < 0 {
		bad("Duration", "is %v: set a window of 1s or more (0 means the default)", s.Duration)
	}
	if s.PrefillRepeat < 0 || s.PrefillRepeat > maxPrefillRepeat {
		bad("PrefillRepeat", "is %d: set 1 to %d cold requests a prefill row (0 means %d)", s.PrefillRepeat, maxPrefillRepeat, defaultPrefillRepeat)
	}
	if s.MaxTokens < 0 {
		bad("MaxTokens", "is %d: set 1 or more (0 means the default)", s.MaxTokens)
	}
	if !(s.ErrorThreshold >= 0 && s.ErrorThreshold <= 1) {
		bad("ErrorThreshold", "is %v: an error threshold is a share from 0 to 1 (0 means the default)", s.ErrorThreshold)
	}
	if w := s.WarmupRule; w != nil {
		for _, d := range []struct {
			name string
			v    time.Duration
		}{{"Min", w.Min}, {"Flow", w.Flow}, {"Timeout", w.Timeout}, {"PerContextK", w.PerContextK}} {
			if d.v < 0 {
				bad("WarmupRule."+d.name, "is %v: a negative warm-up duration cannot work", d.v)
			}
		}
	}
	if o := s.SLO; o != nil && (o.TTFT < 0 || o.TPOT < 0 || o.Latency < 0 || o.TTFO < 0) {
		bad("SLO", "has a negative objective: each is a duration, or 0 for none")
	}
	if _, err := picture.ParseFormat(s.ImageFormat); err != nil {
		bad("ImageFormat", "is %q: set png or jpeg", s.ImageFormat)
	}
	if len(s.Images) > 0 && s.API != loadgen.Chat && s.API != loadgen.Responses && s.API != loadgen.Messages {
		bad("Images", "are set, and the %v API sends text alone: use chat, responses or messages", s.API)
	}
	if len(s.Images) > fleet.MaxImages {
		bad("Images", "holds %d, above %d a request", len(s.Images), fleet.MaxImages)
	}
	for _, im := range s.Images {
		if sizes, err := picture.ParseSizes(im); err != nil || len(sizes) != 1 {
			bad("Images", "holds %q: give each picture as WIDTHxHEIGHT, 1 to %d pixels a side", im, picture.MaxSide)
			break
		}
	}
	return errs.Err()
}

// checkURL reports why a server's base URL cannot work, if it cannot:
// it must parse, be http or https, and name a host. The error shows the
// URL without its password.
func checkURL(raw string) error {
	shown := redact.URL(raw)
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the URL, password and all
		}
		return fmt.Errorf("matrix: URL %q cannot work: %w", shown, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("matrix: URL %q cannot work: the scheme must be http or https, like http://127.0.0.1:8000/v1", shown)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("matrix: URL %q cannot work: it names no host, like http://127.0.0.1:8000/v1", shown)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("matrix: URL %q cannot work: port %s is not between 1 and 65535", shown, p)
		}
	}
	return nil
}

// formatTokens writes a token count as the report does: multiples of 1,024
// as "16K", others as digits, as internal/tokencount writes it for every
// report and command.
func formatTokens(n int) string { return tokencount.Format(n) }
