package matrix

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// What the reports say about the statuses and the numbers, in the seed
// page's words where it has them.
const (
	noteQueued = "Requests queued: the server could not run all requests at once, so some waited in a queue."
	noteOver   = "Over capacity: not run because this many requests at this context would exceed the server's " +
		"KV cache or limits, or sent and cut or refused for length, or starved (no output)."
	noteFailed  = "Failed: more requests failed than the cell can absorb."
	noteNotRun  = "Not run: the run ended before this cell was decided."
	notePartial = "*: interrupted before its window ended; the numbers cover the part that ran."
	// notePartialShard replaces notePartial when a partial cell lost a
	// shard of a sharded run.
	notePartialShard = "*: interrupted before its window ended, or a shard of the run was lost; the numbers cover the part that ran."
	noteClient       = "†: the client, not the server, may have limited this cell's numbers."
	noteTTFT         = "TTFT is measured after the benchmark warms the server's prompt cache, so it mostly excludes prefill."
	noteCounted      = "(N counted): the server counted N prompt tokens for this context, more than 1% off its label."
	noteMedians      = "Latencies are medians. Total tok/s is output across all simultaneous requests."
	notRunWords      = "Not run"
)

// reportGrid is the decode grid in display order: contexts ascending down,
// concurrency ascending across.
type reportGrid struct {
	contexts    []int
	concurrency []int
	cells       map[[2]int]*Cell
}

// newReportGrid lays out r's cells. The axes are the union of the spec's
// lists and the cells' own values, so a partial run still shows the whole
// planned grid.
func newReportGrid(r *Results) reportGrid {
	g := reportGrid{cells: make(map[[2]int]*Cell, len(r.Cells))}
	ctxs := slices.Clone(r.Spec.Contexts)
	ns := slices.Clone(r.Spec.Concurrency)
	for i := range r.Cells {
		c := &r.Cells[i]
		g.cells[[2]int{c.ContextTokens, c.Concurrency}] = c
		ctxs = append(ctxs, c.ContextTokens)
		ns = append(ns, c.Concurrency)
	}
	slices.Sort(ctxs)
	slices.Sort(ns)
	g.contexts = slices.Compact(ctxs)
	g.concurrency = slices.Compact(ns)
	if len(g.contexts) == 0 || len(g.concurrency) == 0 {
		g.contexts, g.concurrency = nil, nil // no grid without both axes
	}
	return g
}

// promptTokens returns the prompt size the server counted for a context
// row, or 0: every cell of a row sends the same prompt.
func (g reportGrid) promptTokens(ctx int) int {
	for _, n := range g.concurrency {
		if c := g.at(ctx, n); c != nil && c.PromptTokens > 0 {
			return c.PromptTokens
		}
	}
	return 0
}

// offLabel reports whether a prompt of counted tokens is more than 1% off
// its label; a context-0 row (a short prompt) never is.
func offLabel(label, counted int) bool {
	return label > 0 && counted > 0 && abs(counted-label)*100 > label
}

// sizeLabel names a context as the reports do: its label ("16K"), and the
// size the server counted where that is more than 1% off ("16K (17,010
// counted)").
func sizeLabel(label, counted int) string {
	if offLabel(label, counted) {
		return FormatTokens(label) + " (" + fmtInt(counted) + " counted)"
	}
	return FormatTokens(label)
}

// rowLabel is sizeLabel for a row of the decode grid.
func (g reportGrid) rowLabel(ctx int) string { return sizeLabel(ctx, g.promptTokens(ctx)) }

// at returns the cell at context × concurrency, or nil.
func (g reportGrid) at(ctx, n int) *Cell { return g.cells[[2]int{ctx, n}] }

// ordered returns the cells in grid order: by context, then concurrency.
func (g reportGrid) ordered() []*Cell {
	out := slices.Collect(maps.Values(g.cells))
	slices.SortFunc(out, func(a, b *Cell) int {
		if c := cmp.Compare(a.ContextTokens, b.ContextTokens); c != 0 {
			return c
		}
		return cmp.Compare(a.Concurrency, b.Concurrency)
	})
	return out
}

// statusCounts counts the grid's cells by status; places in the grid
// without a cell in the results count as StatusUnknown.
func (g reportGrid) statusCounts() map[Status]int {
	m := map[Status]int{}
	for _, c := range g.cells {
		m[c.Status]++
	}
	if missing := g.size() - len(g.cells); missing > 0 {
		m[StatusUnknown] += missing
	}
	return m
}

// size is the number of places in the grid.
func (g reportGrid) size() int { return len(g.contexts) * len(g.concurrency) }

// drawn reports whether the grid is drawn (see gridFits).
func (g reportGrid) drawn() bool { return gridFits(len(g.contexts), len(g.concurrency), len(g.cells)) }

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

// sortedPrefill returns the prefill rows by context.
func sortedPrefill(p []Prefill) []Prefill {
	out := slices.Clone(p)
	slices.SortStableFunc(out, func(a, b Prefill) int { return cmp.Compare(a.ContextTokens, b.ContextTokens) })
	return out
}

// prefillMeasured reports whether a prefill row has a measurement.
func prefillMeasured(p Prefill) bool {
	return p.Error == "" && p.PromptTokS > 0 && (p.Status == Valid || p.Status == StatusUnknown)
}

// prefillStatusWords is a prefill row's status as the reports show it.
func prefillStatusWords(p Prefill) string {
	switch {
	case prefillMeasured(p):
		return Valid.String()
	case p.Status == StatusUnknown && p.Error == "":
		return notRunWords
	case p.Status == StatusUnknown:
		return Failed.String()
	}
	return p.Status.String()
}

// statusWords is a cell's status as the grid shows it.
func statusWords(c *Cell) string {
	if c == nil || c.Status == StatusUnknown {
		return notRunWords
	}
	return c.Status.String()
}

// hasRates reports whether a cell produced output, so that its rates and
// latencies mean something. A cell that ran and starved has a measurement
// (its window, its average active requests) but no rates.
func hasRates(c *Cell) bool { return c != nil && c.Measurement != nil && c.TotalTokS > 0 }

// marks returns the footnote marks of a cell's numbers.
func marks(c *Cell) string {
	if c == nil || c.Measurement == nil {
		return ""
	}
	s := ""
	if c.Partial {
		s += "*"
	}
	if c.ClientLimited {
		s += "†"
	}
	return s
}

// numGroup formats v with dec decimals and thousands separators:
// 1054.66 → "1,054.7". NaN and infinities are "—".
func numGroup(v float64, dec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
		if strings.Trim(s, "0.") == "" {
			neg = false // no "-0.0"
		}
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if hasFrac {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}

// fmtRate is a tok/s figure: "1,054.7".
func fmtRate(v float64) string { return numGroup(v, 1) }

// fmtPrefillRate is a prompt tok/s figure as the seed's prefill table shows
// it: whole numbers from 1,000 up ("2,343"), one decimal below ("990.0").
func fmtPrefillRate(v float64) string {
	if v >= 999.95 {
		return numGroup(v, 0)
	}
	return numGroup(v, 1)
}

// fmtTTFT is a time to first token: "12,178 ms".
func fmtTTFT(ms float64) string { return numGroup(ms, 0) + " ms" }

// fmtTBT is a time between tokens: "12.2 ms".
func fmtTBT(ms float64) string { return numGroup(ms, 1) + " ms" }

// fmtInt is a count: "15,112".
func fmtInt(n int) string { return numGroup(float64(n), 0) }

// fmtSpeed is a speed factor: 20 → "20", 12.5 → "12.5".
func fmtSpeed(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// fmtSeconds is a duration in seconds: "30 s", "1.5 s".
func fmtSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

// tokenList is a list of token counts: "8K, 16K, 32K".
func tokenList(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = FormatTokens(n)
	}
	return strings.Join(s, ", ")
}

// plural is "1 context", "6 contexts".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// cleanText makes a string from the server or the user safe to print on a
// terminal or in a one-line cell: see [loadgen.CleanLine].
func cleanText(s string) string { return loadgen.CleanLine(s) }

// reportHeader holds the facts every report opens with.
type reportHeader struct {
	Title     string   // "Speed test matrix"
	Model     string   // model name, or "unknown model"
	Server    string   // "vllm · http://127.0.0.1:8000/v1"
	Simulated string   // the simulator's note, or ""
	Shape     string   // "6 contexts (0–248K) × 8 concurrency levels (1–128) · prefill at 8K, …"
	Run       string   // "30 s per cell · max output 8,192 tokens · started …"
	Limits    string   // "capacity: 1,234 KV tokens · …", or ""
	Progress  string   // "incomplete: 12 of 48 cells decided", or ""
	Notes     []string // the server's notes
}

// header gathers the facts of r for a report.
func (r *Results) header() reportHeader {
	h := reportHeader{Title: "Speed test matrix", Model: cleanText(r.Server.Model)}
	if h.Model == "" {
		h.Model = cleanText(r.Spec.Model)
	}
	if h.Model == "" {
		h.Model = "unknown model"
	}
	var srv []string
	if e := cleanText(r.Server.Engine); e != "" {
		srv = append(srv, e)
	}
	url := cleanText(loadgen.RedactURL(r.Server.URL))
	if url == "" {
		url = cleanText(loadgen.RedactURL(r.Spec.URL))
	}
	if url != "" {
		srv = append(srv, url)
	}
	h.Server = strings.Join(srv, " · ")
	if r.Server.Simulated {
		h.Simulated = simulatedNote(r.Server.Speed)
	}

	g := newReportGrid(r)
	var shape []string
	if len(g.contexts) > 0 {
		shape = append(shape, fmt.Sprintf("%s (%s–%s) × %s (%d–%d)",
			plural(len(g.contexts), "context", "contexts"),
			FormatTokens(g.contexts[0]), FormatTokens(g.contexts[len(g.contexts)-1]),
			plural(len(g.concurrency), "concurrency level", "concurrency levels"),
			g.concurrency[0], g.concurrency[len(g.concurrency)-1]))
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
		run = append(run, fmtSeconds(time.Duration(r.Spec.Duration))+" per cell")
	}
	if r.Spec.MaxTokens > 0 {
		run = append(run, "max output "+fmtInt(r.Spec.MaxTokens)+" tokens")
	}
	if !r.Started.IsZero() {
		run = append(run, "started "+r.Started.UTC().Format("2006-01-02 15:04 UTC"))
	}
	h.Run = strings.Join(run, " · ")

	if l := r.Server.Limits; l.Known() {
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
		h.Limits = "capacity: " + strings.Join(lim, " · ")
		if s := cleanText(l.Source); s != "" {
			h.Limits += " (from " + s + ")"
		}
	}
	if !r.Complete {
		counts := g.statusCounts()
		total := g.size()
		h.Progress = fmt.Sprintf("incomplete: %d of %d cells decided", total-counts[StatusUnknown], total)
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

// legend returns the footnotes that explain the statuses and marks present
// in the grid, then the TTFT note.
func (r *Results) legend() []string {
	g := newReportGrid(r)
	counts := g.statusCounts()
	var out []string
	if counts[RequestsQueued] > 0 {
		out = append(out, noteQueued)
	}
	if counts[OverCapacity] > 0 {
		out = append(out, noteOver)
	}
	if counts[Failed] > 0 {
		out = append(out, noteFailed)
	}
	if counts[StatusUnknown] > 0 {
		out = append(out, noteNotRun)
	}
	var partial, lostShard, client bool
	for _, c := range r.Cells {
		if c.Measurement != nil {
			partial = partial || c.Partial
			lostShard = lostShard || (c.Partial && c.lostShards() > 0)
			client = client || c.ClientLimited
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
	if len(r.Cells) > 0 {
		out = append(out, noteTTFT)
	}
	counted := false
	for _, p := range r.Prefill {
		counted = counted || offLabel(p.ContextTokens, p.PromptTokens)
	}
	for _, c := range r.Cells {
		counted = counted || offLabel(c.ContextTokens, c.PromptTokens)
	}
	if counted {
		out = append(out, noteCounted)
	}
	return out
}

// cellNotes returns one line for each cell worth a remark: measured cells
// that are not Valid, had errors, were interrupted or limited by the
// client, and failed prefill measurements. Cells predicted over capacity
// and never sent are explained by the legend.
func (r *Results) cellNotes() []string {
	var out []string
	for _, p := range sortedPrefill(r.Prefill) {
		why := p.Reason
		if why == "" {
			why = p.Error
		}
		if p.Status != Valid && why != "" {
			s := fmt.Sprintf("Prefill %s: %s — %s", sizeLabel(p.ContextTokens, p.PromptTokens), prefillStatusWords(p), cleanText(why))
			if p.Errors > 0 {
				s += fmt.Sprintf("; %s of %s requests failed (%s)", fmtInt(p.Errors), fmtInt(max(p.Requests, p.Errors)), metrics.FormatErrorKinds(p.ErrorKinds))
			}
			out = append(out, s)
		}
	}
	for _, c := range newReportGrid(r).ordered() {
		if n := cellNote(c); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// cellNote is the remark on one cell, or "".
func cellNote(c *Cell) string {
	m := c.Measurement
	if m == nil {
		// Cells predicted over capacity are explained by the legend; cells
		// that were sent and found over capacity or failed say why.
		if c.Status == Failed || (c.Status != OverCapacity && c.Reason != "") || (c.Status == OverCapacity && c.PromptTokens > 0) {
			s := cellLabel(c) + ": " + statusWords(c) + reasonSuffix(c.Reason)
			if c.Errors > 0 {
				s += fmt.Sprintf("; %s of %s requests failed (%s)", fmtInt(c.Errors), fmtInt(max(c.Requests, c.Errors)), metrics.FormatErrorKinds(c.ErrorKinds))
			}
			return s
		}
		return ""
	}
	if c.Status == Valid && c.Errors == 0 && !m.Partial && !m.ClientLimited && len(m.Notes) == 0 {
		return ""
	}
	var parts []string
	if c.Errors > 0 {
		s := fmt.Sprintf("%s of %s requests failed", fmtInt(c.Errors), fmtInt(max(c.Requests, c.Errors)))
		if k := metrics.FormatErrorKinds(c.ErrorKinds); k != "" {
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
func cellLabel(c *Cell) string {
	return FormatTokens(c.ContextTokens) + " × " + strconv.Itoa(c.Concurrency)
}

// reasonSuffix is " — reason", or "".
func reasonSuffix(reason string) string {
	if reason = cleanText(reason); reason != "" {
		return " — " + reason
	}
	return ""
}

// lostShards counts the shards a cell of a sharded run lost.
func (m *Measurement) lostShards() int {
	n := 0
	for _, s := range m.Shards {
		if s.Lost != "" {
			n++
		}
	}
	return n
}

// partialWords says why a partial cell is partial.
func partialWords(m *Measurement) string {
	if n := m.lostShards(); n > 0 {
		return fmt.Sprintf("partial: %s lost", plural(n, "shard", "shards"))
	}
	return "interrupted before its window ended"
}
