package matrix

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
)

// WriteHTML writes the comparison as one self-contained HTML page (inline
// CSS and SVG, nothing fetched from the network): the two runs, the decode
// grid as a heat map colored by the total tok/s ratio (green faster, red
// slower, plain within [CompareThreshold]) with the TTFT ratio and any
// status change in each cell and both runs' numbers in its tooltip, a
// chart of the total tok/s ratio against concurrency, the prefill table
// and a table of every cell.
func (c *Comparison) WriteHTML(w io.Writer) error {
	if err := htmlTemplates.ExecuteTemplate(w, "comparison", c.htmlPage()); err != nil {
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
	Charts      []svgChart
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

// htmlPage gathers what the comparison page shows.
func (c *Comparison) htmlPage() htmlComparePage {
	p := htmlComparePage{Title: "Speed test matrix comparison", Base: c.Base.describe(), Next: c.Next.describe(),
		Legend: compareLegend, ScaleCSS: rampGradient(diverging)}
	g := c.grid()
	ctxs, ns := g.contexts, g.concurrency
	if !g.drawn() {
		// Too sparse for a heat map and its charts: the table of every
		// cell says it all.
		if len(ctxs) > 0 {
			p.GridNote = sparseNote(len(c.Cells), len(ctxs), len(ns))
		}
		ctxs, ns = nil, nil
	}
	p.Concurrency = ns

	var better, worse, same, noise, other, changed int
	var ratios []float64
	for _, x := range c.Cells {
		switch {
		case !x.TotalTokS.Compared():
			other++
		case x.TotalTokS.Change == ChangeBetter:
			better++
		case x.TotalTokS.Change == ChangeWorse:
			worse++
		case x.TotalTokS.Change == ChangeNoise:
			noise++
		default:
			same++
		}
		if x.TotalTokS.Compared() {
			ratios = append(ratios, x.TotalTokS.Ratio)
		}
		if x.StatusChanged {
			changed++
		}
	}
	for _, k := range []htmlStatusCount{{"better", "Faster ▲", better}, {"worse", "Slower ▼", worse},
		{"same", "Within 5%", same}, {"noise", "Within noise", noise}, {"notrun", "Not compared", other}} {
		if k.N > 0 {
			p.Counts = append(p.Counts, k)
		}
	}
	if len(ratios) > 0 {
		p.Highlights = append(p.Highlights, htmlFact{Label: "Total tok/s, geometric mean",
			Value: numGroup(geomean(ratios), 2) + "×", Detail: "over " + plural(len(ratios), "cell", "cells") + " measured in both"})
	}
	p.Highlights = append(p.Highlights,
		htmlFact{Label: "Faster cells", Value: strconv.Itoa(better), Detail: "total tok/s up by more than 5% and beyond the runs' noise"},
		htmlFact{Label: "Slower cells", Value: strconv.Itoa(worse), Detail: "total tok/s down by more than 5% and beyond the runs' noise"},
		htmlFact{Label: "Status changes", Value: strconv.Itoa(changed), Detail: "cells whose status differs"})

	var names []string
	var series [][]chartPoint
	for _, ctx := range ctxs {
		row := htmlRow{Context: FormatTokens(ctx)}
		var pts []chartPoint
		for _, n := range ns {
			x := g.at(ctx, n)
			row.Cells = append(row.Cells, htmlCompareCell(x))
			if x != nil && x.TotalTokS.Compared() {
				pts = append(pts, chartPoint{n: n, v: x.TotalTokS.Ratio, hollow: x.StatusChanged,
					title: fmt.Sprintf("%s × %d: %s → %s tok/s, %s", FormatTokens(ctx), n,
						fmtRate(x.TotalTokS.Base), fmtRate(x.TotalTokS.Next), fmtRatio(x.TotalTokS))})
			}
		}
		p.Rows = append(p.Rows, row)
		names = append(names, "context "+FormatTokens(ctx))
		series = append(series, pts)
	}
	if len(ns) > 0 && len(ratios) > 0 {
		ch := newConcurrencyChart("Total tok/s, next ÷ base", "dashed line: no change; hollow points changed status",
			"ratio", ns, names, series, func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) + "×" }, true)
		p.Charts = append(p.Charts, ch)
	}
	for _, pc := range c.Prefill {
		p.Prefill = append(p.Prefill, prefillCompareRow(pc))
	}
	p.LongHead = []string{"Context", "Requests at once", "Status", "Total tok/s", "Per request tok/s",
		"TTFT", "Time between tokens", "Note"}
	for _, x := range c.Cells {
		p.LongRows = append(p.LongRows, compareLongRow(x))
	}
	return p
}

// htmlCompareCell is the comparison heat-map cell of x (nil when in
// neither run).
func htmlCompareCell(x *CellChange) htmlCell {
	if x == nil {
		return htmlCell{Class: "notrun nonum", Main: "—", Title: "in neither run"}
	}
	label := FormatTokens(x.ContextTokens) + " × " + strconv.Itoa(x.Concurrency)
	title := []string{label + " — " + cmpStatusWords(x.BaseStatus) + " → " + cmpStatusWords(x.NextStatus)}
	for _, f := range []struct {
		name   string
		r      *Ratio
		format func(float64) string
	}{
		{"Total tok/s", x.TotalTokS, fmtRate}, {"Per request tok/s", x.PerRequestTokS, fmtRate},
		{"TTFT", x.TTFTp50, fmtTTFT}, {"Time between tokens", x.TBTp50, fmtTBT},
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
	hc := htmlCell{Title: strings.Join(title, "\n"), Status: x.TotalTokS.changeToken()}
	lines := compareLines(x)
	hc.Main = lines[0]
	if !x.TotalTokS.Compared() {
		hc.Class = "notrun nonum"
		if x.NextStatus == OverCapacity && x.BaseStatus == OverCapacity {
			hc.Class = "over nonum"
		}
		return hc
	}
	switch x.TotalTokS.Change {
	case ChangeSame, ChangeNoise:
		hc.Class = x.TotalTokS.Change.String()
	default:
		hc.Class = x.TotalTokS.Change.String()
		t := 0.5 + math.Max(-1, math.Min(1, math.Log2(x.TotalTokS.Ratio)))/2
		col := rampColor(diverging, t)
		hc.Style = template.CSS("background:" + hexColor(col) + ";color:" + textOn(col))
	}
	if len(lines) > 1 {
		hc.Sub = lines[1]
	}
	if x.StatusChanged {
		hc.Badge = x.Note()
		if x.NextStatus == RequestsQueued {
			hc.Class += " queued"
		}
	}
	return hc
}

// changeToken is "better", "worse", "same", or "none" without a ratio.
func (r *Ratio) changeToken() string {
	if !r.Compared() {
		return "none"
	}
	return r.Change.String()
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
	side := func(in *Interval) string {
		if in == nil {
			return "?"
		}
		return format(in.Low) + "–" + format(in.High)
	}
	return "noise " + side(r.BaseInterval) + " → " + side(r.NextInterval)
}
