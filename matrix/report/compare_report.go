package report

import (
	fig "github.com/llmload/llmload/internal/figure"
	"github.com/llmload/llmload/matrix"

	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/llmload/llmload/internal/enginelabel"
	"github.com/llmload/llmload/internal/thousands"
)

// compareLegend explains the comparison's ratios and markers.
const compareLegend = "Ratios are next ÷ base. ▲ better, ▼ worse: by more than 5% and beyond both runs' " +
	"intervals (the spread of their requests); ~ more than 5% apart but within that noise; unmarked: within 5%. " +
	"For TTFT and time between tokens, lower is better."

// fmtRatio is a ratio with its marker: "1.12× ▲", "0.98×", or "—".
func fmtRatio(r *Ratio) string {
	if !r.compared() {
		return "—"
	}
	s := thousands.Float(r.Ratio, 2) + "×"
	if m := r.Change.mark(); m != "" {
		s += " " + m
	}
	return s
}

// fmtPair is a figure of both runs and their ratio: "81.5 → 90.1 · 1.11× ▲",
// with "—" for a side without it.
func fmtPair(r *Ratio, format func(float64) string) string {
	if r == nil {
		return "—"
	}
	side := func(v float64) string {
		if v > 0 {
			return format(v)
		}
		return "—"
	}
	s := side(r.Base) + " → " + side(r.Next)
	if r.compared() {
		s += " · " + fmtRatio(r)
	}
	return s
}

// describe is one run's line in a comparison's header.
func (i RunInfo) describe() string {
	model := cleanText(i.Server.Model)
	if model == "" {
		model = "unknown model"
	}
	var srv []string
	if e := cleanText(enginelabel.Of(string(i.Server.Engine), i.Server.Version)); e != "" {
		srv = append(srv, e)
	}
	if u := cleanText(i.Server.URL); u != "" {
		srv = append(srv, u)
	}
	s := model
	if len(srv) > 0 {
		s += " on " + strings.Join(srv, " · ")
	}
	if !i.Started.IsZero() {
		s += " · started " + i.Started.UTC().Format("2006-01-02 15:04 UTC")
	}
	if i.Server.Simulated {
		s += " (" + simulatedNote(i.Server.Speed) + ")"
	}
	if i.Runs > 1 {
		s += fmt.Sprintf(" · %d runs", i.Runs)
	}
	if !i.Complete {
		s += " · incomplete"
	}
	return s
}

// comparisonReport is what every report of a comparison shows, gathered
// once: the renderers only lay it out.
type comparisonReport struct {
	c       *Comparison
	grid    grid[CellChange]
	rows    []gridRow  // the decode grid's rows, when it is drawn
	prefill [][]string // the prefill table: context, base, next, ratio
	long    [][]string // the table of every cell
	head    []string   // its head: longCompareHead, with "Tokens per joule" before the note where a cell has it
	energy  bool       // a cell compares tokens per joule
}

// longCompareHead is the head of a comparison's table of every cell.
var longCompareHead = []string{"Context", "Requests at once", "Status", "Total tok/s", "Per request tok/s",
	"TTFT", "Time between tokens", "Note"}

// report gathers what the reports of c show.
func (c *Comparison) report() *comparisonReport {
	cr := &comparisonReport{c: c, grid: newGrid(c.Cells, (*CellChange).place, nil, nil)}
	if g := cr.grid; len(g.contexts) > 0 && g.drawn() {
		for _, ctx := range g.contexts {
			row := gridRow{label: formatTokens(ctx)}
			for _, n := range g.concurrency {
				row.cells = append(row.cells, compareLines(g.at(ctx, n)))
			}
			cr.rows = append(cr.rows, row)
		}
	}
	for _, p := range c.Prefill {
		cr.prefill = append(cr.prefill, prefillCompareRow(p))
	}
	cr.energy = slices.ContainsFunc(c.Cells, func(x CellChange) bool { return x.TokensPerJoule != nil })
	cr.head = longCompareHead
	if cr.energy {
		cr.head = slices.Insert(slices.Clone(longCompareHead), len(longCompareHead)-1, "Tokens per joule")
	}
	for _, x := range c.Cells {
		row := compareLongRow(x)
		if cr.energy {
			row = slices.Insert(row, len(row)-1, fmtPair(x.TokensPerJoule, fig.Significant))
		}
		cr.long = append(cr.long, row)
	}
	return cr
}

// place is where c goes in the grid.
func (c *CellChange) place() [2]int { return [2]int{c.ContextTokens, c.Concurrency} }

// compareLines is what a comparison grid cell shows, a line each: the
// total tok/s ratio, the TTFT ratio and a status change; or what is
// special about a cell without ratios.
func compareLines(c *CellChange) []string {
	if c == nil {
		return []string{"—"}
	}
	if !c.OutputTokensPerSec.compared() {
		if n := c.Note(); n != "" {
			return []string{n}
		}
		return []string{wordsOf(c.NextStatus)}
	}
	lines := []string{fmtRatio(c.OutputTokensPerSec)}
	if c.TTFTp50.compared() {
		lines = append(lines, "TTFT "+fmtRatio(c.TTFTp50))
	}
	if c.TokensPerJoule.compared() {
		lines = append(lines, "tok/J "+fmtRatio(c.TokensPerJoule))
	}
	if c.StatusChanged {
		lines = append(lines, c.Note())
	}
	return lines
}

// sideStatus is the status of one run's prefill row in a comparison: the
// status the run recorded where the row was not measured (a row beyond
// the server's context is Over capacity, not Failed), Valid when
// measured, Failed when not measured and nothing was recorded,
// StatusUnknown when the run lacks the row.
func sideStatus(present, measured bool, recorded matrix.Status) matrix.Status {
	if present && !measured && recorded != matrix.StatusUnknown && recorded != matrix.Valid {
		return recorded
	}
	switch {
	case !present:
		return matrix.StatusUnknown
	case measured:
		return matrix.Valid
	}
	return matrix.Failed
}

// writeTable writes the comparison as a plain-text table for a terminal:
// the two runs, the prefill table (prompt tok/s of each run and their
// ratio), and the decode grid with each cell's total tok/s ratio, its TTFT
// ratio under it and any status change. Changes beyond
// the 5% threshold are marked ▲ (better) or ▼ (worse).
func (c *Comparison) writeTable(w io.Writer) error {
	cr := c.report()
	bw := bufio.NewWriter(w)
	bw.WriteString("Speed test matrix comparison — next ÷ base\n")
	fmt.Fprintf(bw, "Base: %s\nNext: %s\n%s\n", c.Base.describe(), c.Next.describe(), compareLegend)

	if len(cr.prefill) > 0 {
		bw.WriteString("\nPrefill · prompt tok/s\n\n")
		writeAligned(bw, []string{"Context", "Base", "Next", "Ratio"}, cr.prefill, false)
	}

	switch g := cr.grid; {
	case len(g.contexts) > 0 && g.drawn():
		bw.WriteString("\nSustained decode · total tok/s ratio with the TTFT ratio under it · " +
			"rows are context length, columns are simultaneous requests\n\n")
		writeGrid(bw, g.concurrency, cr.rows)
	case len(g.contexts) > 0:
		bw.WriteString("\nSustained decode · base → next · ratio\n" + g.sparseNote() + "\n\n")
		writeAligned(bw, cr.head, cr.long, false)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("matrix: write comparison table: %w", err)
	}
	return nil
}

// prefillCompareRow is a prefill row of the comparison's tables.
func prefillCompareRow(p PrefillChange) []string {
	row := []string{formatTokens(p.ContextTokens),
		cmpStatusWords(sideStatus(p.Presence != onlyInNext, p.BaseMeasured, p.BaseStatus)),
		cmpStatusWords(sideStatus(p.Presence != onlyInBase, p.NextMeasured, p.NextStatus)), "—"}
	if r := p.PromptTokensPerSec; r != nil {
		if r.Base > 0 {
			row[1] = fmtPrefillRate(r.Base)
		}
		if r.Next > 0 {
			row[2] = fmtPrefillRate(r.Next)
		}
		row[3] = fmtRatio(r)
	}
	return row
}

// writeMarkdown writes the comparison as Markdown: the runs, the prefill
// table, the decode grid of ratios as [Table] shows it,
// and a table of every cell with both runs' figures and their ratios.
func (c *Comparison) writeMarkdown(w io.Writer) error {
	cr := c.report()
	bw := bufio.NewWriter(w)
	bw.WriteString("# Speed test matrix comparison\n\n")
	fmt.Fprintf(bw, "**Base:** %s<br>\n**Next:** %s\n\n%s\n\n",
		mdEscape(c.Base.describe()), mdEscape(c.Next.describe()), mdEscape(compareLegend))

	if len(cr.prefill) > 0 {
		bw.WriteString("## Prefill\n\nPrompt tok/s by context length.\n\n")
		bw.WriteString("| Context | Base | Next | Ratio |\n|:--|--:|--:|--:|\n")
		for _, row := range cr.prefill {
			mdRow(bw, row...)
		}
		bw.WriteString("\n")
	}

	mdDecode(bw, cr.grid, cr.rows, "Total tok/s ratio, with the TTFT ratio under it.")
	if len(cr.grid.contexts) > 0 {
		bw.WriteString("## All cells\n\nBase → next · ratio. Latencies are medians.\n\n")
		mdRow(bw, cr.head...)
		bw.WriteString("|:--|--:|:--|--:|--:|--:|--:|" + strings.Repeat("--:|", len(cr.head)-len(longCompareHead)) + ":--|\n")
		for _, row := range cr.long {
			mdRow(bw, row...)
		}
		bw.WriteString("\n")
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("matrix: write comparison Markdown: %w", err)
	}
	return nil
}

// compareLongRow is one cell's row of the comparison's long table.
func compareLongRow(x CellChange) []string {
	status := wordsOf(x.BaseStatus)
	if x.StatusChanged || x.Presence != inBoth {
		status = cmpStatusWords(x.BaseStatus) + " → " + cmpStatusWords(x.NextStatus)
	}
	return []string{formatTokens(x.ContextTokens), strconv.Itoa(x.Concurrency), status,
		fmtPair(x.OutputTokensPerSec, fmtRate), fmtPair(x.PerRequestTokensPerSec, fmtRate),
		fmtPair(x.TTFTp50, fmtTTFT), fmtPair(x.TBTp50, fmtTBT), x.Note()}
}

// cmpStatusWords is a status in a comparison, "—" when the run lacks the
// cell.
func cmpStatusWords(s matrix.Status) string {
	if s == matrix.StatusUnknown {
		return "—"
	}
	return wordsOf(s)
}

// comparisonCSVHeader is the header of [CSV]'s table.
var comparisonCSVHeader = []string{
	"phase", "context_tokens", "concurrency", "presence", "base_status", "next_status",
	"base_total_tok_s", "next_total_tok_s", "total_tok_s_ratio",
	"base_per_request_tok_s", "next_per_request_tok_s", "per_request_tok_s_ratio",
	"base_ttft_ms", "next_ttft_ms", "ttft_ms_ratio",
	"base_tbt_ms", "next_tbt_ms", "tbt_ms_ratio",
}

// writeCSV writes the comparison as CSV with the columns phase,
// context_tokens, concurrency, presence, base_status and next_status, then
// base_, next_ and a ratio for each of total_tok_s, per_request_tok_s,
// ttft_ms and tbt_ms (such as base_ttft_ms, next_ttft_ms, ttft_ms_ratio),
// and of tokens_per_joule where a cell compares the GPUs' energy:
// the prefill rows first (the prompt tok/s in the total_tok_s columns, the
// cold TTFT in the ttft columns), then the decode cells in grid order. Ratios have three decimals; fields that do not apply are
// empty.
// writeSeriesCSV refuses: a comparison has no time series of its own.
func (c *Comparison) writeSeriesCSV(io.Writer) error {
	return errors.New("matrix: a comparison has no time series of its own: write each run's with -render FILE -format series-csv")
}

func (c *Comparison) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	energy := slices.ContainsFunc(c.Cells, func(x CellChange) bool { return x.TokensPerJoule != nil })
	head := comparisonCSVHeader
	if energy {
		head = append(slices.Clone(head), "base_tokens_per_joule", "next_tokens_per_joule", "tokens_per_joule_ratio")
	}
	cw.Write(head)
	ratio := func(rec []string, at int, r *Ratio, dec int) {
		if r == nil {
			return
		}
		rec[at], rec[at+1] = csvPositive(r.Base, dec), csvPositive(r.Next, dec)
		if r.compared() {
			rec[at+2] = csvFloat(r.Ratio, 3)
		}
	}
	for _, p := range c.Prefill {
		rec := make([]string, len(head))
		presence := p.Presence
		rec[0], rec[1], rec[2], rec[3] = "prefill", strconv.Itoa(p.ContextTokens), "1", string(presence)
		rec[4] = tokenOf(sideStatus(p.Presence != onlyInNext, p.BaseMeasured, p.BaseStatus))
		rec[5] = tokenOf(sideStatus(p.Presence != onlyInBase, p.NextMeasured, p.NextStatus))
		ratio(rec, 6, p.PromptTokensPerSec, 1)
		ratio(rec, 12, p.TTFT, 0)
		cw.Write(rec)
	}
	for _, x := range c.Cells {
		rec := make([]string, len(head))
		presence := x.Presence
		rec[0], rec[1], rec[2], rec[3] = "decode", strconv.Itoa(x.ContextTokens), strconv.Itoa(x.Concurrency), string(presence)
		rec[4], rec[5] = tokenOf(x.BaseStatus), tokenOf(x.NextStatus)
		ratio(rec, 6, x.OutputTokensPerSec, 1)
		ratio(rec, 9, x.PerRequestTokensPerSec, 1)
		ratio(rec, 12, x.TTFTp50, 0)
		ratio(rec, 15, x.TBTp50, 1)
		if energy {
			ratio(rec, 18, x.TokensPerJoule, 4)
		}
		cw.Write(rec)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("matrix: write comparison CSV: %w", err)
	}
	return nil
}
