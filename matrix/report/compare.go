package report

import (
	fig "github.com/llmload/llmload/internal/figure"
	"github.com/llmload/llmload/matrix"

	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/redact"
)

// comparisonSchema names the version of a comparison document.
//
// v2 names each side's server as a results file does (its "server"
// object); v1 gave its model, engine, URL and speed beside its start.
const comparisonSchema = "llmload.matrix-compare/v2"

// compareThreshold is the relative change beyond which a comparison marks
// a figure better or worse: 5%.
const compareThreshold = 0.05

// Comparison compares two runs cell by cell: every figure of the next run
// divided by the base run's. Build one with [Compare]; it marshals to JSON
// as it is, and renders like results ([Comparison.Write]): [Table],
// [Markdown], [CSV], [JSON]
// and [HTML].
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
	// Server is the run's server, its model and URL taken from the
	// spec where the results did not record them.
	Server   capacity.Server `json:"server"`
	Started  time.Time       `json:"started,omitzero"`
	Complete bool            `json:"complete"`
	// Runs counts the side's runs when it has more than one (see
	// [Compare]); the other fields are its first run's.
	Runs int `json:"runs,omitempty"`
}

// Presence says which runs hold a cell or a prefill row, as JSON and CSV
// write it: "both", "base_only" (only the base run) or "next_only" (only
// the next run).
type Presence string

// The presences.
const (
	// inBoth: both runs hold it.
	inBoth Presence = "both"
	// onlyInBase: only the base run holds it.
	onlyInBase Presence = "base_only"
	// onlyInNext: only the next run holds it.
	onlyInNext Presence = "next_only"
)

// words returns the presence as reports show it: "in both", "only in
// base" or "only in next".
func (p Presence) words() string {
	switch p {
	case inBoth:
		return "in both"
	case onlyInBase:
		return "only in base"
	case onlyInNext:
		return "only in next"
	}
	return string(p)
}

// Change says whether a figure got better or worse: by more than
// the 5% threshold, and beyond what the runs' own noise explains (see
// [matrix.Interval]). Better means faster: a higher rate, or a lower
// latency. It is "better" or "worse"; "noise" when the figures are more
// than 5% apart but within the runs' noise; "same" within 5%; empty when
// the figure was not compared.
type Change string

// The changes.
const (
	// changeSame: within compareThreshold.
	changeSame Change = "same"
	// changeBetter: faster by more than compareThreshold, and the two
	// runs' intervals do not overlap.
	changeBetter Change = "better"
	// changeWorse: slower by more than compareThreshold, and the two runs'
	// intervals do not overlap.
	changeWorse Change = "worse"
	// changeNoise: more than compareThreshold apart, but the two runs'
	// intervals overlap: the difference is within the runs' own noise.
	changeNoise Change = "noise"
)

// mark returns the reports' marker: "▲" better, "▼" worse, "~" within
// noise, "" otherwise.
func (c Change) mark() string {
	switch c {
	case changeBetter:
		return "▲"
	case changeWorse:
		return "▼"
	case changeNoise:
		return "~"
	}
	return ""
}

// Ratio compares one figure of two runs. A side without the figure (not
// measured, or not in that run) is 0, and then Ratio is 0 and Change
// empty.
type Ratio struct {
	Base float64 `json:"base,omitempty"`
	Next float64 `json:"next,omitempty"`
	// BaseInterval and NextInterval are where each run's figure lies, as
	// far as the spread of its requests tells (see [matrix.Interval]); nil when
	// the run has too few requests, or too little of their distribution,
	// to tell. A change is marked only when they do not overlap; without
	// them the threshold alone decides.
	BaseInterval *matrix.Interval `json:"base_interval,omitempty"`
	NextInterval *matrix.Interval `json:"next_interval,omitempty"`
	// Ratio is Next ÷ Base.
	Ratio  float64 `json:"ratio,omitempty"`
	Change Change  `json:"change,omitzero"`
}

// estimate is one run's figure and its interval. unknown marks a figure
// whose noise cannot be told (too few requests): it is never marked
// better or worse.
type estimate struct {
	v       float64
	in      *matrix.Interval
	unknown bool
	limited bool // the client may have limited the figure
	cmp     bool // lower is better
}

// timingResolution is how far apart two runs of one server may put the
// same latency for timers and scheduling alone: a TTFT's interval is at
// least this wide on either side (matrix's Cell.Intervals takes the same).
const timingResolution = 250 * time.Microsecond

// cellEstimates are a measured cell's compared figures with their
// intervals (see [matrix.Cell.Intervals]): total tok/s, per-request tok/s,
// TTFT and time between tokens, for a run at the simulator's speed (0 or
// 1 for a real server). A cell of results that carry no request counts
// (made elsewhere) has none, and its figures are compared by the
// threshold alone; a cell the client may have limited is never marked.
func cellEstimates(c *matrix.Cell, speed float64) (total, perRequest, ttft, tbt estimate) {
	m := c.Measurement
	total, perRequest = estimate{v: m.OutputTokensPerSec}, estimate{v: m.PerRequestTokensPerSec}
	ttft, tbt = estimate{v: m.TTFT.P50, cmp: true}, estimate{v: m.TBT.P50, cmp: true}
	if c.Requests <= 0 {
		return total, perRequest, ttft, tbt
	}
	all := []*estimate{&total, &perRequest, &ttft, &tbt}
	if m.ClientLimited {
		// The figures may be the client's, not the server's: no change
		// in them can be told.
		for _, e := range all {
			e.unknown, e.limited = true, true
		}
		return total, perRequest, ttft, tbt
	}
	total.in, perRequest.in, ttft.in, tbt.in = c.Intervals(speed)
	for _, e := range all {
		e.unknown = e.in == nil
	}
	return total, perRequest, ttft, tbt
}

// newRatio compares base and next, or returns nil when neither is a
// positive number.
func newRatio(base, next estimate) *Ratio {
	ok := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) }
	if !ok(base.v) {
		base = estimate{cmp: base.cmp}
	}
	if !ok(next.v) {
		next = estimate{cmp: next.cmp}
	}
	if base.v == 0 && next.v == 0 {
		return nil
	}
	r := &Ratio{Base: base.v, Next: next.v, BaseInterval: base.in, NextInterval: next.in}
	if base.v == 0 || next.v == 0 || !ok(next.v/base.v) {
		return r
	}
	r.Ratio, r.Change = fig.Round(next.v/base.v), changeSame // a ratio of two decimals shows as one: 1.12, not 1.1199999999999999
	switch {
	case r.Ratio > 1+compareThreshold:
		r.Change = changeBetter
	case r.Ratio < 1-compareThreshold:
		r.Change = changeWorse
	}
	if r.Change != changeSame {
		switch {
		case base.unknown || next.unknown:
			r.Change = changeNoise // too few requests to tell
		case base.in != nil && next.in != nil && next.in.Low <= base.in.High && next.in.High >= base.in.Low:
			r.Change = changeNoise // the intervals overlap
		}
	}
	if base.cmp {
		switch r.Change {
		case changeBetter:
			r.Change = changeWorse
		case changeWorse:
			r.Change = changeBetter
		}
	}
	return r
}

// compared reports whether both runs have the figure, so that Ratio is
// set.
func (r *Ratio) compared() bool { return r != nil && r.Ratio > 0 }

// PrefillChange compares one context's prefill measurement.
type PrefillChange struct {
	ContextTokens int      `json:"context_tokens"`
	Presence      Presence `json:"presence"`
	// BaseMeasured and NextMeasured report that the run has a
	// measurement for the context.
	BaseMeasured bool `json:"base_measured"`
	NextMeasured bool `json:"next_measured"`
	// BaseStatus and NextStatus are the row's status in each run (the
	// most frequent of its runs); a row absent from a run has
	// StatusUnknown there.
	BaseStatus matrix.Status `json:"base_status,omitzero"`
	NextStatus matrix.Status `json:"next_status,omitzero"`
	// PromptTokensPerSec compares the prompt tok/s; nil when neither run
	// measured it.
	PromptTokensPerSec *Ratio `json:"prompt_tok_s,omitempty"`
	// TTFT compares the cold time to first token.
	TTFT *Ratio `json:"ttft_ms,omitempty"`
}

// CellChange compares one context × concurrency cell.
type CellChange struct {
	ContextTokens int      `json:"context_tokens"`
	Concurrency   int      `json:"concurrency"`
	Presence      Presence `json:"presence"`
	// BaseStatus and NextStatus are the cell's status in each run; a cell
	// absent from a run has StatusUnknown there.
	BaseStatus    matrix.Status `json:"base_status,omitzero"`
	NextStatus    matrix.Status `json:"next_status,omitzero"`
	StatusChanged bool          `json:"status_changed,omitempty"`
	// BaseMeasured and NextMeasured report that the run has numbers for
	// the cell (it was measured and produced output).
	BaseMeasured bool `json:"base_measured"`
	NextMeasured bool `json:"next_measured"`
	// The ratios are nil when neither run has numbers; see [Ratio] for a
	// cell with numbers in one run only.
	OutputTokensPerSec     *Ratio `json:"total_tok_s,omitempty"`
	PerRequestTokensPerSec *Ratio `json:"per_request_tok_s,omitempty"`
	TTFTp50                *Ratio `json:"ttft_p50_ms,omitempty"`
	TBTp50                 *Ratio `json:"tbt_p50_ms,omitempty"`
	// TokensPerJoule compares the output tokens per joule of the server's
	// GPUs (see [matrix.Measurement].Energy); nil when neither run read them. It
	// has no interval: the threshold alone marks it.
	TokensPerJoule *Ratio `json:"tokens_per_joule,omitempty"`
}

// Note says what is special about the cell, or "": "only in base", "not
// measured in next", "Valid → Requests queued".
func (c CellChange) Note() string {
	switch {
	case c.Presence == onlyInBase || c.Presence == onlyInNext:
		return c.Presence.words()
	case c.StatusChanged:
		return wordsOf(c.BaseStatus) + " → " + wordsOf(c.NextStatus)
	case c.BaseMeasured && !c.NextMeasured:
		return "not measured in next"
	case !c.BaseMeasured && c.NextMeasured:
		return "not measured in base"
	}
	return ""
}

// compareTwo compares one run a side: CompareRuns of base and next.
func compareTwo(base, next *matrix.Results) *Comparison {
	return Compare([]*matrix.Results{base}, []*matrix.Results{next})
}

// CompareRuns compares next with base cell by cell: each ratio is next ÷
// base, marked better or worse beyond the 5% threshold and the runs' noise
// (see [matrix.Interval]). Cells and prefill rows in only one side, or measured in
// only one, are kept and marked; a nil run compares as an empty one. With
// runs repeated on a side, such as two runs of a server before a change
// and two after, each side's figure is the median of its runs', and its
// interval spans every run's figure and interval: the runs' differences
// are the noise a change must stand out of.
func Compare(base, next []*matrix.Results) *Comparison {
	// A simulated run is compared in the simulated server's time, so runs
	// at different speeds compare.
	base, next = nonEmptyRuns(base), nonEmptyRuns(next)
	out := &Comparison{Schema: comparisonSchema, Base: runsInfo(base), Next: runsInfo(next),
		Prefill: []PrefillChange{}, Cells: []CellChange{}}

	pb, pn := prefillRuns(base), prefillRuns(next)
	var ctxs []int
	for c := range pb {
		ctxs = append(ctxs, c)
	}
	for c := range pn {
		ctxs = append(ctxs, c)
	}
	slices.Sort(ctxs)
	for _, ctx := range slices.Compact(ctxs) {
		b, n := pb[ctx], pn[ctx]
		pc := PrefillChange{ContextTokens: ctx, Presence: presence(len(b) > 0, len(n) > 0)}
		var brate, bttft, nrate, nttft []estimate
		for _, p := range b {
			if prefillMeasured(p.Prefill) {
				r, f := prefillEstimates(p.Prefill, p.speed)
				brate, bttft = append(brate, r), append(bttft, f)
			}
		}
		for _, p := range n {
			if prefillMeasured(p.Prefill) {
				r, f := prefillEstimates(p.Prefill, p.speed)
				nrate, nttft = append(nrate, r), append(nttft, f)
			}
		}
		pc.BaseMeasured, pc.NextMeasured = len(brate) > 0, len(nrate) > 0
		pc.BaseStatus, pc.NextStatus = mostPrefillStatus(b), mostPrefillStatus(n)
		pc.PromptTokensPerSec = newRatio(combine(brate, false), combine(nrate, false))
		pc.TTFT = newRatio(combine(bttft, true), combine(nttft, true))
		out.Prefill = append(out.Prefill, pc)
	}

	// The cells of every run, in grid order: the work is linear in the
	// cells that exist, however sparse the grid they span.
	gb, gn := cellRuns(base), cellRuns(next)
	keys := make([][2]int, 0, len(gb)+len(gn))
	for k := range gb {
		keys = append(keys, k)
	}
	for k := range gn {
		if _, ok := gb[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b [2]int) int {
		if c := cmp.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return cmp.Compare(a[1], b[1])
	})
	for _, k := range keys {
		b, x := gb[k], gn[k]
		cc := CellChange{ContextTokens: k[0], Concurrency: k[1], Presence: presence(len(b) > 0, len(x) > 0)}
		cc.BaseStatus, cc.NextStatus = b.status(), x.status()
		cc.StatusChanged = len(b) > 0 && len(x) > 0 && cc.BaseStatus != cc.NextStatus
		var bt, bp, bf, bb, xt, xp, xf, xb estimate
		cc.BaseMeasured, bt, bp, bf, bb = b.estimates()
		cc.NextMeasured, xt, xp, xf, xb = x.estimates()
		cc.OutputTokensPerSec = newRatio(bt, xt)
		cc.PerRequestTokensPerSec = newRatio(bp, xp)
		cc.TTFTp50 = newRatio(bf, xf)
		cc.TBTp50 = newRatio(bb, xb)
		cc.TokensPerJoule = newRatio(b.energy(), x.energy())
		out.Cells = append(out.Cells, cc)
	}
	return out
}

// nonEmptyRuns is runs without nil entries; no run compares as one empty
// run.
func nonEmptyRuns(runs []*matrix.Results) []*matrix.Results {
	out := make([]*matrix.Results, 0, len(runs))
	for _, r := range runs {
		if r != nil {
			out = append(out, r.InServerTime())
		}
	}
	if len(out) == 0 {
		out = append(out, &matrix.Results{})
	}
	return out
}

// runCell is one run's cell, with the run's simulator speed.
type runCell struct {
	c     *matrix.Cell
	speed float64
}

// cellSide is one side's cells at one place of the grid, one a run that
// has it.
type cellSide []runCell

// cellRuns indexes the cells of runs by place.
func cellRuns(runs []*matrix.Results) map[[2]int]cellSide {
	m := map[[2]int]cellSide{}
	for _, r := range runs {
		for k, c := range cellIndex(r.Cells) {
			m[k] = append(m[k], runCell{c: c, speed: r.Server.Speed})
		}
	}
	return m
}

// status is the side's most frequent status (the first run's on a tie),
// StatusUnknown when no run has the cell.
func (s cellSide) status() matrix.Status {
	best, count := matrix.StatusUnknown, 0
	for _, rc := range s {
		n := 0
		for _, o := range s {
			if o.c.Status == rc.c.Status {
				n++
			}
		}
		if n > count {
			best, count = rc.c.Status, n
		}
	}
	return best
}

// estimates are the side's figures, combined over its runs that measured
// the cell.
func (s cellSide) estimates() (measured bool, total, perRequest, ttft, tbt estimate) {
	var ts, ps, fs, bs []estimate
	for _, rc := range s {
		if !hasRates(rc.c) {
			continue
		}
		t, p, f, b := cellEstimates(rc.c, rc.speed)
		ts, ps, fs, bs = append(ts, t), append(ps, p), append(fs, f), append(bs, b)
	}
	return len(ts) > 0, combine(ts, false), combine(ps, false), combine(fs, true), combine(bs, true)
}

// energy is the side's output tokens per joule, combined over its runs
// that read the GPUs of a cell with output.
func (s cellSide) energy() estimate {
	var es []estimate
	for _, rc := range s {
		if e := rc.c.Measurement; hasRates(rc.c) && e.Energy != nil && e.Energy.TokensPerJoule > 0 {
			es = append(es, estimate{v: e.Energy.TokensPerJoule, limited: e.ClientLimited})
		}
	}
	return combine(es, false)
}

// combine is one side's figure from its runs' estimates: the median of
// their figures, with an interval that spans them all and their own
// intervals. A run whose figure the client may have limited is left out;
// two runs or more make the noise known.
func combine(es []estimate, lowerIsBetter bool) estimate {
	var ok []estimate
	for _, e := range es {
		if !e.limited {
			ok = append(ok, e)
		}
	}
	switch {
	case len(es) == 0:
		return estimate{cmp: lowerIsBetter}
	case len(ok) == 0:
		return es[0]
	case len(ok) == 1:
		return ok[0]
	}
	vals := make([]float64, len(ok))
	in := &matrix.Interval{Low: math.Inf(1), High: math.Inf(-1)}
	for i, e := range ok {
		vals[i] = e.v
		in.Low, in.High = min(in.Low, e.v), max(in.High, e.v)
		if e.in != nil {
			in.Low, in.High = min(in.Low, e.in.Low), max(in.High, e.in.High)
		}
	}
	slices.Sort(vals)
	v := vals[len(vals)/2]
	if len(vals)%2 == 0 {
		v = (vals[len(vals)/2-1] + v) / 2
	}
	return estimate{v: v, in: in, cmp: lowerIsBetter}
}

// runPrefill is one run's prefill row, with the run's simulator speed.
type runPrefill struct {
	matrix.Prefill
	speed float64
}

// prefillRuns indexes the prefill rows of runs by context, one row a run.
func prefillRuns(runs []*matrix.Results) map[int][]runPrefill {
	m := map[int][]runPrefill{}
	for _, r := range runs {
		for ctx, p := range prefillByContext(r) {
			m[ctx] = append(m[ctx], runPrefill{p, r.Server.Speed})
		}
	}
	return m
}

// prefillEstimates are a measured prefill row's compared figures with
// their intervals: its prompt tok/s and its TTFT, for a run at the
// simulator's speed (0 or 1 for a real server). The TTFT's interval spans
// the row's cold requests, the least to the most (with three, it holds
// their median three times in four), and the timers' resolution (250 µs)
// on either side; a row of one request sent by this package (Requests >
// 0) has no interval, and is never marked better or worse; a row of
// results that carry no request counts (made elsewhere) is compared by the
// threshold alone.
func prefillEstimates(p matrix.Prefill, speed float64) (rate, ttft estimate) {
	rate, ttft = estimate{v: p.PromptTokensPerSec}, estimate{v: p.TTFT, cmp: true}
	if p.Requests <= 0 {
		return rate, ttft
	}
	if len(p.TTFTs) < 2 {
		rate.unknown, ttft.unknown = true, true
		return rate, ttft
	}
	floor := timingResolution.Seconds() * 1000 * max(speed, 1)
	ttft.in = &matrix.Interval{Low: max(min(slices.Min(p.TTFTs), p.TTFT-floor), 0), High: max(slices.Max(p.TTFTs), p.TTFT+floor)}
	if lo, hi := ttft.in.Low/p.TTFT, ttft.in.High/p.TTFT; p.TTFT > 0 && p.PromptTokensPerSec > 0 && lo > 0 {
		// A rate is the inverse of a time: the slowest TTFT gives the
		// lowest rate.
		rate.in = &matrix.Interval{Low: p.PromptTokensPerSec * (1 / hi), High: p.PromptTokensPerSec * (1 / lo)}
	}
	rate.unknown = rate.in == nil
	return rate, ttft
}

// mostPrefillStatus is the most frequent status of a context's prefill rows
// (the first run's on a tie), StatusUnknown when there are none.
func mostPrefillStatus(rows []runPrefill) matrix.Status {
	best, count := matrix.StatusUnknown, 0
	for _, p := range rows {
		n := 0
		for _, o := range rows {
			if o.Status == p.Status {
				n++
			}
		}
		if n > count {
			best, count = p.Status, n
		}
	}
	return best
}

// cellIndex indexes cells by context and concurrency; a later cell at the
// same place wins.
func cellIndex(cells []matrix.Cell) map[[2]int]*matrix.Cell {
	m := make(map[[2]int]*matrix.Cell, len(cells))
	for i := range cells {
		m[[2]int{cells[i].ContextTokens, cells[i].Concurrency}] = &cells[i]
	}
	return m
}

// runsInfo identifies one side of a comparison: its first run, and how
// many runs it has.
func runsInfo(runs []*matrix.Results) RunInfo {
	info := runInfo(runs[0])
	if len(runs) > 1 {
		info.Runs = len(runs)
		for _, r := range runs {
			info.Complete = info.Complete && r.Complete
		}
	}
	return info
}

// runInfo identifies r for a comparison.
func runInfo(r *matrix.Results) RunInfo {
	info := RunInfo{Server: r.Server, Started: r.Started, Complete: r.Complete}
	s := &info.Server
	if s.Model == "" {
		s.Model = r.Spec.Model
	}
	if s.URL == "" {
		s.URL = r.Spec.URL
	}
	s.URL = redact.URL(s.URL)
	s.Notes = slices.Clone(s.Notes)
	return info
}

// prefillByContext indexes r's prefill rows by context; a later row for
// the same context wins.
func prefillByContext(r *matrix.Results) map[int]matrix.Prefill {
	m := make(map[int]matrix.Prefill, len(r.Prefill))
	for _, p := range r.Prefill {
		m[p.ContextTokens] = p
	}
	return m
}

// presence is the Presence of something held by base, next or both.
func presence(inBase, inNext bool) Presence {
	switch {
	case inBase && inNext:
		return inBoth
	case inBase:
		return onlyInBase
	case inNext:
		return onlyInNext
	}
	return ""
}

// Cell returns the comparison of the cell at context × concurrency, or
// nil. It looks through every cell: to look up many, index them once.
func (c *Comparison) Cell(context, concurrency int) *CellChange {
	for i := range c.Cells {
		if x := &c.Cells[i]; x.ContextTokens == context && x.Concurrency == concurrency {
			return x
		}
	}
	return nil
}

// writeJSON writes the comparison as an indented JSON document.
func (c *Comparison) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return fmt.Errorf("matrix: write comparison JSON: %w", err)
	}
	return nil
}
