package report

import (
	fig "github.com/llmload/llmload/internal/figure"
	"github.com/llmload/llmload/matrix"

	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/llmload/llmload/internal/chart"
	"github.com/llmload/llmload/internal/thousands"
)

// writeHTML writes the comparison as one self-contained HTML page (inline
// CSS and SVG, nothing fetched from the network): the two runs, the decode
// grid as a heat map colored by the total tok/s ratio (green faster, red
// slower, plain within the 5% threshold) with the TTFT ratio and any
// status change in each cell and both runs' numbers in its tooltip, a
// chart of the total tok/s ratio against concurrency, the prefill table
// and a table of every cell.
func (c *Comparison) writeHTML(w io.Writer) error {
	if err := htmlTemplates.ExecuteTemplate(w, "comparison", c.report().htmlPage()); err != nil {
		return fmt.Errorf("matrix: write comparison HTML: %w", err)
	}
	return nil
}

// htmlComparePage is what the comparison template renders.
type htmlComparePage struct {
	Title       string
	Base, Next  string
	Legend      string
	Highlights  []htmlFact
	Concurrency []int
	Rows        []htmlRow
	ScaleCSS    template.CSS
	Counts      []htmlStatusCount
	Charts      []chart.Chart
	Prefill     [][]string
	GridNote    string // why there is no heat map, when the cells are too sparse for one
	LongHead    []string
	LongRows    [][]string
}

// diverging is the comparison's color ramp, slower (red) to faster
// (green); its middle is not used, as changes within the threshold are
// left plain.
var diverging = [][3]float64{
	{0xb2, 0x18, 0x2b}, {0xd6, 0x60, 0x4d}, {0xf4, 0xa5, 0x82}, {0xd9, 0xd9, 0xd9},
	{0xa6, 0xdb, 0xa0}, {0x5a, 0xae, 0x61}, {0x1b, 0x78, 0x37},
}

// htmlPage lays out the comparison page.
func (cr *comparisonReport) htmlPage() htmlComparePage {
	c, g := cr.c, cr.grid
	p := htmlComparePage{Title: "Speed test matrix comparison", Base: c.Base.describe(), Next: c.Next.describe(),
		Legend: compareLegend, ScaleCSS: rampGradient(diverging), Counts: cr.htmlCounts(),
		Highlights: cr.htmlHighlights(), Prefill: cr.prefill, LongHead: cr.head, LongRows: cr.long}
	if !g.drawn() {
		// Too sparse for a heat map and its charts: the table of every
		// cell says it all.
		if len(g.contexts) > 0 {
			p.GridNote = g.sparseNote()
		}
		return p
	}
	p.Concurrency = g.concurrency
	for i, ctx := range g.contexts {
		row := htmlRow{Context: cr.rows[i].label}
		for _, n := range g.concurrency {
			row.Cells = append(row.Cells, htmlCompareCell(g.at(ctx, n)))
		}
		p.Rows = append(p.Rows, row)
	}
	p.Charts = cr.charts()
	return p
}

// changeCounts counts the cells by the change in their total tok/s, and
// those whose status changed.
type changeCounts struct{ better, worse, same, noise, other, changed int }

// changes counts the comparison's cells by change.
func (cr *comparisonReport) changes() changeCounts {
	var n changeCounts
	for _, x := range cr.c.Cells {
		switch {
		case !x.OutputTokensPerSec.compared():
			n.other++
		case x.OutputTokensPerSec.Change == changeBetter:
			n.better++
		case x.OutputTokensPerSec.Change == changeWorse:
			n.worse++
		case x.OutputTokensPerSec.Change == changeNoise:
			n.noise++
		default:
			n.same++
		}
		if x.StatusChanged {
			n.changed++
		}
	}
	return n
}

// htmlCounts count the cells by change, for the heat map's legend.
func (cr *comparisonReport) htmlCounts() []htmlStatusCount {
	n := cr.changes()
	var out []htmlStatusCount
	for _, k := range []htmlStatusCount{{"better", "Faster ▲", n.better}, {"worse", "Slower ▼", n.worse},
		{"same", "Within 5%", n.same}, {"noise", "Within noise", n.noise}, {"notrun", "Not compared", n.other}} {
		if k.N > 0 {
			out = append(out, k)
		}
	}
	return out
}

// ratios are the total tok/s ratios of the cells measured in both runs.
func (cr *comparisonReport) ratios() []float64 {
	var out []float64
	for _, x := range cr.c.Cells {
		if x.OutputTokensPerSec.compared() {
			out = append(out, x.OutputTokensPerSec.Ratio)
		}
	}
	return out
}

// htmlHighlights are the figures at the top of the page: the geometric
// mean of the total tok/s ratios, and the cells that changed.
func (cr *comparisonReport) htmlHighlights() []htmlFact {
	n := cr.changes()
	var out []htmlFact
	if ratios := cr.ratios(); len(ratios) > 0 {
		out = append(out, htmlFact{Label: "Total tok/s, geometric mean",
			Value: thousands.Float(geomean(ratios), 2) + "×", Detail: "over " + fig.Plural(len(ratios), "cell", "cells") + " measured in both"})
	}
	return append(out,
		htmlFact{Label: "Faster cells", Value: strconv.Itoa(n.better), Detail: "total tok/s up by more than 5% and beyond the runs' noise"},
		htmlFact{Label: "Slower cells", Value: strconv.Itoa(n.worse), Detail: "total tok/s down by more than 5% and beyond the runs' noise"},
		htmlFact{Label: "Status changes", Value: strconv.Itoa(n.changed), Detail: "cells whose status differs"})
}

// charts is the comparison page's chart: the total tok/s ratio against
// concurrency, a line per context; none when no cell was measured in both
// runs.
func (cr *comparisonReport) charts() []chart.Chart {
	g := cr.grid
	if len(g.concurrency) == 0 || len(cr.ratios()) == 0 {
		return nil
	}
	var names []string
	var series [][]chart.Point
	for _, ctx := range g.contexts {
		var pts []chart.Point
		for _, n := range g.concurrency {
			if x := g.at(ctx, n); x != nil && x.OutputTokensPerSec.compared() {
				pts = append(pts, chart.Point{X: float64(n), Y: x.OutputTokensPerSec.Ratio, Hollow: x.StatusChanged,
					Title: fmt.Sprintf("%s: %s → %s tok/s, %s", placeLabel(ctx, n),
						fmtRate(x.OutputTokensPerSec.Base), fmtRate(x.OutputTokensPerSec.Next), fmtRatio(x.OutputTokensPerSec))})
			}
		}
		names = append(names, "context "+formatTokens(ctx))
		series = append(series, pts)
	}
	return []chart.Chart{newConcurrencyChart("Total tok/s, next ÷ base", "dashed line: no change; hollow points changed status",
		"ratio", g.concurrency, names, series, func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) + "×" }, true)}
}

// htmlCompareCell is the comparison heat-map cell of x (nil when in
// neither run).
func htmlCompareCell(x *CellChange) htmlCell {
	if x == nil {
		return htmlCell{Class: "notrun nonum", Main: "—", Title: "in neither run"}
	}
	title := []string{placeLabel(x.ContextTokens, x.Concurrency) + " — " + cmpStatusWords(x.BaseStatus) + " → " + cmpStatusWords(x.NextStatus)}
	for _, f := range []struct {
		name   string
		r      *Ratio
		format func(float64) string
	}{
		{"Total tok/s", x.OutputTokensPerSec, fmtRate}, {"Per request tok/s", x.PerRequestTokensPerSec, fmtRate},
		{"TTFT", x.TTFTp50, fmtTTFT}, {"Time between tokens", x.TBTp50, fmtTBT},
		{"Tokens per joule", x.TokensPerJoule, fig.Significant},
	} {
		if f.r != nil {
			line := f.name + ": " + fmtPair(f.r, f.format)
			if in := fmtIntervals(f.r, f.format); in != "" {
				line += " (" + in + ")"
			}
			title = append(title, line)
		}
	}
	if n := x.Note(); n != "" {
		title = append(title, n)
	}
	hc := htmlCell{Title: strings.Join(title, "\n"), Status: x.OutputTokensPerSec.changeToken()}
	lines := compareLines(x)
	hc.Main = lines[0]
	if !x.OutputTokensPerSec.compared() {
		hc.Class = "notrun nonum"
		if x.NextStatus == matrix.OverCapacity && x.BaseStatus == matrix.OverCapacity {
			hc.Class = "over nonum"
		}
		return hc
	}
	switch x.OutputTokensPerSec.Change {
	case changeSame, changeNoise:
		hc.Class = string(x.OutputTokensPerSec.Change)
	default:
		hc.Class = string(x.OutputTokensPerSec.Change)
		t := 0.5 + math.Max(-1, math.Min(1, math.Log2(x.OutputTokensPerSec.Ratio)))/2
		col := rampColor(diverging, t)
		hc.Style = template.CSS("background:" + hexColor(col) + ";color:" + textOn(col))
	}
	if len(lines) > 1 {
		hc.Sub = lines[1]
	}
	if x.StatusChanged {
		hc.Badge = x.Note()
		if x.NextStatus == matrix.RequestsQueued {
			hc.Class += " queued"
		}
	}
	return hc
}

// changeToken is "better", "worse", "same", or "none" without a ratio.
func (r *Ratio) changeToken() string {
	if !r.compared() {
		return "none"
	}
	return string(r.Change)
}

// geomean is the geometric mean of positive values.
func geomean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(v)))
}

// fmtIntervals is both runs' intervals of a figure, "noise 80.1–82.9 →
// 88.0–92.3", or "" when neither is known.
func fmtIntervals(r *Ratio, format func(float64) string) string {
	if r == nil || (r.BaseInterval == nil && r.NextInterval == nil) {
		return ""
	}
	side := func(in *matrix.Interval) string {
		if in == nil {
			return "?"
		}
		return format(in.Low) + "–" + format(in.High)
	}
	return "noise " + side(r.BaseInterval) + " → " + side(r.NextInterval)
}
