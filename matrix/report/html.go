package report

import (
	fig "github.com/llmload/llmload/internal/figure"
	"github.com/llmload/llmload/matrix"

	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/chart"
	"github.com/llmload/llmload/internal/errorkinds"
	"github.com/llmload/llmload/internal/thousands"
)

//go:embed report.html.tmpl
var htmlSource string

// htmlTemplates holds the results page, the comparison page and the parts
// they share, the charts' drawing among them (chart.Template).
// html/template escapes every string that reaches the page.
var htmlTemplates = template.Must(template.Must(template.New("report").Parse(chart.Template)).Parse(htmlSource))

// writeHTML writes the results as one self-contained HTML page: inline CSS
// and SVG, no scripts, fonts or anything else fetched from the network. It
// shows the run's facts, the decode grid as a heat map colored by total
// tok/s (status-colored where a cell is over capacity, queued, failed or
// not run; every cell's numbers in its tooltip), charts of total and
// per-request tok/s against concurrency, the prefill table and the "All
// measurements" table. It reads well in light and dark mode.
func (r doc) writeHTML(w io.Writer) error {
	if err := htmlTemplates.ExecuteTemplate(w, "results", r.report().htmlPage()); err != nil {
		return fmt.Errorf("matrix: write HTML: %w", err)
	}
	return nil
}

// htmlFact is a labelled value on the page.
type htmlFact struct{ Label, Value, Detail string }

// htmlCell is one heat-map cell.
type htmlCell struct {
	Class  string       // the status's class (valid, queued, over, failed, notrun), or the change's
	Status string       // the status token, for data-status
	Style  template.CSS // background and text color of a cell with numbers
	Main   string       // total tok/s, or the status words
	Sub    string       // "1,015 ms TTFT"
	Badge  string       // status words or marks shown with the numbers
	Title  string       // the tooltip: every number of the cell
}

// htmlRow is one context's row of the heat map.
type htmlRow struct {
	Context string
	Cells   []htmlCell
}

// htmlStatusCount is one entry of the heat map's status legend.
type htmlStatusCount struct {
	Class, Label string
	N            int
}

// htmlBar is one row of a table with a bar (the prefill table).
type htmlBar struct {
	Label, Value, Detail string
	Width                template.CSS
	Failed               bool
	Title                string
}

// htmlResultsPage is what the results template renders.
type htmlResultsPage struct {
	Title       string
	H           reportHeader
	Facts       []htmlFact
	Highlights  []htmlFact
	Concurrency []int
	Rows        []htmlRow
	ScaleCSS    template.CSS
	ScaleMin    string
	ScaleMax    string
	Counts      []htmlStatusCount
	Charts      []chart.Chart
	Series      []htmlSeriesCell
	Prefill     []htmlBar
	Legend      []string
	Notes       []string
	GridNote    string // why there is no heat map, when the cells are too sparse for one
	LongHead    []string
	LongRows    [][]string
}

// htmlPage lays out the results page.
func (rp *report) htmlPage() htmlResultsPage {
	h, g := rp.header, rp.grid
	p := htmlResultsPage{Title: h.Title + " — " + h.Model, H: h, Concurrency: g.concurrency,
		Facts: rp.htmlFacts(), ScaleCSS: rampGradient(viridis), Counts: rp.htmlCounts(),
		Legend: rp.legend, Notes: rp.notes, LongHead: rp.head, LongRows: rp.long}
	scale, ok := rp.heatScale()
	if ok {
		p.ScaleMin, p.ScaleMax = fmtRate(scale.lo), fmtRate(scale.hi)
	}
	switch {
	case g.drawn():
		for i, ctx := range g.contexts {
			row := htmlRow{Context: rp.rows[i].label}
			for _, n := range g.concurrency {
				row.Cells = append(row.Cells, htmlGridCell(g.at(ctx, n), ctx, n, scale))
			}
			p.Rows = append(p.Rows, row)
		}
		p.Charts = rp.charts()
	case len(g.contexts) > 0:
		p.GridNote = g.sparseNote()
	}
	p.Highlights = rp.htmlHighlights()
	p.Series = rp.htmlSeries()
	p.Prefill = rp.htmlPrefill()
	return p
}

// htmlFacts are the run's facts under the page's title.
func (rp *report) htmlFacts() []htmlFact {
	r, h := rp.r, rp.header
	var facts []htmlFact
	add := func(label, value string) { facts = append(facts, htmlFact{Label: label, Value: value}) }
	if h.Server != "" {
		add("Server", h.Server)
	}
	if h.Shape != "" {
		add("Matrix", h.Shape)
	}
	if r.Spec.Duration > 0 {
		add("Time per measurement", fmtSeconds(r.Spec.Duration))
	}
	if r.Spec.MaxTokens > 0 {
		add("Max output", fmtInt(r.Spec.MaxTokens)+" tokens")
	}
	if h.Limits != "" {
		add("Capacity", h.Limits)
	}
	if !r.Started.IsZero() {
		v := r.Started.UTC().Format("2006-01-02 15:04 UTC")
		if !r.Finished.IsZero() {
			v += " · took " + r.Finished.Sub(r.Started).Round(time.Second).String()
		}
		add("Started", v)
	}
	if h.Progress != "" {
		add("Run", h.Progress)
	}
	return facts
}

// heatScale is the heat map's color scale: it spans the measured total
// tok/s, on a log scale so that long contexts are not all one color. ok
// is false when no cell has numbers to color.
func (rp *report) heatScale() (s heatScale, ok bool) {
	s = heatScale{lo: math.Inf(1), hi: math.Inf(-1)}
	for _, c := range rp.cells {
		if hasRates(c) && c.Status != matrix.Failed {
			s.lo, s.hi = min(s.lo, c.Measurement.OutputTokensPerSec), max(s.hi, c.Measurement.OutputTokensPerSec)
		}
	}
	return s, !math.IsInf(s.lo, 0)
}

// htmlCounts count the grid's cells by status, for the heat map's legend.
func (rp *report) htmlCounts() []htmlStatusCount {
	counts := rp.statusCounts()
	var out []htmlStatusCount
	for _, s := range reportOrder {
		if counts[s] > 0 {
			out = append(out, htmlStatusCount{Class: classOf(s), Label: shownOf(s), N: counts[s]})
		}
	}
	return out
}

// htmlHighlights are the figures at the top of the page: the peak
// throughput, one request's, the fastest prefill, and the cells by
// status.
func (rp *report) htmlHighlights() []htmlFact {
	var peak, single *matrix.Cell
	for _, c := range rp.cells {
		if !hasRates(c) || c.Status != matrix.Valid {
			continue
		}
		if peak == nil || c.Measurement.OutputTokensPerSec > peak.Measurement.OutputTokensPerSec {
			peak = c
		}
		if c.Concurrency == 1 && (single == nil || c.Measurement.OutputTokensPerSec > single.Measurement.OutputTokensPerSec) {
			single = c
		}
	}
	var out []htmlFact
	if peak != nil {
		out = append(out, htmlFact{Label: "Peak throughput", Value: fmtRate(peak.Measurement.OutputTokensPerSec) + " tok/s",
			Detail: fmt.Sprintf("%d requests at context %s", peak.Concurrency, formatTokens(peak.ContextTokens))})
	}
	if single != nil {
		out = append(out, htmlFact{Label: "One request", Value: fmtRate(single.Measurement.OutputTokensPerSec) + " tok/s",
			Detail: "at context " + formatTokens(single.ContextTokens) + ", " + fmtTTFT(single.Measurement.TTFT.P50) + " TTFT"})
	}
	if best := rp.fastestPrefill(); best != nil {
		out = append(out, htmlFact{Label: "Fastest prefill", Value: fmtPrefillRate(best.PromptTokensPerSec) + " tok/s",
			Detail: "at context " + formatTokens(best.ContextTokens)})
	}
	if len(rp.grid.contexts) > 0 {
		var parts []string
		counts := rp.statusCounts()
		for _, s := range reportOrder {
			if counts[s] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", counts[s], statusText[s].counts))
			}
		}
		out = append(out, htmlFact{Label: "Cells", Value: strconv.Itoa(rp.grid.size()), Detail: strings.Join(parts, " · ")})
	}
	return out
}

// fastestPrefill is the measured prefill row with the highest prompt
// tok/s (the first of the results' rows on a tie), or nil.
func (rp *report) fastestPrefill() *matrix.Prefill {
	var best *matrix.Prefill
	for i, p := range rp.r.Prefill {
		if prefillMeasured(p) && (best == nil || p.PromptTokensPerSec > best.PromptTokensPerSec) {
			best = &rp.r.Prefill[i]
		}
	}
	return best
}

// htmlPrefill is the prefill table, each row's bar as long as its share
// of the fastest row's prompt tok/s.
func (rp *report) htmlPrefill() []htmlBar {
	fastest := 0.0
	if best := rp.fastestPrefill(); best != nil {
		fastest = best.PromptTokensPerSec
	}
	var out []htmlBar
	for _, p := range rp.prefill {
		b := htmlBar{Label: p.label, Failed: !p.measured, Width: "width:0%", Title: cleanText(p.why())}
		b.Value, b.Detail = p.figures()
		if p.measured {
			b.Width = template.CSS(fmt.Sprintf("width:%.1f%%", 100*p.PromptTokensPerSec/fastest))
			b.Title = fmt.Sprintf("%s prompt tokens in %s: %s tok/s",
				fmtInt(p.PromptTokens), fmtTTFT(p.TTFT), fmtRate(p.PromptTokensPerSec))
		}
		out = append(out, b)
	}
	return out
}

// htmlGridCell is the heat-map cell of c (nil when not in the results).
func htmlGridCell(c *matrix.Cell, ctx, n int, scale heatScale) htmlCell {
	if c == nil || c.Status == matrix.StatusUnknown {
		return htmlCell{Class: classOf(matrix.StatusUnknown) + " nonum", Main: shownOf(matrix.StatusUnknown), Title: placeLabel(ctx, n) + " — not run"}
	}
	hc := htmlCell{Class: classOf(c.Status), Status: tokenOf(c.Status), Title: cellTooltip(c)}
	if !hasRates(c) {
		hc.Class += " nonum"
		hc.Main = wordsOf(c.Status)
		switch {
		case c.Measurement != nil && c.Errors > 0:
			hc.Sub = fig.Plural(c.Errors, "error", "errors")
		case c.Measurement != nil:
			hc.Sub = "ran: no output"
		}
		return hc
	}
	// A failed cell keeps its numbers but not the scale's color: they
	// are not a measurement of the server's speed.
	if c.Status != matrix.Failed {
		bg, fg := scale.colors(c.Measurement.OutputTokensPerSec)
		hc.Style = template.CSS("background:" + bg + ";color:" + fg)
	}
	hc.Main = fmtRate(c.Measurement.OutputTokensPerSec)
	if c.Measurement.TTFT.P50 > 0 {
		hc.Sub = fmtTTFT(c.Measurement.TTFT.P50) + " TTFT"
	}
	if e := c.Measurement.Energy; e != nil && e.TokensPerJoule > 0 {
		hc.Sub = strings.TrimPrefix(hc.Sub+" · ", " · ") + fig.Significant(e.TokensPerJoule) + " tok/J"
	}
	var badge []string
	if c.Status != matrix.Valid {
		badge = append(badge, wordsOf(c.Status))
	}
	if c.Measurement.Partial {
		badge = append(badge, "partial")
	}
	if c.Measurement.ClientLimited {
		badge = append(badge, "client-limited")
	}
	if c.Measurement.Noisy != "" {
		badge = append(badge, "noisy")
	}
	if c.Errors > 0 {
		badge = append(badge, fig.Plural(c.Errors, "error", "errors"))
	}
	hc.Badge = strings.Join(badge, " · ")
	return hc
}

// cellTooltip lists every number of a cell, a line each.
func cellTooltip(c *matrix.Cell) string {
	lines := []string{cellLabel(c) + " — " + statusWords(c)}
	if c.Reason != "" {
		lines = append(lines, cleanText(c.Reason))
	}
	if m := c.Measurement; m != nil {
		if hasRates(c) {
			lines = append(lines,
				"Total "+fmtRate(m.OutputTokensPerSec)+" tok/s · per request "+fmtRate(m.PerRequestTokensPerSec)+" tok/s",
				"TTFT "+quantileText(m.TTFT, 0),
				"Time between tokens "+quantileText(m.TBT, 1))
			if m.ITL.P50 > 0 {
				lines = append(lines, "Inter-token gaps "+quantileText(m.ITL, 1))
			}
		}
		lines = append(lines,
			"Average active "+thousands.Float(m.AvgActive, 2)+" · completed "+fmtInt(m.Completed)+
				" · output tokens "+fmtInt(m.OutputTokens),
			"Measured for "+thousands.Float(m.MeasuredS, 1)+" s · warm-up "+thousands.Float(m.WarmupS, 1)+" s")
		if c.Requests > 0 || c.Errors > 0 {
			s := "Requests " + fmtInt(c.Requests) + " · errors " + fmtInt(c.Errors)
			if k := errorkinds.Format(c.ErrorKinds); k != "" {
				s += " (" + k + ")"
			}
			lines = append(lines, s)
		}
		if m.Goodput > 0 {
			lines = append(lines, "Goodput "+thousands.Float(m.Goodput, 2)+" requests/s within the SLO")
		}
		if e := m.Energy; e != nil {
			lines = append(lines, fig.Energy(e))
		}
		if m.SplitRequests > 0 {
			lines = append(lines, splitText(m))
		}
		if s := m.Server; s != nil && s.Count > 0 {
			lines = append(lines, fmt.Sprintf("Server: running %s avg / %s peak · waiting max %s · preemptions %s · KV use max %s%%",
				thousands.Float(s.AvgRunning, 1), thousands.Float(s.PeakRunning, 0), thousands.Float(s.MaxWaiting, 0),
				thousands.Float(s.Preemptions, 0), thousands.Float(100*s.MaxKVUsage, 0)))
		}
		if m.Partial {
			w := partialWords(m)
			lines = append(lines, strings.ToUpper(w[:1])+w[1:])
		}
		if m.ClientLimited {
			lines = append(lines, "The client may have limited it: "+cleanText(m.Client.Reason))
		}
		if m.Noisy != "" {
			lines = append(lines, "Noisy: "+cleanText(m.Noisy))
		}
	}
	v := c.Predicted
	switch {
	case v.Reason == "":
	case v.Fits:
		lines = append(lines, "Plan: fits ("+string(v.Reason)+")")
	case v.AtRisk:
		s := "Plan: over the estimate, at risk (" + string(v.Reason) + ")"
		if d := cleanText(v.Detail); d != "" {
			s += ": " + d
		}
		lines = append(lines, s)
	default:
		s := "Plan: over capacity (" + string(v.Reason) + ")"
		if d := cleanText(v.Detail); d != "" {
			s += ": " + d
		}
		lines = append(lines, s)
	}
	return strings.Join(lines, "\n")
}

// quantileText is "p50 12.2 ms · p90 13.0 ms · p99 15.1 ms", leaving out
// quantiles that are not set.
func quantileText(q matrix.Quantiles, dec int) string {
	var s []string
	for _, x := range []struct {
		name string
		v    float64
	}{{"p50", q.P50}, {"p90", q.P90}, {"p99", q.P99}} {
		if x.v > 0 {
			s = append(s, x.name+" "+thousands.Float(x.v, dec)+" ms")
		}
	}
	if len(s) == 0 {
		return "—"
	}
	return strings.Join(s, " · ")
}

// heatScale maps total tok/s to a color of a perceptually uniform
// (viridis-like) ramp, on a log scale between lo and hi.
type heatScale struct{ lo, hi float64 }

// viridis are the ramp's stops, dark (slow) to bright (fast).
var viridis = [][3]float64{
	{0x44, 0x01, 0x54}, {0x47, 0x2c, 0x7a}, {0x3b, 0x52, 0x8b}, {0x2c, 0x72, 0x8e},
	{0x21, 0x91, 0x8c}, {0x28, 0xae, 0x80}, {0x5e, 0xc9, 0x62}, {0xad, 0xdc, 0x30}, {0xfd, 0xe7, 0x25},
}

// rampColor returns the color at t ∈ [0, 1] of a ramp through stops.
func rampColor(stops [][3]float64, t float64) [3]float64 {
	t = min(max(t, 0), 1) * float64(len(stops)-1)
	i := min(int(t), len(stops)-2)
	f := t - float64(i)
	var c [3]float64
	for k := range c {
		c[k] = stops[i][k] + f*(stops[i+1][k]-stops[i][k])
	}
	return c
}

// hexColor is "#rrggbb".
func hexColor(c [3]float64) string {
	return fmt.Sprintf("#%02x%02x%02x", uint8(math.Round(c[0])), uint8(math.Round(c[1])), uint8(math.Round(c[2])))
}

// textOn is a readable text color on the background c.
func textOn(c [3]float64) string {
	lum := (0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]) / 255
	if lum > 0.45 {
		return "#111111"
	}
	return "#ffffff"
}

// colors returns the background and text color for v.
func (s heatScale) colors(v float64) (bg, fg string) {
	t := 1.0
	if s.hi > s.lo && v > 0 {
		t = (math.Log(v) - math.Log(s.lo)) / (math.Log(s.hi) - math.Log(s.lo))
	}
	c := rampColor(viridis, t)
	return hexColor(c), textOn(c)
}

// rampGradient is a ramp as a left-to-right CSS linear gradient.
func rampGradient(stops [][3]float64) template.CSS {
	parts := make([]string, len(stops))
	for i, c := range stops {
		parts[i] = hexColor(c)
	}
	return template.CSS("background:linear-gradient(to right," + strings.Join(parts, ",") + ")")
}
