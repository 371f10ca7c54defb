package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// writeMarkdown writes the results as Markdown (GitHub-flavored tables):
// the same title, prefill table, decode grid and footnotes as
// [Table], then the "All measurements" table with the seed
// page's columns, "—" where a column does not apply. Strings from the
// server or the user are escaped.
func (r doc) writeMarkdown(w io.Writer) error {
	rp := r.report()
	bw := bufio.NewWriter(w)
	h := rp.header

	fmt.Fprintf(bw, "# %s\n\n**%s**", h.Title, mdEscape(h.Model))
	if h.Server != "" {
		fmt.Fprintf(bw, " on %s", mdEscape(h.Server))
	}
	bw.WriteString("\n\n")
	if h.Simulated != "" {
		fmt.Fprintf(bw, "_%s_\n\n", mdEscape(h.Simulated))
	}
	if facts := h.facts(); len(facts) > 0 {
		for i, s := range facts {
			facts[i] = mdEscape(s)
		}
		bw.WriteString(strings.Join(facts, "<br>\n") + "\n\n")
	}

	if len(rp.prefill) > 0 {
		bw.WriteString("## Prefill\n\nPrompt tok/s by context length.\n\n")
		bw.WriteString("| Context | Prompt tok/s | TTFT |\n|:--|--:|--:|\n")
		for _, p := range rp.prefill {
			rate, ttft := p.figures()
			mdRow(bw, p.label, rate, ttft)
		}
		bw.WriteString("\n")
	}

	mdDecode(bw, rp.grid, rp.rows, "Total tok/s, with the TTFT under it.")

	for _, s := range rp.legend {
		bw.WriteString(mdEscape(s) + "\n\n")
	}

	if len(rp.long) > 0 {
		bw.WriteString("## All measurements\n\n" + noteMedians + "\n\n")
		mdRow(bw, rp.head...)
		bw.WriteString("|:--|:--|--:|:--|--:|--:|--:|--:|--:|--:|--:|--:|" + strings.Repeat("--:|", len(rp.head)-len(longHead)) + "\n")
		for _, row := range rp.long {
			mdRow(bw, row...)
		}
		bw.WriteString("\n")
	}

	if len(rp.notes) > 0 {
		bw.WriteString("## Notes\n\n")
		for _, s := range rp.notes {
			bw.WriteString("- " + mdEscape(s) + "\n")
		}
		bw.WriteString("\n")
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("matrix: write Markdown: %w", err)
	}
	return nil
}

// mdDecode writes the "Sustained decode" section of a grid g: its rows
// under a caption that starts with what the cells show, or the note of a
// grid too sparse to draw; nothing when g has no cells.
func mdDecode[C any](w *bufio.Writer, g grid[C], rows []gridRow, what string) {
	switch {
	case len(g.contexts) > 0 && !g.drawn():
		w.WriteString("## Sustained decode\n\n" + g.sparseNote() + "\n\n")
	case len(g.contexts) > 0:
		w.WriteString("## Sustained decode\n\n" + what +
			" Rows are context length, columns are simultaneous requests.\n\n")
		mdGrid(w, g.concurrency, rows)
	}
}

// mdGrid writes a drawn decode grid, of a run or of a comparison, as a
// Markdown table: a column for each concurrency level, and each cell's
// lines one under the other.
func mdGrid(w *bufio.Writer, concurrency []int, rows []gridRow) {
	head := []string{"Context"}
	align := "|:--|"
	for _, n := range concurrency {
		head = append(head, strconv.Itoa(n))
		align += "--:|"
	}
	mdRow(w, head...)
	w.WriteString(align + "\n")
	for _, row := range rows {
		cells := []string{mdEscape(row.label)}
		for _, lines := range row.cells {
			escaped := make([]string, len(lines))
			for i, s := range lines {
				escaped[i] = mdEscape(s)
			}
			cells = append(cells, strings.Join(escaped, "<br>"))
		}
		w.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	w.WriteString("\n")
}

// mdRow writes one Markdown table row; cells are escaped.
func mdRow(w *bufio.Writer, cells ...string) {
	escaped := make([]string, len(cells))
	for i, s := range cells {
		escaped[i] = mdEscape(s)
	}
	w.WriteString("| " + strings.Join(escaped, " | ") + " |\n")
}

// mdReplacer escapes the characters that Markdown (and the HTML inside it)
// would read as syntax.
var mdReplacer = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", "&lt;", ">", "&gt;", "|", `\|`, "#", `\#`, "&", "&amp;",
)

// mdEscape makes s safe as inline Markdown text on one line.
func mdEscape(s string) string { return mdReplacer.Replace(cleanText(s)) }
