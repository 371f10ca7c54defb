package matrix

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// WriteTable writes the results as a plain-text table shaped like the seed
// page, for a terminal: a title with the model and server, the prefill
// table, the decode grid (total tok/s with the TTFT under it, or the
// cell's status) and the footnotes. It writes no color codes, and strings
// from the server are stripped of control characters.
func (r *Results) WriteTable(w io.Writer) error {
	bw := bufio.NewWriter(w)
	h := r.header()
	g := newReportGrid(r)

	fmt.Fprintf(bw, "%s — %s", h.Title, h.Model)
	if h.Server != "" {
		fmt.Fprintf(bw, " on %s", h.Server)
	}
	bw.WriteString("\n")
	for _, s := range []string{h.Simulated, h.Shape, h.Run, h.Limits, h.Progress} {
		if s != "" {
			bw.WriteString(s + "\n")
		}
	}

	if len(r.Prefill) > 0 {
		bw.WriteString("\nPrefill · prompt tok/s by context length\n\n")
		rows := make([][]string, 0, len(r.Prefill))
		for _, p := range sortedPrefill(r.Prefill) {
			rate, ttft := prefillStatusWords(p), "—"
			if prefillMeasured(p) {
				rate, ttft = fmtPrefillRate(p.PromptTokS), fmtTTFT(p.TTFTms)
			}
			rows = append(rows, []string{sizeLabel(p.ContextTokens, p.PromptTokens), rate, ttft})
		}
		writeAligned(bw, []string{"Context", "Prompt tok/s", "TTFT"}, rows, false)
	}

	if len(g.contexts) > 0 && !g.drawn() {
		bw.WriteString("\nSustained decode\n" + sparseNote(len(g.cells), len(g.contexts), len(g.concurrency)) + "\n\n")
		rows := r.longRows()[len(r.Prefill):]
		head := []string{"Context", "Requests at once", "Status", "Total tok/s", "Per request tok/s", "TTFT",
			"Time between tokens", "Average active requests", "Completed requests", "Output tokens", "Measured for"}
		for i, row := range rows {
			rows[i] = row[1:] // without the phase
		}
		writeAligned(bw, head, rows, false)
	}
	if len(g.contexts) > 0 && g.drawn() {
		bw.WriteString("\nSustained decode · total tok/s with the TTFT under it · " +
			"rows are context length, columns are simultaneous requests\n\n")
		head := []string{"Context"}
		for _, n := range g.concurrency {
			head = append(head, strconv.Itoa(n))
		}
		rows := make([][]string, 0, len(g.contexts))
		for _, ctx := range g.contexts {
			row := []string{g.rowLabel(ctx)}
			for _, n := range g.concurrency {
				row = append(row, strings.Join(gridLines(g.at(ctx, n)), "\n"))
			}
			rows = append(rows, row)
		}
		writeAligned(bw, head, rows, true)
	}

	if legend := r.legend(); len(legend) > 0 {
		bw.WriteString("\n")
		for _, s := range legend {
			bw.WriteString(s + "\n")
		}
	}
	if len(h.Notes) > 0 || len(r.cellNotes()) > 0 {
		bw.WriteString("\nNotes\n")
		for _, s := range append(h.Notes, r.cellNotes()...) {
			bw.WriteString("  " + s + "\n")
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("matrix: write table: %w", err)
	}
	return nil
}

// gridLines is what a decode grid cell shows, a line each, as on the seed
// page: the total tok/s (with its footnote marks), the status words when
// the cell is not Valid, and the TTFT; or only the status words for a cell
// without output.
func gridLines(c *Cell) []string {
	if !hasRates(c) {
		return []string{statusWords(c)}
	}
	lines := []string{fmtRate(c.TotalTokS) + marks(c)}
	if c.Status != Valid {
		lines = append(lines, statusWords(c))
	}
	if c.TTFTms.P50 > 0 {
		lines = append(lines, fmtTTFT(c.TTFTms.P50)+" TTFT")
	}
	return lines
}

// writeAligned writes a table with a header, a rule under it, and rows
// whose cells may span several lines ("\n"). The first column is aligned
// left, the others right. Multi-line rows are separated by a blank line.
// Write errors are left to the caller's Flush.
func writeAligned(w *bufio.Writer, head []string, rows [][]string, spaced bool) {
	width := make([]int, len(head))
	grow := func(i int, s string) {
		for _, line := range strings.Split(s, "\n") {
			width[i] = max(width[i], utf8.RuneCountInString(line))
		}
	}
	for i, s := range head {
		grow(i, s)
	}
	for _, row := range rows {
		for i, s := range row {
			grow(i, s)
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, s := range cells {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(s))
			if i > 0 {
				b.WriteString("  ")
			}
			if i == 0 {
				b.WriteString(s + pad)
			} else {
				b.WriteString(pad + s)
			}
		}
		w.WriteString(strings.TrimRight(b.String(), " ") + "\n")
	}
	line(head)
	rule := make([]string, len(head))
	for i := range rule {
		rule[i] = strings.Repeat("-", width[i])
	}
	line(rule)
	for k, row := range rows {
		split := make([][]string, len(row))
		height := 0
		for i, s := range row {
			split[i] = strings.Split(s, "\n")
			height = max(height, len(split[i]))
		}
		if spaced && k > 0 {
			w.WriteString("\n")
		}
		for j := range height {
			cells := make([]string, len(row))
			for i := range row {
				if j < len(split[i]) {
					cells[i] = split[i][j]
				}
			}
			line(cells)
		}
	}
}
