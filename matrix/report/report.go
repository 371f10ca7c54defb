package report

import (
	fig "github.com/llmload/llmload/internal/figure"
	"github.com/llmload/llmload/matrix"

	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/llmload/llmload/internal/enginelabel"
	"github.com/llmload/llmload/internal/errorkinds"
	"github.com/llmload/llmload/internal/redact"
	"github.com/llmload/llmload/internal/thousands"
	"github.com/llmload/llmload/metrics"
)

// What the reports say about the marks and the numbers, in the seed page's
// words where it has them; the statuses' notes are in statusText.
const (
	notePartial = "*: interrupted before its window ended; the numbers cover the part that ran."
	// notePartialShard replaces notePartial when a partial cell lost a
	// shard of a sharded run.
	notePartialShard = "*: interrupted before its window ended, or a shard of the run was lost; the numbers cover the part that ran."
	noteClient       = "†: the client, not the server, may have limited this cell's numbers."
	noteNoisy        = "~: noisy: the numbers are mostly noise (the total's interval spans more than ±25% of it, or fewer than 3 streams decoded in the window); a longer -duration narrows it."
	noteTTFT         = "TTFT is measured after the benchmark warms the server's prompt cache, so it mostly excludes prefill."
	noteCounted      = "(N counted): the server counted N prompt tokens for this context, more than 1% off its label."
	noteMedians      = "Latencies are medians. Total tok/s is output across all simultaneous requests."
)

// longHead is the head of the "All measurements" table, the seed page's
// columns.
var longHead = []string{"Phase", "Context", "Requests at once", "Status", "Total tok/s", "Per request tok/s",
	"TTFT", "Time between tokens", "Average active requests", "Completed requests", "Output tokens", "Measured for"}

// report is what every report of a run shows, gathered once from its
// [matrix.Results]. The renderers ([Table], [Markdown],
// [CSV] and [HTML]) only lay it out.
type report struct {
	r       *matrix.Results
	header  reportHeader
	grid    grid[matrix.Cell]
	cells   []*matrix.Cell // the grid's cells in grid order
	prefill []prefillRow   // by context
	rows    []gridRow      // the decode grid's rows, when it is drawn
	legend  []string       // the footnotes under the grid
	notes   []string       // the server's notes, then a line for each cell worth one
	long    [][]string     // the "All measurements" table: the prefill rows, then the cells
	head    []string       // its head: longHead, and the energy's columns where a cell has them
	counted bool           // a prompt was counted more than 1% off its label
	energy  energyCols     // the energy's columns the reports show
	split   bool           // a cell has the TTFT split by the server's timings: its columns show
}

// prefillRow is a row of the prefill table as the reports show it.
type prefillRow struct {
	matrix.Prefill
	label    string        // "16K", or "16K (17,010 counted)"
	status   matrix.Status // Valid when measured; see prefillStatus
	measured bool
}

// figures are the row's prompt tok/s and TTFT, or its status and "—".
func (p prefillRow) figures() (rate, ttft string) {
	if p.measured {
		return fmtPrefillRate(p.PromptTokensPerSec), fmtTTFT(p.TTFT)
	}
	return shownOf(p.status), "—"
}

// why is the reason the row has no measurement, as the server or the run
// gave it.
func (p prefillRow) why() string {
	if p.Reason != "" {
		return p.Reason
	}
	return p.Error
}

// gridRow is one context's row of a drawn grid: its label and each
// cell's lines.
type gridRow struct {
	label string
	cells [][]string
}

// report gathers what the reports of r show.
func (d doc) report() *report {
	r := d.InServerTime()
	rp := &report{r: r, grid: newGrid(r.Cells, cellPlace, r.Spec.Contexts, r.Spec.Concurrency)}
	rp.cells = rp.grid.ordered()
	for _, p := range sortedPrefill(r.Prefill) {
		rp.prefill = append(rp.prefill, prefillRow{Prefill: p, label: promptLabel(p.ContextTokens, p.PromptTokens, p.ImageTokens),
			status: prefillStatus(p), measured: prefillMeasured(p)})
	}
	for _, p := range r.Prefill {
		rp.counted = rp.counted || offLabel(p.ContextTokens, p.PromptTokens)
	}
	for _, c := range r.Cells {
		rp.counted = rp.counted || offLabel(c.ContextTokens, c.PromptTokens)
	}
	rp.header = rp.newHeader()
	if len(rp.grid.contexts) > 0 && rp.grid.drawn() {
		for _, ctx := range rp.grid.contexts {
			prompt := rp.rowTokens(ctx, func(c *matrix.Cell) int { return c.PromptTokens })
			images := rp.rowTokens(ctx, func(c *matrix.Cell) int { return c.ImageTokens })
			row := gridRow{label: promptLabel(ctx, prompt, images)}
			for _, n := range rp.grid.concurrency {
				row.cells = append(row.cells, gridLines(rp.grid.at(ctx, n)))
			}
			rp.rows = append(rp.rows, row)
		}
	}
	rp.legend = rp.newLegend()
	rp.notes = append(slices.Clone(rp.header.Notes), rp.cellNotes()...)
	rp.energy = energyColumns(rp.cells)
	rp.split = slices.ContainsFunc(rp.cells, func(c *matrix.Cell) bool { return c.Measurement != nil && c.Measurement.SplitRequests > 0 })
	rp.head = append(slices.Clone(longHead), rp.energy.head()...)
	if rp.split {
		rp.head = append(rp.head, splitHead...)
	}
	for _, p := range rp.prefill {
		row := []string{"Prefill", p.label, "1", shownOf(p.status), "—", "—", "—", "—", "—", "—", "—", "—"}
		if p.measured {
			row[4], row[6], row[9] = fmtRate(p.PromptTokensPerSec), fmtTTFT(p.TTFT), "1"
		}
		row = append(row, rp.energy.row(nil)...)
		rp.long = append(rp.long, append(row, rp.splitRow(nil)...))
	}
	for _, c := range rp.cells {
		row := longCellRow(c)
		row = append(row, rp.energy.row(energyOf(c))...)
		rp.long = append(rp.long, append(row, rp.splitRow(c.Measurement)...))
	}
	return rp
}

// energyOf returns a cell's energy, or nil.
func energyOf(c *matrix.Cell) *metrics.Energy {
	if c.Measurement == nil {
		return nil
	}
	return c.Measurement.Energy
}

// splitHead is the head of the TTFT split's columns in the "All
// measurements" table: the medians of the server's queue, its prefill and
// the rest.
var splitHead = []string{"Server queue", "Server prefill", "Network and client"}

// splitRow is a row's TTFT split columns, "—" where m has none; the rest
// says whose it was when it was large ("12.0 ms (network)").
func (rp *report) splitRow(m *matrix.Measurement) []string {
	if !rp.split {
		return nil
	}
	if m == nil || m.SplitRequests == 0 {
		return []string{"—", "—", "—"}
	}
	rest := fmtTBT(m.Rest.P50)
	if m.OutsideServer != "" {
		rest += " (" + m.OutsideServer + ")"
	}
	return []string{fmtTBT(m.ServerQueue.P50), fmtTBT(m.ServerPrefill.P50), rest}
}

// splitText says a cell's TTFT split in a line: "TTFT by the server's
// timings of 480 requests: queue p50 0.1 ms, p99 2.0 ms · prefill … ·
// network and client …".
func splitText(m *matrix.Measurement) string {
	pq := func(q matrix.Quantiles) string {
		return "p50 " + fmtTBT(q.P50) + ", p90 " + fmtTBT(q.P90) + ", p99 " + fmtTBT(q.P99)
	}
	s := "TTFT by the server's timings of " + fig.Plural(m.SplitRequests, "request", "requests") + ": queue " + pq(m.ServerQueue) +
		" · prefill " + pq(m.ServerPrefill) + " · network and client " + pq(m.Rest)
	if m.OutsideServer != "" {
		s += " — much of it outside the server: the " + m.OutsideServer + "'s"
	}
	return s
}

// grid is a decode grid in display order, contexts ascending down and
// concurrency ascending across, with its cells (of a run, or of a
// comparison) by place.
type grid[C any] struct {
	contexts    []int
	concurrency []int
	cells       map[[2]int]*C
}

// newGrid lays out cells, placed by place. The axes are the union of
// contexts and concurrency and the cells' own places, so a partial run
// still shows the whole planned grid; a later cell at the same place wins.
func newGrid[C any](cells []C, place func(*C) [2]int, contexts, concurrency []int) grid[C] {
	g := grid[C]{cells: make(map[[2]int]*C, len(cells))}
	ctxs, ns := slices.Clone(contexts), slices.Clone(concurrency)
	for i := range cells {
		at := place(&cells[i])
		g.cells[at] = &cells[i]
		ctxs, ns = append(ctxs, at[0]), append(ns, at[1])
	}
	slices.Sort(ctxs)
	slices.Sort(ns)
	g.contexts, g.concurrency = slices.Compact(ctxs), slices.Compact(ns)
	if len(g.contexts) == 0 || len(g.concurrency) == 0 {
		g.contexts, g.concurrency = nil, nil // no grid without both axes
	}
	return g
}

// place is where c goes in the grid.
func cellPlace(c *matrix.Cell) [2]int { return [2]int{c.ContextTokens, c.Concurrency} }

// at returns the cell at context × concurrency, or nil.
func (g grid[C]) at(ctx, n int) *C { return g.cells[[2]int{ctx, n}] }

// size is the number of places in the grid.
func (g grid[C]) size() int { return len(g.contexts) * len(g.concurrency) }

// drawn reports whether the grid is drawn (see gridFits).
func (g grid[C]) drawn() bool { return gridFits(len(g.contexts), len(g.concurrency), len(g.cells)) }

// sparseNote says why the grid is not drawn.
func (g grid[C]) sparseNote() string {
	return fmt.Sprintf("The %s span %s × %s: too sparse for a grid, so every cell is listed instead.",
		fig.Plural(len(g.cells), "cell", "cells"), fig.Plural(len(g.contexts), "context", "contexts"),
		fig.Plural(len(g.concurrency), "concurrency level", "concurrency levels"))
}

// ordered returns the cells in grid order: by context, then concurrency.
func (g grid[C]) ordered() []*C {
	keys := slices.SortedFunc(maps.Keys(g.cells), func(a, b [2]int) int {
		if c := cmp.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return cmp.Compare(a[1], b[1])
	})
	out := make([]*C, len(keys))
	for i, k := range keys {
		out[i] = g.cells[k]
	}
	return out
}

// maxSparseGrid is the most places a grid may have beyond four for every
// cell it holds.
const maxSparseGrid = 1024

// gridFits reports whether a grid of contexts × concurrency is worth
// drawing for cells cells: not when it would be mostly empty, as with
// cells that share no context or concurrency level, whose grid grows as
// the square of their number. Reports then list the cells instead, so
// their work stays linear in the cells that exist.
func gridFits(contexts, concurrency, cells int) bool {
	if contexts == 0 || concurrency == 0 {
		return true
	}
	if contexts > (maxSparseGrid+4*cells)/concurrency {
		return false
	}
	return contexts*concurrency <= maxSparseGrid+4*cells
}

// statusCounts counts the grid's cells by status; places in the grid
// without a cell in the results count as StatusUnknown.
func (rp *report) statusCounts() map[matrix.Status]int {
	m := map[matrix.Status]int{}
	for _, c := range rp.grid.cells {
		m[c.Status]++
	}
	if missing := rp.grid.size() - len(rp.grid.cells); missing > 0 {
		m[matrix.StatusUnknown] += missing
	}
	return m
}

// rowTokens returns a count the server gave for a context row's prompt,
// from the first cell that has it, or 0: every cell of a row sends the
// same prompt. count reads it from a cell: its prompt tokens, or those of
// them that were the images'.
func (rp *report) rowTokens(ctx int, count func(*matrix.Cell) int) int {
	for _, n := range rp.grid.concurrency {
		if c := rp.grid.at(ctx, n); c != nil && count(c) > 0 {
			return count(c)
		}
	}
	return 0
}

// offLabel reports whether a prompt of counted tokens is more than 1% off
// its label; a context-0 row (a short prompt) never is.
func offLabel(label, counted int) bool {
	return label > 0 && counted > 0 && abs(counted-label)*100 > label
}

// promptLabel is sizeLabel, with the prompt tokens that were the images'
// where there were images: "16K (256 image)".
func promptLabel(label, counted, images int) string {
	switch {
	case images <= 0:
		return sizeLabel(label, counted)
	case offLabel(label, counted):
		return formatTokens(label) + " (" + fmtInt(counted) + " counted, " + fmtInt(images) + " image)"
	}
	return formatTokens(label) + " (" + fmtInt(images) + " image)"
}

// sizeLabel names a context as the reports do: its label ("16K"), and the
// size the server counted where that is more than 1% off ("16K (17,010
// counted)").
func sizeLabel(label, counted int) string {
	if offLabel(label, counted) {
		return formatTokens(label) + " (" + fmtInt(counted) + " counted)"
	}
	return formatTokens(label)
}

// sortedPrefill returns the prefill rows by context.
func sortedPrefill(p []matrix.Prefill) []matrix.Prefill {
	out := slices.Clone(p)
	slices.SortStableFunc(out, func(a, b matrix.Prefill) int { return cmp.Compare(a.ContextTokens, b.ContextTokens) })
	return out
}

// prefillMeasured reports whether a prefill row has a measurement.
func prefillMeasured(p matrix.Prefill) bool {
	return p.Error == "" && p.PromptTokensPerSec > 0 && (p.Status == matrix.Valid || p.Status == matrix.StatusUnknown)
}

// prefillStatus is a prefill row's status as the reports show it: Valid
// when it has a measurement, Failed for a row with an error and no status
// of its own, else its status.
func prefillStatus(p matrix.Prefill) matrix.Status {
	switch {
	case prefillMeasured(p):
		return matrix.Valid
	case p.Status == matrix.StatusUnknown && p.Error != "":
		return matrix.Failed
	}
	return p.Status
}

// statusWords is a cell's status as the grid shows it.
func statusWords(c *matrix.Cell) string {
	if c == nil {
		return shownOf(matrix.StatusUnknown)
	}
	return shownOf(c.Status)
}

// hasRates reports whether a cell produced output, so that its rates and
// latencies mean something. A cell that ran and starved has a measurement
// (its window, its average active requests) but no rates.
func hasRates(c *matrix.Cell) bool {
	return c != nil && c.Measurement != nil && c.Measurement.OutputTokensPerSec > 0
}

// marks returns the footnote marks of a cell's numbers.
func marks(c *matrix.Cell) string {
	if c == nil || c.Measurement == nil {
		return ""
	}
	m, s := c.Measurement, ""
	if m.Partial {
		s += "*"
	}
	if m.ClientLimited {
		s += "†"
	}
	if m.Noisy != "" {
		s += "~"
	}
	return s
}

// gridLines is what a decode grid cell shows, a line each, as on the seed
// page: the total tok/s (with its footnote marks), the status words when
// the cell is not Valid, and the TTFT; or only the status words for a cell
// without output.
func gridLines(c *matrix.Cell) []string {
	if !hasRates(c) {
		return []string{statusWords(c)}
	}
	lines := []string{fmtRate(c.Measurement.OutputTokensPerSec) + marks(c)}
	if c.Status != matrix.Valid {
		lines = append(lines, statusWords(c))
	}
	if c.Measurement.TTFT.P50 > 0 {
		lines = append(lines, fmtTTFT(c.Measurement.TTFT.P50)+" TTFT")
	}
	if c.Measurement.TTFO.P50 > 0 {
		lines = append(lines, fmtTTFT(c.Measurement.TTFO.P50)+" TTFO")
	}
	if e := c.Measurement.Energy; e != nil && e.TokensPerJoule > 0 {
		lines = append(lines, fig.Significant(e.TokensPerJoule)+" tok/J")
	}
	return lines
}

// energyCols says which of the energy's columns the reports show: none
// when no cell's GPUs were read, the cost's only when one was given.
type energyCols struct{ shown, cost bool }

func energyColumns(cells []*matrix.Cell) energyCols {
	var ec energyCols
	for _, c := range cells {
		if c.Measurement != nil && c.Measurement.Energy != nil {
			ec.shown = true
			ec.cost = ec.cost || c.Measurement.Energy.HourlyCost > 0
		}
	}
	return ec
}

// energyColumn is one of the energy's columns: its name in the reports'
// tables and in CSV, and its figure from a cell's energy as each writes
// it.
type energyColumn struct {
	head, csvHead string
	text, csv     func(*metrics.Energy) string
}

// energyColumnList is the energy's columns in order; the cost's, last, is
// shown only when a cost was given.
var energyColumnList = []energyColumn{
	{"GPU energy", "gpu_energy_j",
		func(e *metrics.Energy) string { return thousands.Float(e.Joules, 0) + " J" },
		func(e *metrics.Energy) string { return csvFloat(e.Joules, 1) }},
	{"Mean GPU power", "gpu_mean_w",
		func(e *metrics.Energy) string { return thousands.Float(e.MeanWatts, 1) + " W" },
		func(e *metrics.Energy) string { return csvFloat(e.MeanWatts, 1) }},
	{"Tokens per joule", "tokens_per_joule",
		func(e *metrics.Energy) string { return dashUnlessPositive(e.TokensPerJoule, fig.Significant) },
		func(e *metrics.Energy) string { return csvPositive(e.TokensPerJoule, 4) }},
	{"Joules per token", "joules_per_token",
		func(e *metrics.Energy) string {
			return dashUnlessPositive(e.JoulesPerToken, func(v float64) string { return fig.Significant(v) + " J" })
		},
		func(e *metrics.Energy) string { return csvPositive(e.JoulesPerToken, 4) }},
	{"$ per million tokens", "usd_per_million_tokens",
		func(e *metrics.Energy) string {
			return dashUnlessPositive(e.DollarsPerMillionTokens, func(v float64) string { return "$" + thousands.Float(v, 2) })
		},
		func(e *metrics.Energy) string { return csvPositive(e.DollarsPerMillionTokens, 4) }},
}

// each returns f of each column shown.
func (ec energyCols) each(f func(energyColumn) string) []string {
	cols := energyColumnList
	switch {
	case !ec.shown:
		return nil
	case !ec.cost:
		cols = cols[:len(cols)-1]
	}
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = f(c)
	}
	return out
}

// head is the energy's columns in the "All measurements" table.
func (ec energyCols) head() []string {
	return ec.each(func(c energyColumn) string { return c.head })
}

// row is a row's energy columns, "—" where e is nil or has no figure.
func (ec energyCols) row(e *metrics.Energy) []string {
	return ec.each(func(c energyColumn) string { return figure(e, c.text, "—") })
}

// csvHead is the energy's CSV columns, when a cell has them.
func (ec energyCols) csvHead() []string {
	return ec.each(func(c energyColumn) string { return c.csvHead })
}

// csvRow is a cell's energy columns, empty where e is nil.
func (ec energyCols) csvRow(e *metrics.Energy) []string {
	return ec.each(func(c energyColumn) string { return figure(e, c.csv, "") })
}

// figure returns f(e), or none where e is nil: a row with no energy.
func figure(e *metrics.Energy, f func(*metrics.Energy) string, none string) string {
	if e == nil {
		return none
	}
	return f(e)
}

// longCellRow is one decode cell's row of the "All measurements" table.
func longCellRow(c *matrix.Cell) []string {
	row := []string{"Sustained decode", promptLabel(c.ContextTokens, c.PromptTokens, c.ImageTokens), strconv.Itoa(c.Concurrency),
		statusWords(c), "—", "—", "—", "—", "—", "—", "—", "—"}
	m := c.Measurement
	if m == nil {
		return row
	}
	if hasRates(c) {
		row[4] = fmtRate(m.OutputTokensPerSec) + marks(c)
		row[5] = dashUnlessPositive(m.PerRequestTokensPerSec, fmtRate)
		row[6] = dashUnlessPositive(m.TTFT.P50, fmtTTFT)
		row[7] = dashUnlessPositive(m.TBT.P50, fmtTBT)
	}
	row[8] = thousands.Float(m.AvgActive, 2)
	row[9] = fmtInt(m.Completed)
	row[10] = fmtInt(m.OutputTokens)
	row[11] = thousands.Float(m.MeasuredS, 1) + " s"
	return row
}

// dashUnlessPositive formats v, or "—" when it is not positive.
func dashUnlessPositive(v float64, f func(float64) string) string {
	if v > 0 {
		return f(v)
	}
	return "—"
}

// reportHeader holds the facts every report opens with.
type reportHeader struct {
	Title     string   // "Speed test matrix"
	Model     string   // model name, or "unknown model"
	Server    string   // "vllm · http://127.0.0.1:8000/v1"
	Simulated string   // the simulator's note, or ""
	Shape     string   // "6 contexts (0–248K) × 8 concurrency levels (1–128) · prefill at 8K, …"
	Run       string   // "30 s per cell · max output 8,192 tokens · started …"
	Limits    string   // "1,234 KV tokens · …", or ""
	Progress  string   // "incomplete: 12 of 48 cells decided", or ""
	Notes     []string // the server's notes
}

// facts are the header's lines under the title: the matrix's shape, the
// run, the server's limits and the run's progress, where known.
func (h reportHeader) facts() []string {
	var out []string
	for _, s := range []string{h.Shape, h.Run, h.limits(), h.Progress} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// limits is the server's limits as a line of the header, or "".
func (h reportHeader) limits() string {
	if h.Limits == "" {
		return ""
	}
	return "capacity: " + h.Limits
}

// newHeader gathers the facts of the run for a report.
func (rp *report) newHeader() reportHeader {
	r, g := rp.r, rp.grid
	h := reportHeader{Title: "Speed test matrix", Model: cleanText(r.Server.Model)}
	if h.Model == "" {
		h.Model = cleanText(r.Spec.Model)
	}
	if h.Model == "" {
		h.Model = "unknown model"
	}
	var srv []string
	if e := cleanText(enginelabel.Of(string(r.Server.Engine), r.Server.Version)); e != "" {
		srv = append(srv, e) // "vllm 0.10.1", as a comparison names it
	}
	url := cleanText(redact.URL(r.Server.URL))
	if url == "" {
		url = cleanText(redact.URL(r.Spec.URL))
	}
	if url != "" {
		srv = append(srv, url)
	}
	h.Server = strings.Join(srv, " · ")
	if r.Server.Simulated {
		h.Simulated = simulatedNote(r.Server.Speed)
	}

	var shape []string
	if len(g.contexts) > 0 {
		// "6 contexts (0–248K)", or "1 context (8K)".
		span := func(lo, hi string) string {
			if lo == hi {
				return lo
			}
			return lo + "–" + hi
		}
		shape = append(shape, fmt.Sprintf("%s (%s) × %s (%s)",
			fig.Plural(len(g.contexts), "context", "contexts"),
			span(formatTokens(g.contexts[0]), formatTokens(g.contexts[len(g.contexts)-1])),
			fig.Plural(len(g.concurrency), "concurrency level", "concurrency levels"),
			span(strconv.Itoa(g.concurrency[0]), strconv.Itoa(g.concurrency[len(g.concurrency)-1]))))
	}
	pre := r.Spec.Prefill
	if len(pre) == 0 {
		for _, p := range r.Prefill {
			pre = append(pre, p.ContextTokens)
		}
	}
	if len(pre) > 0 {
		shape = append(shape, "prefill at "+tokenList(pre))
	}
	h.Shape = strings.Join(shape, " · ")

	var run []string
	if r.Spec.Duration > 0 {
		run = append(run, fmtSeconds(r.Spec.Duration)+" per cell")
	}
	if r.Spec.MaxTokens > 0 {
		run = append(run, "max output "+fmtInt(r.Spec.MaxTokens)+" tokens")
	}
	if !r.Started.IsZero() {
		run = append(run, "started "+r.Started.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if modes := readModes(r.Cells); modes != "" {
		run = append(run, "bodies read by "+modes)
	}
	h.Run = strings.Join(run, " · ")

	if l := r.Server.Limits; l.KVTokens > 0 || l.MaxRunning > 0 || l.MaxModelLen > 0 {
		var lim []string
		if l.KVTokens > 0 {
			lim = append(lim, fmtInt(l.KVTokens)+" KV tokens")
		}
		if l.MaxRunning > 0 {
			lim = append(lim, fmtInt(l.MaxRunning)+" requests at once")
		}
		if l.MaxModelLen > 0 {
			lim = append(lim, "max_model_len "+fmtInt(l.MaxModelLen))
		}
		h.Limits = strings.Join(lim, " · ")
		if s := cleanText(l.Source); s != "" {
			h.Limits += " (from " + s + ")"
		}
	}
	if !r.Complete {
		total := g.size()
		h.Progress = fmt.Sprintf("incomplete: %d of %d cells decided", total-rp.statusCounts()[matrix.StatusUnknown], total)
	}
	for _, n := range r.Server.Notes {
		if n = cleanText(n); n != "" {
			h.Notes = append(h.Notes, n)
		}
	}
	return h
}

// simulatedNote says that the numbers came from llmload's simulator.
func simulatedNote(speed float64) string {
	if speed > 0 && speed != 1 {
		return "simulated by llmload at " + fmtSpeed(speed) + "× speed; times are the simulated server's own"
	}
	return "simulated by llmload"
}

// newLegend returns the footnotes that explain the statuses and marks
// present in the grid, then the TTFT note.
func (rp *report) newLegend() []string {
	r := rp.r
	counts := rp.statusCounts()
	var out []string
	for _, s := range reportOrder {
		if n := statusText[s].legend; n != "" && counts[s] > 0 {
			out = append(out, n)
		}
	}
	var partial, lostShard, client, noise bool
	for _, c := range r.Cells {
		if m := c.Measurement; m != nil {
			partial = partial || m.Partial
			lostShard = lostShard || (m.Partial && lostShards(m) > 0)
			client = client || m.ClientLimited
			noise = noise || m.Noisy != ""
		}
	}
	switch {
	case lostShard:
		out = append(out, notePartialShard)
	case partial:
		out = append(out, notePartial)
	}
	if client {
		out = append(out, noteClient)
	}
	if noise {
		out = append(out, noteNoisy)
	}
	if len(r.Cells) > 0 {
		out = append(out, noteTTFT)
	}
	if rp.counted {
		out = append(out, noteCounted)
	}
	return out
}

// cellNotes returns one line for each cell worth a remark: measured cells
// that are not Valid, had errors, were interrupted or limited by the
// client, and failed prefill measurements. Cells predicted over capacity
// and never sent are explained by the legend.
func (rp *report) cellNotes() []string {
	var out []string
	for _, p := range rp.prefill {
		if why := p.why(); p.Status != matrix.Valid && why != "" {
			s := fmt.Sprintf("Prefill %s: %s — %s", p.label, shownOf(p.status), cleanText(why))
			if p.Errors > 0 {
				s += "; " + failedOf(p.Errors, p.Requests) + " (" + errorkinds.Format(p.ErrorKinds) + ")"
			}
			out = append(out, s)
		}
	}
	for _, c := range rp.cells {
		if n := cellNote(c); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// failedOf is "3 of 20 requests failed".
func failedOf(errors, requests int) string {
	return fmtInt(errors) + " of " + fmtInt(max(requests, errors)) + " requests failed"
}

// cellNote is the remark on one cell, or "".
func cellNote(c *matrix.Cell) string {
	m := c.Measurement
	if m == nil {
		// Cells predicted over capacity are explained by the legend; cells
		// that were sent and found over capacity or failed say why.
		if c.Status == matrix.Failed || (c.Status != matrix.OverCapacity && c.Reason != "") || (c.Status == matrix.OverCapacity && c.PromptTokens > 0) {
			s := cellLabel(c) + ": " + statusWords(c) + reasonSuffix(c.Reason)
			if c.Errors > 0 {
				s += "; " + failedOf(c.Errors, c.Requests) + " (" + errorkinds.Format(c.ErrorKinds) + ")"
			}
			return s
		}
		return ""
	}
	if c.Status == matrix.Valid && c.Errors == 0 && !m.Partial && !m.ClientLimited && m.Noisy == "" && len(m.Notes) == 0 {
		return ""
	}
	var parts []string
	if c.Errors > 0 {
		s := failedOf(c.Errors, c.Requests)
		if k := errorkinds.Format(c.ErrorKinds); k != "" {
			s += " (" + k + ")"
		}
		parts = append(parts, s)
	}
	if m.Partial {
		parts = append(parts, partialWords(m))
	}
	if m.ClientLimited {
		s := "the client may have limited it"
		if why := cleanText(m.Client.Reason); why != "" {
			s += ": " + why
		}
		parts = append(parts, s)
	}
	if why := cleanText(m.Noisy); why != "" {
		parts = append(parts, "noisy: "+why)
	}
	for _, n := range m.Notes {
		if n = cleanText(n); n != "" {
			parts = append(parts, n)
		}
	}
	s := cellLabel(c) + ": " + statusWords(c) + reasonSuffix(c.Reason)
	if len(parts) > 0 {
		s += "; " + strings.Join(parts, "; ")
	}
	return s
}

// cellLabel names a cell: "128K × 2".
func cellLabel(c *matrix.Cell) string { return placeLabel(c.ContextTokens, c.Concurrency) }

// placeLabel names a place in the grid: "128K × 2".
func placeLabel(ctx, n int) string { return formatTokens(ctx) + " × " + strconv.Itoa(n) }

// reasonSuffix is " — reason", or "".
func reasonSuffix(reason string) string {
	if reason = cleanText(reason); reason != "" {
		return " — " + reason
	}
	return ""
}

// lostShards counts the shards a cell of a sharded run lost.
func lostShards(m *matrix.Measurement) int {
	n := 0
	for _, s := range m.Shards {
		if s.Lost != "" {
			n++
		}
	}
	return n
}

// partialWords says why a partial cell is partial.
func partialWords(m *matrix.Measurement) string {
	if n := lostShards(m); n > 0 {
		return fmt.Sprintf("partial: %s lost", fig.Plural(n, "shard", "shards"))
	}
	return "interrupted before its window ended"
}

// readModes names the ways the cells' bodies were read (see
// [matrix.Measurement].ReadMode), each once, in the order the cells first used
// them.
func readModes(cells []matrix.Cell) string {
	var modes []string
	for i := range cells {
		if m := cells[i].Measurement; m != nil {
			if mode := cleanText(m.ReadMode); mode != "" && !slices.Contains(modes, mode) {
				modes = append(modes, mode)
			}
		}
	}
	return strings.Join(modes, "; ")
}
