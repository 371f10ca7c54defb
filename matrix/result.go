package matrix

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// Schema names the version of the results document. Readers refuse a
// document of another major version. Version 2 holds every figure in wall
// time; [ReadResults] still reads version 1, whose figures were in a
// simulated server's time, and converts them.
const Schema = "llmload.matrix/v2"

// schemaV1 is the results document before its figures were all in wall
// time.
const schemaV1 = "llmload.matrix/v1"

// Results are a matrix run: the spec, the server, the prefill table and the
// decode grid. It is one Go value, and as JSON (see [SaveFile]) a
// versioned document that other tools read.
type Results struct {
	Schema string          `json:"schema"`
	Spec   Spec            `json:"spec"`
	Server capacity.Server `json:"server"`

	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	// Complete reports that every cell was decided. A file written during a
	// run, or after an interruption, is not complete; -resume finishes it.
	Complete bool `json:"complete"`

	Prefill []Prefill `json:"prefill"`
	Cells   []Cell    `json:"cells"`
}

// Prefill is one row of the prefill table: cold requests (Spec.PrefillRepeat
// of them, each a prompt of its own) of ContextTokens, and their median
// time to first token.
type Prefill struct {
	ContextTokens int `json:"context_tokens"`
	// Status is Valid for a measured row, Over capacity for a row predicted
	// not to fit or whose prompt the server truncated or refused, Failed
	// when its request failed; Reason says why, for any status but Valid.
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Predicted is the plan's capacity verdict for one request of
	// ContextTokens and one output token.
	Predicted capacity.Verdict `json:"predicted"`
	// PromptTokens is the prompt's size as the server counted it;
	// ImageTokens how many of them were the images' (Spec.Images).
	PromptTokens int `json:"prompt_tokens"`
	ImageTokens  int `json:"image_tokens,omitempty"`
	// TTFT is the row's time to first token, in milliseconds: the median
	// of TTFTs.
	TTFT float64 `json:"ttft_ms"`
	// TTFTs are the time to first token of each cold request, in
	// milliseconds, in the order they were sent; a row of one request
	// (or written before rows were repeated) has none.
	TTFTs []float64 `json:"ttfts_ms,omitempty"`
	// PromptTokensPerSec is PromptTokens ÷ TTFT.
	PromptTokensPerSec float64 `json:"prompt_tok_s"`
	// Requests counts the requests sent for the row (retries included);
	// Errors those that failed, ErrorKinds by kind.
	Requests   int                       `json:"requests,omitempty"`
	Errors     int                       `json:"errors,omitempty"`
	ErrorKinds map[metrics.ErrorKind]int `json:"error_kinds,omitempty"`
	// Error says why there is no measurement, if there is none.
	Error string `json:"error,omitempty"`
}

// Quantiles are a latency's median, 90th and 99th percentiles, in
// milliseconds.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// Cell is one context × concurrency cell of the decode grid.
type Cell struct {
	ContextTokens int    `json:"context_tokens"`
	Concurrency   int    `json:"concurrency"`
	Status        Status `json:"status"`
	// Reason says why, for any status but Valid.
	Reason string `json:"reason,omitempty"`
	// Predicted is the plan's capacity verdict.
	Predicted capacity.Verdict `json:"predicted"`

	// PromptTokens is the cell's prompt as the server counted it, zero for
	// a cell never sent; ImageTokens how many of them were the images'
	// (Spec.Images).
	PromptTokens int `json:"prompt_tokens"`
	ImageTokens  int `json:"image_tokens,omitempty"`
	// Requests counts requests sent in the cell: the scout (with its
	// retries), the warm-up and the window. Errors counts those that
	// failed, ErrorKinds by kind, the scout's too.
	Requests   int                       `json:"requests"`
	Errors     int                       `json:"errors"`
	ErrorKinds map[metrics.ErrorKind]int `json:"error_kinds,omitempty"`

	// Measurement holds the measured columns; it is nil for a cell that
	// was not measured. In JSON its fields sit beside the cell's own, as
	// one object (see [Cell.MarshalJSON]).
	Measurement *Measurement `json:"-"`
}

// cellFields is a Cell without its methods, for its JSON methods.
type cellFields Cell

// MarshalJSON writes the cell and its measurement as one flat object:
// the results document has had that shape since its first version.
func (c Cell) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		cellFields
		*Measurement
	}{cellFields(c), c.Measurement})
}

// UnmarshalJSON reads the flat object MarshalJSON writes; the cell has a
// Measurement when the object holds any of its fields.
func (c *Cell) UnmarshalJSON(b []byte) error {
	flat := struct {
		*cellFields
		*Measurement
	}{(*cellFields)(c), nil}
	if err := json.Unmarshal(b, &flat); err != nil {
		return err
	}
	c.Measurement = flat.Measurement
	return nil
}

// Measurement holds a measured cell's columns, in wall time like every
// figure of the results (see Server.Speed).
type Measurement struct {
	// OutputTokensPerSec is output tokens ÷ measured seconds
	// (metrics.Summary.OutputTokensPerSec); its JSON key is total_tok_s.
	OutputTokensPerSec float64 `json:"total_tok_s"`
	// PerRequestTokensPerSec is the median over requests of 1 ÷ their time
	// between tokens.
	PerRequestTokensPerSec float64 `json:"per_request_tok_s"`
	// TTFT is the distribution of the requests' time to first token, TBT
	// of their mean time between tokens, ITL of every gap between tokens:
	// the metrics.Summary fields of the same names, in milliseconds.
	TTFT Quantiles `json:"ttft_ms"`
	TBT  Quantiles `json:"tbt_ms"`
	ITL  Quantiles `json:"itl_ms"`
	// TTFO is the distribution of the time to first output token, the
	// first answer token after any reasoning, and ReasoningTokens and
	// AnswerTokens split the completed requests' output: set where the
	// server reasoned.
	TTFO            Quantiles `json:"ttfo_ms,omitzero"`
	ReasoningTokens int       `json:"reasoning_tokens,omitempty"`
	AnswerTokens    int       `json:"answer_tokens,omitempty"`
	// SplitRequests counts the requests whose server reported its own
	// timings (the matrix asks a vLLM and the simulator for them), and
	// ServerQueue, ServerPrefill and Rest divide their TTFT into the
	// server's queue, its prefill and the rest, the network's and the
	// client's, in milliseconds (see metrics.TTFTSplit); zero where the
	// server reported none. OutsideServer flags a cell whose rest was large
	// (more than a quarter of the mean TTFT, and at least 2 ms): "client"
	// when the client was short of CPU (ClientLimited), "network"
	// otherwise; a note says how much.
	SplitRequests int       `json:"split_requests,omitempty"`
	ServerQueue   Quantiles `json:"server_queue_ms,omitzero"`
	ServerPrefill Quantiles `json:"server_prefill_ms,omitzero"`
	Rest          Quantiles `json:"rest_ms,omitzero"`
	OutsideServer string    `json:"outside_server,omitempty"`
	// AvgActive is the mean of the server's running requests sampled in
	// the window, or the client's count where the server has no metrics.
	AvgActive float64 `json:"avg_active"`
	// Completed counts requests that finished inside the window.
	Completed    int     `json:"completed"`
	OutputTokens int     `json:"output_tokens"`
	MeasuredS    float64 `json:"measured_s"`
	// Goodput is requests per second that completed within the SLO.
	Goodput float64 `json:"goodput,omitempty"`

	// WarmupS is how long the warm-up took; WarmupTimedOut that it ended
	// at its timeout rather than by its conditions; WarmupEnded why it
	// ended.
	WarmupS        float64 `json:"warmup_s"`
	WarmupTimedOut bool    `json:"warmup_timed_out,omitempty"`
	WarmupEnded    string  `json:"warmup_ended,omitempty"`
	// Server is what the server's /metrics said during the window.
	Server *serverSamples `json:"server,omitempty"`
	// Streams is the client's own view of the window: how many streams
	// decoded at once and how many waited for a first token.
	Streams *Streams `json:"streams,omitempty"`
	// Series is the cell over time, warm-up and window, in buckets of
	// Spec.Series: throughput, requests begun and ended, TTFT and
	// inter-token percentiles, the client's streams decoding and waiting,
	// and the server's running, waiting, KV cache usage and preemptions
	// from its /metrics. In a sharded run it is every shard's, merged
	// (exactly where a shard's clock is within half a bucket of the
	// leader's), with the server's figures.
	Series *metrics.Series `json:"series,omitempty"`
	// Energy is what the server's GPUs drew in the window, read from their
	// DCGM exporters (see [Runner].GPUMetrics), and what an output token
	// cost; nil when they were not read.
	Energy *metrics.Energy `json:"energy,omitempty"`
	// Notes explain figures that would otherwise contradict each other,
	// such as a total rate far below the per-request rate × streams.
	Notes []string `json:"notes,omitempty"`
	// Noisy, when set, says why the cell's numbers are mostly noise, so
	// that no report shows it as a clean Valid: the interval of its total
	// tok/s (see [Interval]) spans more than ±25% of it, or fewer than
	// three of its streams (fewer than its concurrency, for fewer) decoded
	// in the window. A longer window (Spec.Duration) narrows it.
	Noisy string `json:"noisy,omitempty"`
	// Client is the client's own health in the window; ClientLimited flags
	// a cell whose numbers the client may have limited.
	Client        loadgen.Health `json:"client"`
	ClientLimited bool           `json:"client_limited,omitempty"`
	// ReadMode says how the client read the cell's response bodies (see
	// [loadgen.Run].ReadMode): "shared pollers", "a goroutine per
	// stream" or "net/http".
	ReadMode string `json:"read_mode,omitempty"`
	// Partial marks a cell interrupted before its window ended, or, in a
	// sharded run, one that lost a shard: its numbers cover the part that
	// ran.
	Partial bool `json:"partial,omitempty"`
	// Shards, in a sharded run, are the processes that ran the cell's
	// streams: their shares, clock offsets, and the ones lost, with why.
	Shards []Shard `json:"shards,omitempty"`
	// Recording holds the cell's summary and its full distributions in
	// HdrHistogram's V2 encoding with their exact figures, over every
	// request the cell launched (metrics.ScopeAll), in wall time: what
	// merging, re-rendering and comparing need, without the run.
	Recording *metrics.Recording `json:"recording,omitempty"`
}

// serverSamples summarise the server's /metrics, sampled about once a second in a
// cell's window.
type serverSamples struct {
	Count       int     `json:"count"`
	AvgRunning  float64 `json:"avg_running"`
	PeakRunning float64 `json:"peak_running"`
	MaxWaiting  float64 `json:"max_waiting"`
	// AvgWaiting is the mean of the waiting requests sampled; WaitingShare
	// the share of samples with at least one request waiting. Both are
	// zero (and WaitingShare unset) when the server publishes no waiting
	// count.
	AvgWaiting   float64 `json:"avg_waiting"`
	WaitingShare float64 `json:"waiting_share"`
	// NoWaiting reports a server that publishes a running count but no
	// waiting count.
	NoWaiting bool `json:"no_waiting,omitempty"`
	// Preemptions counts the preemptions during the window.
	Preemptions float64 `json:"preemptions"`
	MaxKVUsage  float64 `json:"max_kv_usage"`
}

// Streams is the client's own timeline of a cell's window, sampled every
// few milliseconds: a stream decodes from its first token to its end, and
// waits from when it was sent to its first token (prefill, or a place in
// the server's queue). A slot between two requests of a closed loop does
// neither.
type Streams struct {
	// Samples is the number of readings taken.
	Samples int `json:"samples"`
	// AvgDecoding and AvgWaiting are time-averages over the window.
	AvgDecoding float64 `json:"avg_decoding"`
	AvgWaiting  float64 `json:"avg_waiting"`
	// PeakDecoding is the most streams seen decoding at once (for two
	// readings in a row, 10 ms apart).
	PeakDecoding int `json:"peak_decoding"`
	// Ceiling is the most streams decoding at once for all but a tenth of
	// the window (a turnover can show one more for a moment), CeilingShare the
	// share of the window at exactly that many. A server that runs only so
	// many requests at once and queues the rest holds the count at its
	// ceiling; one still prefilling some stream, or between requests, lets
	// it move.
	Ceiling      int     `json:"ceiling"`
	CeilingShare float64 `json:"ceiling_share"`
	// AllShare is the share of the window with every stream decoding;
	// WaitingShare the share with a stream waiting for its first token.
	AllShare     float64 `json:"all_share"`
	WaitingShare float64 `json:"waiting_share"`
	// Launched counts the requests begun in the window; MeanWaitMs is how
	// long each waited for its first token, on average (Little's law: the
	// streams waiting on average over the rate requests began), and
	// DecodeMs how long a stream took to decode one request's max tokens
	// at the rate streams decoded in the window.
	Launched   int     `json:"launched"`
	MeanWaitMs float64 `json:"mean_wait_ms"`
	DecodeMs   float64 `json:"decode_ms,omitempty"`
}

// Cell returns the cell at context × concurrency, or nil (nil results
// have no cells).
func (r *Results) Cell(context, concurrency int) *Cell {
	if r == nil {
		return nil
	}
	for i := range r.Cells {
		if c := &r.Cells[i]; c.ContextTokens == context && c.Concurrency == concurrency {
			return c
		}
	}
	return nil
}

// errNothingMeasured is the error of [Results.Measured] for a run that
// measured nothing.
var errNothingMeasured = errors.New("matrix: nothing could be measured")

// Measured returns nil when the run measured something: a Valid or
// Requests queued cell with output or, for a run without a grid, a
// prefill row. Otherwise it returns an error that says so and counts the
// cells by status: "matrix: no cell could
// be measured (2 Over capacity, 1 Failed)". Nil results measured nothing.
func (r *Results) Measured() error {
	if r == nil {
		return fmt.Errorf("%w: the results are nil", errNothingMeasured)
	}
	counts := map[Status]int{}
	for i := range r.Cells {
		c := &r.Cells[i]
		if hasRates(c) && (c.Status == Valid || c.Status == RequestsQueued) {
			return nil
		}
		counts[c.Status]++
	}
	if len(r.Cells) == 0 {
		for _, p := range r.Prefill {
			if p.Error == "" && p.PromptTokensPerSec > 0 {
				return nil
			}
		}
		if len(r.Prefill) == 0 {
			return nil
		}
		return nothingMeasured("no prefill row could be measured")
	}
	var parts []string
	for _, s := range []Status{OverCapacity, Failed, Valid, StatusUnknown} {
		n, word := counts[s], s.words()
		switch s {
		case Valid:
			n, word = n+counts[RequestsQueued], "ran without output"
		case StatusUnknown:
			word = "not run"
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, word))
		}
	}
	return nothingMeasured(fmt.Sprintf("no cell could be measured (%s)", strings.Join(parts, ", ")))
}

// nothingMeasured is the error of Measured: it says why, and is
// errNothingMeasured.
type nothingMeasured string

func (e nothingMeasured) Error() string        { return "matrix: " + string(e) }
func (e nothingMeasured) Is(target error) bool { return target == errNothingMeasured }

// writeJSON writes the results as an indented JSON document.
func (r *Results) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("matrix: write JSON: %w", err)
	}
	return nil
}

// ReadResults decodes a results document, refusing another schema. A nil
// reader is an error that is [fs.ErrInvalid].
func ReadResults(rd io.Reader) (*Results, error) {
	if rd == nil {
		return nil, fmt.Errorf("matrix: read results: the reader is nil: %w", fs.ErrInvalid)
	}
	var r Results
	dec := json.NewDecoder(rd)
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("matrix: read results: %w", err)
	}
	switch r.Schema {
	case Schema:
	case schemaV1:
		r.toWallTime()
		r.Schema = Schema
	default:
		return nil, fmt.Errorf("matrix: results have schema %q, want %q (or %q)", r.Schema, Schema, schemaV1)
	}
	if err := checkFigures(&r); err != nil {
		return nil, fmt.Errorf("matrix: read results: %w: the file is damaged or was not written by llmload", err)
	}
	if err := checkReasons(&r); err != nil {
		return nil, fmt.Errorf("matrix: read results: %w: the file is damaged or was not written by llmload", err)
	}
	for i := range r.Prefill {
		r.Prefill[i].settleStatus()
	}
	return &r, nil
}

// settleStatus gives a prefill row written before rows had a status the
// one its figures imply.
func (p *Prefill) settleStatus() {
	if p.Status != StatusUnknown {
		return
	}
	switch {
	case p.Error != "":
		p.Status, p.Reason = Failed, p.Error
	case p.PromptTokensPerSec > 0:
		p.Status = Valid
	}
}

// unknownKind returns an error kind of m, or of rec's summaries, that
// metrics does not name.
func unknownKind(m map[metrics.ErrorKind]int, rec *metrics.Recording) (metrics.ErrorKind, bool) {
	kinds := metrics.Kinds()
	for k := range m {
		if !slices.Contains(kinds, k) {
			return k, true
		}
	}
	if rec != nil {
		if k, bad := unknownKind(rec.Summary.Errors, nil); bad {
			return k, true
		}
		for _, mr := range rec.Models {
			if k, bad := unknownKind(mr.Summary.Errors, nil); bad {
				return k, true
			}
		}
	}
	return "", false
}

// checkReasons refuses a status, an error kind or a predicted verdict's
// reason that its package does not name.
func checkReasons(r *Results) error {
	known := func(x capacity.Reason) bool {
		switch x {
		case "", capacity.WithinLimits, capacity.LimitsUnknown, capacity.OverMaxModelLen, capacity.OverMaxRunning, capacity.OverKVTokens:
			return true
		}
		return false
	}
	for i := range r.Cells {
		c := &r.Cells[i]
		if !c.Status.known() {
			return fmt.Errorf("cell %d × %d: unknown status %q", c.ContextTokens, c.Concurrency, c.Status)
		}
		var rec *metrics.Recording
		if c.Measurement != nil {
			rec = c.Measurement.Recording
		}
		if k, bad := unknownKind(c.ErrorKinds, rec); bad {
			return fmt.Errorf("cell %d × %d: unknown error kind %q", c.ContextTokens, c.Concurrency, k)
		}
		if !known(c.Predicted.Reason) {
			return fmt.Errorf("cell %d × %d: unknown capacity reason %q", c.ContextTokens, c.Concurrency, c.Predicted.Reason)
		}
	}
	for i := range r.Prefill {
		if p := &r.Prefill[i]; !p.Status.known() {
			return fmt.Errorf("prefill row %d: unknown status %q", p.ContextTokens, p.Status)
		}
		if k, bad := unknownKind(r.Prefill[i].ErrorKinds, nil); bad {
			return fmt.Errorf("prefill row %d: unknown error kind %q", r.Prefill[i].ContextTokens, k)
		}
		if p := &r.Prefill[i]; !known(p.Predicted.Reason) {
			return fmt.Errorf("prefill row %d: unknown capacity reason %q", p.ContextTokens, p.Predicted.Reason)
		}
	}
	return nil
}
