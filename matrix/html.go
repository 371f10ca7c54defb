package matrix

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/llmload/llmload/metrics"
)

//go:embed report.html.tmpl
var htmlSource string

// htmlTemplates holds the results page, the comparison page and the parts
// they share. html/template escapes every string that reaches the page.
var htmlTemplates = template.Must(template.New("report").Parse(htmlSource))

// WriteHTML writes the results as one self-contained HTML page: inline CSS
// and SVG, no scripts, fonts or anything else fetched from the network. It
// shows the run's facts, the decode grid as a heat map colored by total
// tok/s (status-colored where a cell is over capacity, queued, failed or
// not run; every cell's numbers in its tooltip), charts of total and
// per-request tok/s against concurrency, the prefill table and the "All
// measurements" table. It reads well in light and dark mode.
func (r *Results) WriteHTML(w io.Writer) error {
	if err := htmlTemplates.ExecuteTemplate(w, "results", r.htmlPage()); err != nil {
		return fmt.Errorf("matrix: write HTML: %w", err)
	}
	return nil
}

// htmlFact is a labelled value on the page.
type htmlFact struct{ Label, Value, Detail string }

// htmlCell is one heat-map cell.
type htmlCell struct {
	Class  string       // valid, queued, over, failed, notrun
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
	Charts      []svgChart
	Prefill     []htmlBar
	Legend      []string
	Notes       []string
	GridNote    string // why there is no heat map, when the cells are too sparse for one
	LongHead    []string
	LongRows    [][]string
}

// htmlPage gathers what the results page shows.
func (r *Results) htmlPage() htmlResultsPage {
	h := r.header()
	g := newReportGrid(r)
	p := htmlResultsPage{Title: h.Title + " — " + h.Model, H: h, Concurrency: g.concurrency}

	if h.Server != "" {
		p.Facts = append(p.Facts, htmlFact{Label: "Server", Value: h.Server})
	}
	if h.Shape != "" {
		p.Facts = append(p.Facts, htmlFact{Label: "Matrix", Value: h.Shape})
	}
	if r.Spec.Duration > 0 {
		p.Facts = append(p.Facts, htmlFact{Label: "Time per measurement", Value: fmtSeconds(time.Duration(r.Spec.Duration))})
	}
	if r.Spec.MaxTokens > 0 {
		p.Facts = append(p.Facts, htmlFact{Label: "Max output", Value: fmtInt(r.Spec.MaxTokens) + " tokens"})
	}
	if l := r.Server.Limits; l.Known() {
		p.Facts = append(p.Facts, htmlFact{Label: "Capacity", Value: strings.TrimPrefix(h.Limits, "capacity: ")})
	}
	if !r.Started.IsZero() {
		v := r.Started.UTC().Format("2006-01-02 15:04 UTC")
		if !r.Finished.IsZero() {
			v += " · took " + r.Finished.Sub(r.Started).Round(time.Second).String()
		}
		p.Facts = append(p.Facts, htmlFact{Label: "Started", Value: v})
	}
	if h.Progress != "" {
		p.Facts = append(p.Facts, htmlFact{Label: "Run", Value: h.Progress})
	}

	// The color scale spans the measured total tok/s, on a log scale so
	// that long contexts are not all one color.
	lo, hi := math.Inf(1), math.Inf(-1)
	var peak, single *Cell
	for _, c := range g.ordered() {
		if !hasRates(c) || c.Status == Failed {
			continue
		}
		lo, hi = min(lo, c.TotalTokS), max(hi, c.TotalTokS)
		if c.Status == Valid && (peak == nil || c.TotalTokS > peak.TotalTokS) {
			peak = c
		}
		if c.Status == Valid && c.Concurrency == 1 && (single == nil || c.TotalTokS > single.TotalTokS) {
			single = c
		}
	}
	scale := heatScale{lo: lo, hi: hi}
	p.ScaleCSS = rampGradient(viridis)
	if !math.IsInf(lo, 0) {
		p.ScaleMin, p.ScaleMax = fmtRate(lo), fmtRate(hi)
	}

	drawn := g.drawn()
	if !drawn && len(g.contexts) > 0 {
		p.GridNote = sparseNote(len(g.cells), len(g.contexts), len(g.concurrency))
	}
	for _, ctx := range g.contexts {
		if !drawn {
			break
		}
		row := htmlRow{Context: g.rowLabel(ctx)}
		for _, n := range g.concurrency {
			row.Cells = append(row.Cells, htmlGridCell(g.at(ctx, n), ctx, n, scale))
		}
		p.Rows = append(p.Rows, row)
	}
	counts := g.statusCounts()
	for _, s := range []struct {
		st    Status
		class string
	}{{Valid, "valid"}, {RequestsQueued, "queued"}, {OverCapacity, "over"}, {Failed, "failed"}, {StatusUnknown, "notrun"}} {
		if counts[s.st] > 0 {
			label := s.st.String()
			if s.st == StatusUnknown {
				label = notRunWords
			}
			p.Counts = append(p.Counts, htmlStatusCount{Class: s.class, Label: label, N: counts[s.st]})
		}
	}

	if peak != nil {
		p.Highlights = append(p.Highlights, htmlFact{Label: "Peak throughput", Value: fmtRate(peak.TotalTokS) + " tok/s",
			Detail: fmt.Sprintf("%d requests at context %s", peak.Concurrency, FormatTokens(peak.ContextTokens))})
	}
	if single != nil {
		p.Highlights = append(p.Highlights, htmlFact{Label: "One request", Value: fmtRate(single.TotalTokS) + " tok/s",
			Detail: "at context " + FormatTokens(single.ContextTokens) + ", " + fmtTTFT(single.TTFTms.P50) + " TTFT"})
	}
	var bestPrefill *Prefill
	maxPrefill := 0.0
	for i, pf := range r.Prefill {
		if prefillMeasured(pf) && pf.PromptTokS > maxPrefill {
			bestPrefill, maxPrefill = &r.Prefill[i], pf.PromptTokS
		}
	}
	if bestPrefill != nil {
		p.Highlights = append(p.Highlights, htmlFact{Label: "Fastest prefill", Value: fmtPrefillRate(bestPrefill.PromptTokS) + " tok/s",
			Detail: "at context " + FormatTokens(bestPrefill.ContextTokens)})
	}
	if len(g.contexts) > 0 {
		var parts []string
		for _, c := range p.Counts {
			label := strings.ToLower(c.Label)
			if c.Class == "queued" {
				label = "queued"
			}
			parts = append(parts, fmt.Sprintf("%d %s", c.N, label))
		}
		p.Highlights = append(p.Highlights, htmlFact{Label: "Cells",
			Value: strconv.Itoa(g.size()), Detail: strings.Join(parts, " · ")})
	}

	for _, pf := range sortedPrefill(r.Prefill) {
		why := pf.Reason
		if why == "" {
			why = pf.Error
		}
		b := htmlBar{Label: sizeLabel(pf.ContextTokens, pf.PromptTokens), Value: prefillStatusWords(pf), Detail: "—", Failed: true,
			Width: "width:0%", Title: cleanText(why)}
		if prefillMeasured(pf) {
			b.Value, b.Detail, b.Failed = fmtPrefillRate(pf.PromptTokS), fmtTTFT(pf.TTFTms), false
			b.Width = template.CSS(fmt.Sprintf("width:%.1f%%", 100*pf.PromptTokS/maxPrefill))
			b.Title = fmt.Sprintf("%s prompt tokens in %s: %s tok/s",
				fmtInt(pf.PromptTokens), fmtTTFT(pf.TTFTms), fmtRate(pf.PromptTokS))
		}
		p.Prefill = append(p.Prefill, b)
	}

	if drawn {
		p.Charts = r.charts(g)
	}
	p.Legend = r.legend()
	p.Notes = append(h.Notes, r.cellNotes()...)
	p.LongHead = []string{"Phase", "Context", "Requests at once", "Status", "Total tok/s", "Per request tok/s",
		"TTFT", "Time between tokens", "Average active requests", "Completed requests", "Output tokens", "Measured for"}
	p.LongRows = r.longRows()
	return p
}

// htmlGridCell is the heat-map cell of c (nil when not in the results).
func htmlGridCell(c *Cell, ctx, n int, scale heatScale) htmlCell {
	label := FormatTokens(ctx) + " × " + strconv.Itoa(n)
	if c == nil || c.Status == StatusUnknown {
		return htmlCell{Class: "notrun nonum", Main: notRunWords, Title: label + " — not run"}
	}
	status, _ := c.Status.MarshalText()
	hc := htmlCell{Status: string(status), Title: cellTooltip(c)}
	switch c.Status {
	case Valid:
		hc.Class = "valid"
	case RequestsQueued:
		hc.Class = "queued"
	case OverCapacity:
		hc.Class = "over"
	case Failed:
		hc.Class = "failed"
	}
	if !hasRates(c) {
		hc.Class += " nonum"
		hc.Main = c.Status.String()
		switch {
		case c.Measurement != nil && c.Errors > 0:
			hc.Sub = plural(c.Errors, "error", "errors")
		case c.Measurement != nil:
			hc.Sub = "ran: no output"
		}
		return hc
	}
	// A failed cell keeps its numbers but not the scale's color: they
	// are not a measurement of the server's speed.
	if c.Status != Failed {
		bg, fg := scale.colors(c.TotalTokS)
		hc.Style = template.CSS("background:" + bg + ";color:" + fg)
	}
	hc.Main = fmtRate(c.TotalTokS)
	if c.TTFTms.P50 > 0 {
		hc.Sub = fmtTTFT(c.TTFTms.P50) + " TTFT"
	}
	var badge []string
	if c.Status != Valid {
		badge = append(badge, c.Status.String())
	}
	if c.Partial {
		badge = append(badge, "partial")
	}
	if c.ClientLimited {
		badge = append(badge, "client-limited")
	}
	if c.Errors > 0 {
		badge = append(badge, plural(c.Errors, "error", "errors"))
	}
	hc.Badge = strings.Join(badge, " · ")
	return hc
}

// cellTooltip lists every number of a cell, a line each.
func cellTooltip(c *Cell) string {
	lines := []string{cellLabel(c) + " — " + statusWords(c)}
	if c.Reason != "" {
		lines = append(lines, cleanText(c.Reason))
	}
	if m := c.Measurement; m != nil {
		if hasRates(c) {
			lines = append(lines,
				"Total "+fmtRate(m.TotalTokS)+" tok/s · per request "+fmtRate(m.PerRequestTokS)+" tok/s",
				"TTFT "+quantileText(m.TTFTms, 0),
				"Time between tokens "+quantileText(m.TBTms, 1))
			if m.ITLms.P50 > 0 {
				lines = append(lines, "Inter-token gaps "+quantileText(m.ITLms, 1))
			}
		}
		lines = append(lines,
			"Average active "+numGroup(m.AvgActive, 2)+" · completed "+fmtInt(m.Completed)+
				" · output tokens "+fmtInt(m.OutputTokens),
			"Measured for "+numGroup(m.MeasuredS, 1)+" s · warm-up "+numGroup(m.WarmupS, 1)+" s")
		if c.Requests > 0 || c.Errors > 0 {
			s := "Requests " + fmtInt(c.Requests) + " · errors " + fmtInt(c.Errors)
			if k := metrics.FormatErrorKinds(c.ErrorKinds); k != "" {
				s += " (" + k + ")"
			}
			lines = append(lines, s)
		}
		if m.Goodput > 0 {
			lines = append(lines, "Goodput "+numGroup(m.Goodput, 2)+" requests/s within the SLO")
		}
		if s := m.Server; s != nil && s.Count > 0 {
			lines = append(lines, fmt.Sprintf("Server: running %s avg / %s peak · waiting max %s · preemptions %s · KV use max %s%%",
				numGroup(s.AvgRunning, 1), numGroup(s.PeakRunning, 0), numGroup(s.MaxWaiting, 0),
				numGroup(s.Preemptions, 0), numGroup(100*s.MaxKVUsage, 0)))
		}
		if m.Partial {
			w := partialWords(m)
			lines = append(lines, strings.ToUpper(w[:1])+w[1:])
		}
		if m.ClientLimited {
			lines = append(lines, "The client may have limited it: "+cleanText(m.Client.Reason))
		}
	}
	v := c.Predicted
	switch {
	case v.Reason == 0:
	case v.Fits:
		lines = append(lines, "Plan: fits ("+v.Reason.String()+")")
	default:
		s := "Plan: over capacity (" + v.Reason.String() + ")"
		if d := cleanText(v.Detail); d != "" {
			s += ": " + d
		}
		lines = append(lines, s)
	}
	return strings.Join(lines, "\n")
}

// quantileText is "p50 12.2 ms · p90 13.0 ms · p99 15.1 ms", leaving out
// quantiles that are not set.
func quantileText(q Quantiles, dec int) string {
	var s []string
	for _, x := range []struct {
		name string
		v    float64
	}{{"p50", q.P50}, {"p90", q.P90}, {"p99", q.P99}} {
		if x.v > 0 {
			s = append(s, x.name+" "+numGroup(x.v, dec)+" ms")
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
