package matrix

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteMarkdown writes the results as Markdown (GitHub-flavored tables):
// the same title, prefill table, decode grid and footnotes as
// [Results.WriteTable], then the "All measurements" table with the seed
// page's columns, "—" where a column does not apply. Strings from the
// server or the user are escaped.
func (r *Results) WriteMarkdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	h := r.header()
	g := newReportGrid(r)

	fmt.Fprintf(bw, "# %s\n\n**%s**", h.Title, mdEscape(h.Model))
	if h.Server != "" {
		fmt.Fprintf(bw, " on %s", mdEscape(h.Server))
	}
	bw.WriteString("\n\n")
	if h.Simulated != "" {
		fmt.Fprintf(bw, "_%s_\n\n", mdEscape(h.Simulated))
	}
	var facts []string
	for _, s := range []string{h.Shape, h.Run, h.Limits, h.Progress} {
		if s != "" {
			facts = append(facts, mdEscape(s))
		}
	}
	if len(facts) > 0 {
		bw.WriteString(strings.Join(facts, "<br>\n") + "\n\n")
	}

	if len(r.Prefill) > 0 {
		bw.WriteString("## Prefill\n\nPrompt tok/s by context length.\n\n")
		bw.WriteString("| Context | Prompt tok/s | TTFT |\n|:--|--:|--:|\n")
		for _, p := range sortedPrefill(r.Prefill) {
			rate, ttft := prefillStatusWords(p), "—"
			if prefillMeasured(p) {
				rate, ttft = fmtPrefillRate(p.PromptTokS), fmtTTFT(p.TTFTms)
			}
			mdRow(bw, sizeLabel(p.ContextTokens, p.PromptTokens), rate, ttft)
		}
		bw.WriteString("\n")
	}

	if len(g.contexts) > 0 && !g.drawn() {
		bw.WriteString("## Sustained decode\n\n" + sparseNote(len(g.cells), len(g.contexts), len(g.concurrency)) + "\n\n")
	}
	if len(g.contexts) > 0 && g.drawn() {
		bw.WriteString("## Sustained decode\n\nTotal tok/s, with the TTFT under it. " +
			"Rows are context length, columns are simultaneous requests.\n\n")
		head := []string{"Context"}
		align := "|:--|"
		for _, n := range g.concurrency {
			head = append(head, strconv.Itoa(n))
			align += "--:|"
		}
		mdRow(bw, head...)
		bw.WriteString(align + "\n")
		for _, ctx := range g.contexts {
			row := []string{mdEscape(g.rowLabel(ctx))}
			for _, n := range g.concurrency {
				lines := gridLines(g.at(ctx, n))
				for i, s := range lines {
					lines[i] = mdEscape(s)
				}
				row = append(row, strings.Join(lines, "<br>"))
			}
			bw.WriteString("| " + strings.Join(row, " | ") + " |\n")
		}
		bw.WriteString("\n")
	}

	if legend := r.legend(); len(legend) > 0 {
		for _, s := range legend {
			bw.WriteString(mdEscape(s) + "\n\n")
		}
	}

	if len(r.Prefill) > 0 || len(r.Cells) > 0 {
		bw.WriteString("## All measurements\n\n" + noteMedians + "\n\n")
		mdRow(bw, "Phase", "Context", "Requests at once", "Status", "Total tok/s", "Per request tok/s",
			"TTFT", "Time between tokens", "Average active requests", "Completed requests",
			"Output tokens", "Measured for")
		bw.WriteString("|:--|:--|--:|:--|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, row := range r.longRows() {
			mdRow(bw, row...)
		}
		bw.WriteString("\n")
	}

	notes := append(h.Notes, r.cellNotes()...)
	if len(notes) > 0 {
		bw.WriteString("## Notes\n\n")
		for _, s := range notes {
			bw.WriteString("- " + mdEscape(s) + "\n")
		}
		bw.WriteString("\n")
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("matrix: write Markdown: %w", err)
	}
	return nil
}

// longRows is the "All measurements" table as the seed page shows it, one
// row a measurement, "—" where a column does not apply.
func (r *Results) longRows() [][]string {
	var rows [][]string
	for _, p := range sortedPrefill(r.Prefill) {
		row := []string{"Prefill", sizeLabel(p.ContextTokens, p.PromptTokens), "1", prefillStatusWords(p), "—", "—", "—", "—", "—", "—", "—", "—"}
		if prefillMeasured(p) {
			row[4], row[6], row[9] = fmtRate(p.PromptTokS), fmtTTFT(p.TTFTms), "1"
		}
		rows = append(rows, row)
	}
	for _, c := range newReportGrid(r).ordered() {
		rows = append(rows, longCellRow(c))
	}
	return rows
}

// longCellRow is one decode cell's row of the "All measurements" table.
func longCellRow(c *Cell) []string {
	row := []string{"Sustained decode", sizeLabel(c.ContextTokens, c.PromptTokens), strconv.Itoa(c.Concurrency),
		statusWords(c), "—", "—", "—", "—", "—", "—", "—", "—"}
	m := c.Measurement
	if m == nil {
		return row
	}
	if hasRates(c) {
		row[4] = fmtRate(m.TotalTokS) + marks(c)
		row[5] = dashUnlessPositive(m.PerRequestTokS, fmtRate)
		row[6] = dashUnlessPositive(m.TTFTms.P50, fmtTTFT)
		row[7] = dashUnlessPositive(m.TBTms.P50, fmtTBT)
	}
	row[8] = numGroup(m.AvgActive, 2)
	row[9] = fmtInt(m.Completed)
	row[10] = fmtInt(m.OutputTokens)
	row[11] = numGroup(m.MeasuredS, 1) + " s"
	return row
}

// dashUnlessPositive formats v, or "—" when it is not positive.
func dashUnlessPositive(v float64, f func(float64) string) string {
	if v > 0 {
		return f(v)
	}
	return "—"
}

// mdRow writes one Markdown table row; cells are escaped.
func mdRow(w *bufio.Writer, cells ...string) {
	for i, s := range cells {
		cells[i] = mdEscape(s)
	}
	w.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

// mdReplacer escapes the characters that Markdown (and the HTML inside it)
// would read as syntax.
var mdReplacer = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", "&lt;", ">", "&gt;", "|", `\|`, "#", `\#`, "&", "&amp;",
)

// mdEscape makes s safe as inline Markdown text on one line.
func mdEscape(s string) string { return mdReplacer.Replace(cleanText(s)) }
