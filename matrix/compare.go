package matrix

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/llmload/llmload/loadgen"
)

// ComparisonSchema names the version of a comparison document.
const ComparisonSchema = "llmload.matrix-compare/v1"

// CompareThreshold is the relative change beyond which a comparison marks
// a figure better or worse: 5%.
const CompareThreshold = 0.05

// Comparison compares two runs cell by cell: every figure of the next run
// divided by the base run's. Build one with [Compare]; it marshals to JSON
// as it is, and renders like [Results]: [Comparison.WriteTable],
// [Comparison.WriteMarkdown], [Comparison.WriteCSV], [Comparison.WriteJSON]
// and [Comparison.WriteHTML].
type Comparison struct {
	Schema string  `json:"schema"`
	Base   RunInfo `json:"base"`
	Next   RunInfo `json:"next"`
	// Prefill compares the prefill rows by context, ascending.
	Prefill []PrefillChange `json:"prefill"`
	// Cells compare the decode grids' cells in grid order: by context,
	// then concurrency. A cell in either run is here.
	Cells []CellChange `json:"cells"`
}

// RunInfo identifies one run of a comparison.
type RunInfo struct {
	Model     string    `json:"model,omitempty"`
	Engine    string    `json:"engine,omitempty"`
	URL       string    `json:"url,omitempty"`
	Simulated bool      `json:"simulated,omitempty"`
	Speed     float64   `json:"speed,omitempty"`
	Started   time.Time `json:"started,omitzero"`
	Complete  bool      `json:"complete"`
}

// Presence says which runs hold a cell or a prefill row.
type Presence uint8

// Presences. The zero value means "not set".
const (
	PresenceUnknown Presence = iota
	// InBoth: both runs hold it.
	InBoth
	// OnlyInBase: only the base run holds it.
	OnlyInBase
	// OnlyInNext: only the next run holds it.
	OnlyInNext
)

var presenceText = [...]struct{ words, token string }{
	{"", ""}, {"in both", "both"}, {"only in base", "base_only"}, {"only in next", "next_only"},
}

// String returns the presence as reports show it: "in both", "only in
// base" or "only in next".
func (p Presence) String() string {
	if int(p) < len(presenceText) {
		return presenceText[p].words
	}
	return fmt.Sprintf("Presence(%d)", p)
}

// MarshalText returns the presence as JSON and CSV write it: "both",
// "base_only" or "next_only".
func (p Presence) MarshalText() ([]byte, error) {
	if int(p) < len(presenceText) {
		return []byte(presenceText[p].token), nil
	}
	return nil, fmt.Errorf("matrix: invalid presence %d", p)
}

// UnmarshalText reads what MarshalText writes.
func (p *Presence) UnmarshalText(b []byte) error {
	for i, t := range presenceText {
		if t.token == string(b) {
			*p = Presence(i)
			return nil
		}
	}
	return fmt.Errorf("matrix: unknown presence %q", b)
}

// Change says whether a figure got better or worse beyond
// [CompareThreshold]. Better means faster: a higher rate, or a lower
// latency.
type Change uint8

// Changes. The zero value means "not set".
const (
	ChangeUnknown Change = iota
	// ChangeSame: within CompareThreshold.
	ChangeSame
	// ChangeBetter: faster by more than CompareThreshold.
	ChangeBetter
	// ChangeWorse: slower by more than CompareThreshold.
	ChangeWorse
)

var changeText = [...]struct{ mark, token string }{
	{"", ""}, {"", "same"}, {"▲", "better"}, {"▼", "worse"},
}

// String returns the change's name: "same", "better" or "worse".
func (c Change) String() string {
	if int(c) < len(changeText) {
		return changeText[c].token
	}
	return fmt.Sprintf("Change(%d)", c)
}

// Mark returns the reports' marker: "▲" better, "▼" worse, "" otherwise.
func (c Change) Mark() string {
	if int(c) < len(changeText) {
		return changeText[c].mark
	}
	return ""
}

// MarshalText returns the String form.
func (c Change) MarshalText() ([]byte, error) {
	if int(c) < len(changeText) {
		return []byte(changeText[c].token), nil
	}
	return nil, fmt.Errorf("matrix: invalid change %d", c)
}

// UnmarshalText reads what MarshalText writes.
func (c *Change) UnmarshalText(b []byte) error {
	for i, t := range changeText {
		if t.token == string(b) {
			*c = Change(i)
			return nil
		}
	}
	return fmt.Errorf("matrix: unknown change %q", b)
}

// Ratio compares one figure of two runs. A side without the figure (not
// measured, or not in that run) is 0, and then Ratio is 0 and Change
// ChangeUnknown.
type Ratio struct {
	Base float64 `json:"base,omitempty"`
	Next float64 `json:"next,omitempty"`
	// Ratio is Next ÷ Base.
	Ratio  float64 `json:"ratio,omitempty"`
	Change Change  `json:"change,omitzero"`
}

// newRatio compares base and next, or returns nil when neither is a
// positive number. lowerIsBetter is set for latencies.
func newRatio(base, next float64, lowerIsBetter bool) *Ratio {
	ok := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) }
	if !ok(base) {
		base = 0
	}
	if !ok(next) {
		next = 0
	}
	if base == 0 && next == 0 {
		return nil
	}
	r := &Ratio{Base: base, Next: next}
	if base == 0 || next == 0 || !ok(next/base) {
		return r
	}
	r.Ratio, r.Change = next/base, ChangeSame
	switch {
	case r.Ratio > 1+CompareThreshold:
		r.Change = ChangeBetter
	case r.Ratio < 1-CompareThreshold:
		r.Change = ChangeWorse
	}
	if lowerIsBetter && r.Change != ChangeSame {
		r.Change = ChangeBetter + ChangeWorse - r.Change
	}
	return r
}

// Compared reports whether both runs have the figure, so that Ratio is
// set.
func (r *Ratio) Compared() bool { return r != nil && r.Ratio > 0 }

// PrefillChange compares one context's prefill measurement.
type PrefillChange struct {
	ContextTokens int      `json:"context_tokens"`
	Presence      Presence `json:"presence"`
	// BaseMeasured and NextMeasured report that the run has a
	// measurement for the context.
	BaseMeasured bool `json:"base_measured"`
	NextMeasured bool `json:"next_measured"`
	// PromptTokS compares the prompt tok/s; nil when neither run
	// measured it.
	PromptTokS *Ratio `json:"prompt_tok_s,omitempty"`
	// TTFTms compares the cold time to first token.
	TTFTms *Ratio `json:"ttft_ms,omitempty"`
}

// CellChange compares one context × concurrency cell.
type CellChange struct {
	ContextTokens int      `json:"context_tokens"`
	Concurrency   int      `json:"concurrency"`
	Presence      Presence `json:"presence"`
	// BaseStatus and NextStatus are the cell's status in each run; a cell
	// absent from a run has StatusUnknown there.
	BaseStatus    Status `json:"base_status,omitzero"`
	NextStatus    Status `json:"next_status,omitzero"`
	StatusChanged bool   `json:"status_changed,omitempty"`
	// BaseMeasured and NextMeasured report that the run has numbers for
	// the cell (it was measured and produced output).
	BaseMeasured bool `json:"base_measured"`
	NextMeasured bool `json:"next_measured"`
	// The ratios are nil when neither run has numbers; see [Ratio] for a
	// cell with numbers in one run only.
	TotalTokS      *Ratio `json:"total_tok_s,omitempty"`
	PerRequestTokS *Ratio `json:"per_request_tok_s,omitempty"`
	TTFTp50        *Ratio `json:"ttft_p50_ms,omitempty"`
	TBTp50         *Ratio `json:"tbt_p50_ms,omitempty"`
}

// Note says what is special about the cell, or "": "only in base", "not
// measured in next", "Valid → Requests queued".
func (c CellChange) Note() string {
	switch {
	case c.Presence == OnlyInBase || c.Presence == OnlyInNext:
		return c.Presence.String()
	case c.StatusChanged:
		return c.BaseStatus.String() + " → " + c.NextStatus.String()
	case c.BaseMeasured && !c.NextMeasured:
		return "not measured in next"
	case !c.BaseMeasured && c.NextMeasured:
		return "not measured in base"
	}
	return ""
}

// Compare compares next with base cell by cell: each ratio is next ÷ base,
// marked better or worse beyond [CompareThreshold]. Cells and prefill rows
// in only one run, or measured in only one, are kept and marked; a nil run
// compares as an empty one.
func Compare(base, next *Results) *Comparison {
	if base == nil {
		base = &Results{}
	}
	if next == nil {
		next = &Results{}
	}
	out := &Comparison{Schema: ComparisonSchema, Base: runInfo(base), Next: runInfo(next),
		Prefill: []PrefillChange{}, Cells: []CellChange{}}

	pb, pn := prefillByContext(base), prefillByContext(next)
	var ctxs []int
	for c := range pb {
		ctxs = append(ctxs, c)
	}
	for c := range pn {
		ctxs = append(ctxs, c)
	}
	slices.Sort(ctxs)
	for _, ctx := range slices.Compact(ctxs) {
		b, inB := pb[ctx]
		n, inN := pn[ctx]
		pc := PrefillChange{ContextTokens: ctx, Presence: presence(inB, inN),
			BaseMeasured: inB && prefillMeasured(b), NextMeasured: inN && prefillMeasured(n)}
		if !pc.BaseMeasured {
			b = Prefill{}
		}
		if !pc.NextMeasured {
			n = Prefill{}
		}
		pc.PromptTokS = newRatio(b.PromptTokS, n.PromptTokS, false)
		pc.TTFTms = newRatio(b.TTFTms, n.TTFTms, true)
		out.Prefill = append(out.Prefill, pc)
	}

	gb, gn := newReportGrid(base), newReportGrid(next)
	for _, ctx := range unionSorted(gb.contexts, gn.contexts) {
		for _, n := range unionSorted(gb.concurrency, gn.concurrency) {
			b, x := gb.at(ctx, n), gn.at(ctx, n)
			if b == nil && x == nil {
				continue
			}
			cc := CellChange{ContextTokens: ctx, Concurrency: n, Presence: presence(b != nil, x != nil),
				BaseMeasured: hasRates(b), NextMeasured: hasRates(x)}
			if b != nil {
				cc.BaseStatus = b.Status
			}
			if x != nil {
				cc.NextStatus = x.Status
			}
			cc.StatusChanged = b != nil && x != nil && b.Status != x.Status
			var mb, mx Measurement
			if cc.BaseMeasured {
				mb = *b.Measurement
			}
			if cc.NextMeasured {
				mx = *x.Measurement
			}
			cc.TotalTokS = newRatio(mb.TotalTokS, mx.TotalTokS, false)
			cc.PerRequestTokS = newRatio(mb.PerRequestTokS, mx.PerRequestTokS, false)
			cc.TTFTp50 = newRatio(mb.TTFTms.P50, mx.TTFTms.P50, true)
			cc.TBTp50 = newRatio(mb.TBTms.P50, mx.TBTms.P50, true)
			out.Cells = append(out.Cells, cc)
		}
	}
	return out
}

// runInfo identifies r for a comparison.
func runInfo(r *Results) RunInfo {
	info := RunInfo{Model: r.Server.Model, Engine: r.Server.Engine, URL: r.Server.URL,
		Simulated: r.Server.Simulated, Speed: r.Server.Speed, Started: r.Started, Complete: r.Complete}
	if info.Model == "" {
		info.Model = r.Spec.Model
	}
	if info.URL == "" {
		info.URL = r.Spec.URL
	}
	info.URL = loadgen.RedactURL(info.URL)
	return info
}

// prefillByContext indexes r's prefill rows by context; a later row for
// the same context wins.
func prefillByContext(r *Results) map[int]Prefill {
	m := make(map[int]Prefill, len(r.Prefill))
	for _, p := range r.Prefill {
		m[p.ContextTokens] = p
	}
	return m
}

// presence is the Presence of something held by base, next or both.
func presence(inBase, inNext bool) Presence {
	switch {
	case inBase && inNext:
		return InBoth
	case inBase:
		return OnlyInBase
	case inNext:
		return OnlyInNext
	}
	return PresenceUnknown
}

// unionSorted is the sorted union of two sorted lists.
func unionSorted(a, b []int) []int {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// Cell returns the comparison of the cell at context × concurrency, or
// nil.
func (c *Comparison) Cell(context, concurrency int) *CellChange {
	for i := range c.Cells {
		if x := &c.Cells[i]; x.ContextTokens == context && x.Concurrency == concurrency {
			return x
		}
	}
	return nil
}

// WriteJSON writes the comparison as an indented JSON document.
func (c *Comparison) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return fmt.Errorf("matrix: write comparison JSON: %w", err)
	}
	return nil
}
