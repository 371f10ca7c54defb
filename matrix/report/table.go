package report

import (
	"github.com/llmload/llmload/matrix"

	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/llmload/llmload/internal/thousands"
)

// writeTable writes the results as a plain-text table shaped like the seed
// page, for a terminal: a title with the model and server, the prefill
// table, the decode grid (total tok/s with the TTFT under it, or the
// cell's status) and the footnotes. It writes no color codes, and strings
// from the server are stripped of control characters.
func (r doc) writeTable(w io.Writer) error {
	rp := r.report()
	bw := bufio.NewWriter(w)
	h := rp.header

	fmt.Fprintf(bw, "%s — %s", h.Title, h.Model)
	if h.Server != "" {
		fmt.Fprintf(bw, " on %s", h.Server)
	}
	bw.WriteString("\n")
	if h.Simulated != "" {
		bw.WriteString(h.Simulated + "\n")
	}
	for _, s := range h.facts() {
		bw.WriteString(s + "\n")
	}

	if len(rp.prefill) > 0 {
		bw.WriteString("\nPrefill · prompt tok/s by context length\n\n")
		rows := make([][]string, 0, len(rp.prefill))
		for _, p := range rp.prefill {
			rate, ttft := p.figures()
			rows = append(rows, []string{p.label, rate, ttft})
		}
		writeAligned(bw, []string{"Context", "Prompt tok/s", "TTFT"}, rows, false)
	}

	switch g := rp.grid; {
	case len(g.contexts) > 0 && !g.drawn():
		bw.WriteString("\nSustained decode\n" + g.sparseNote() + "\n\n")
		var rows [][]string
		for _, row := range rp.long[len(rp.prefill):] {
			rows = append(rows, row[1:]) // without the phase
		}
		writeAligned(bw, rp.head[1:], rows, false)
	case len(g.contexts) > 0:
		bw.WriteString("\nSustained decode · total tok/s with the TTFT under it · " +
			"rows are context length, columns are simultaneous requests\n\n")
		writeGrid(bw, g.concurrency, rp.rows)
	}

	if rp.energy.shown && rp.grid.drawn() {
		bw.WriteString("\nGPU energy · over each cell's window, every GPU its exporters list\n\n")
		var rows [][]string
		for i, c := range rp.cells {
			if c.Measurement != nil && c.Measurement.Energy != nil {
				row := rp.long[len(rp.prefill)+i]
				rows = append(rows, append([]string{row[1], row[2]}, row[len(longHead):len(longHead)+len(rp.energy.head())]...))
			}
		}
		writeAligned(bw, append([]string{"Context", "Requests at once"}, rp.energy.head()...), rows, false)
	}

	if rp.split && rp.grid.drawn() {
		bw.WriteString("\nTTFT by the server's own timings · p50 / p99 of the server's queue, its prefill, and the rest (the network and the client)\n\n")
		var rows [][]string
		for _, c := range rp.cells {
			if m := c.Measurement; m != nil && m.SplitRequests > 0 {
				pq := func(q matrix.Quantiles) string {
					return thousands.Float(q.P50, 1) + " / " + thousands.Float(q.P99, 1) + " ms"
				}
				rest := pq(m.Rest)
				if m.OutsideServer != "" {
					rest += " (" + m.OutsideServer + ")"
				}
				rows = append(rows, []string{promptLabel(c.ContextTokens, c.PromptTokens, c.ImageTokens), strconv.Itoa(c.Concurrency),
					fmtTTFT(m.TTFT.P50), pq(m.ServerQueue), pq(m.ServerPrefill), rest})
			}
		}
		writeAligned(bw, []string{"Context", "Requests at once", "TTFT", "Server queue", "Server prefill", "Network and client"}, rows, false)
	}

	if len(rp.legend) > 0 {
		bw.WriteString("\n")
		for _, s := range rp.legend {
			bw.WriteString(s + "\n")
		}
	}
	if len(rp.notes) > 0 {
		bw.WriteString("\nNotes\n")
		for _, s := range rp.notes {
			bw.WriteString("  " + s + "\n")
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("matrix: write table: %w", err)
	}
	return nil
}

// writeGrid writes a drawn decode grid, of a run or of a comparison: a
// column for each concurrency level, and each cell's lines one under the
// other.
func writeGrid(w *bufio.Writer, concurrency []int, rows []gridRow) {
	head := []string{"Context"}
	for _, n := range concurrency {
		head = append(head, strconv.Itoa(n))
	}
	cells := make([][]string, 0, len(rows))
	for _, row := range rows {
		line := []string{row.label}
		for _, c := range row.cells {
			line = append(line, strings.Join(c, "\n"))
		}
		cells = append(cells, line)
	}
	writeAligned(w, head, cells, true)
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
