package matrix

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// svgChart is a line chart drawn as inline SVG by the HTML reports.
type svgChart struct {
	Title, Caption string
	XLabel, YLabel string
	W, H           int
	// The plot area, in SVG units.
	Left, Top, Right, Bottom float64
	XTicks, YTicks           []svgTick
	Series                   []svgSeries
	// RefY is the y of a reference line (a ratio of 1 in comparisons), or
	// negative for none.
	RefY float64
}

// svgTick is an axis tick: its position and label.
type svgTick struct {
	Pos   float64
	Label string
}

// svgSeries is one line of a chart.
type svgSeries struct {
	Name, Color string
	Points      string // the polyline's "x,y x,y …"
	Dots        []svgDot
}

// svgDot is one data point, with its tooltip; Hollow marks a point whose
// cell was not Valid.
type svgDot struct {
	X, Y   float64
	Title  string
	Hollow bool
}

// seriesColors are the lines' colors (Tableau 10), readable on light and
// dark backgrounds.
var seriesColors = []string{
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
}

// chartPoint is a value to plot at a concurrency level.
type chartPoint struct {
	n      int
	v      float64
	title  string
	hollow bool
}

// newConcurrencyChart lays out a chart of values against concurrency (a
// log₂ axis), one series per name. The y axis is linear from 0, or log₁₀
// when logY is set.
func newConcurrencyChart(title, caption, ylabel string, concurrency []int, names []string,
	series [][]chartPoint, format func(float64) string, logY bool) svgChart {
	ch := svgChart{Title: title, Caption: caption, XLabel: "requests at once", YLabel: ylabel,
		W: 640, H: 330, Left: 64, Top: 30, Right: 624, Bottom: 286, RefY: -1}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, p := range s {
			lo, hi = min(lo, p.v), max(hi, p.v)
		}
	}
	if math.IsInf(lo, 0) {
		return ch
	}
	// Concurrency is at least 1; a level below (from a damaged file) is
	// drawn at 1.
	lg := func(n int) float64 { return math.Log2(float64(max(n, 1))) }
	nMin, nMax := lg(concurrency[0]), lg(concurrency[len(concurrency)-1])
	x := func(n int) float64 {
		if nMax == nMin {
			return (ch.Left + ch.Right) / 2
		}
		f := (lg(n) - nMin) / (nMax - nMin)
		return ch.Left + 12 + f*(ch.Right-ch.Left-24)
	}
	for _, n := range concurrency {
		ch.XTicks = append(ch.XTicks, svgTick{Pos: x(n), Label: strconv.Itoa(n)})
	}

	var y func(v float64) float64
	if logY {
		// Decades (and 2, 5 within them when the range is short) around
		// the values, with a ratio of 1 in the middle when there is one.
		a, b := math.Floor(math.Log10(lo)*10)/10, math.Ceil(math.Log10(hi)*10)/10
		if b-a < 0.2 {
			a, b = a-0.1, b+0.1
		}
		y = func(v float64) float64 { return ch.Bottom - (math.Log10(v)-a)/(b-a)*(ch.Bottom-ch.Top) }
		for _, t := range logTicks(math.Pow(10, a), math.Pow(10, b)) {
			ch.YTicks = append(ch.YTicks, svgTick{Pos: y(t), Label: format(t)})
		}
	} else {
		step := niceStep(hi / 5)
		top := math.Ceil(hi/step) * step
		if top == 0 {
			top = 1
		}
		y = func(v float64) float64 { return ch.Bottom - v/top*(ch.Bottom-ch.Top) }
		for i := 0.0; i*step <= top*1.0001 && i <= 20; i++ {
			ch.YTicks = append(ch.YTicks, svgTick{Pos: y(i * step), Label: format(i * step)})
		}
	}
	if logY {
		ch.RefY = y(1)
		if ch.RefY < ch.Top || ch.RefY > ch.Bottom {
			ch.RefY = -1
		}
	}

	for i, s := range series {
		if len(s) == 0 {
			continue
		}
		ss := svgSeries{Name: names[i], Color: seriesColors[i%len(seriesColors)]}
		var pts []string
		for _, p := range s {
			px, py := x(p.n), y(p.v)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, py))
			ss.Dots = append(ss.Dots, svgDot{X: math.Round(px*10) / 10, Y: math.Round(py*10) / 10, Title: p.title, Hollow: p.hollow})
		}
		ss.Points = strings.Join(pts, " ")
		ch.Series = append(ch.Series, ss)
	}
	return ch
}

// niceStep rounds a tick step up to 1, 2 or 5 × 10ⁿ.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// logTicks are the values 1, 2, 5 × 10ⁿ within [lo, hi], thinned to at
// most seven; evenly spaced values where that gives fewer than three.
func logTicks(lo, hi float64) []float64 {
	var out []float64
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)) && len(out) < 2000; e++ {
		for _, m := range []float64{1, 2, 5} {
			if v := m * math.Pow(10, e); v >= lo*0.999 && v <= hi*1.001 {
				out = append(out, v)
			}
		}
	}
	if len(out) < 3 {
		// A short range, such as ratios of 0.9–1.2: evenly spaced ticks.
		out = out[:0]
		step := niceStep((hi - lo) / 4)
		first := math.Ceil(lo/step) * step
		for i := 0.0; first+i*step <= hi*1.0001 && i <= 20; i++ {
			out = append(out, first+i*step)
		}
	}
	for len(out) > 7 {
		thin := out[:0:0]
		for i, v := range out {
			if i%2 == 0 {
				thin = append(thin, v)
			}
		}
		out = thin
	}
	return out
}

// charts are the results page's charts: total tok/s and per-request tok/s
// against concurrency, a line per context.
func (rp *report) charts() []svgChart {
	g := rp.grid
	if len(g.concurrency) == 0 {
		return nil
	}
	var names []string
	var total, perReq [][]chartPoint
	for _, ctx := range g.contexts {
		var t, p []chartPoint
		for _, n := range g.concurrency {
			c := g.at(ctx, n)
			if !hasRates(c) || (c.Status != Valid && c.Status != RequestsQueued) {
				continue
			}
			hollow := c.Status != Valid || c.Measurement.Partial
			label := cellLabel(c)
			if c.Status != Valid {
				label += " (" + strings.ToLower(c.Status.String()) + ")"
			}
			t = append(t, chartPoint{n: n, v: c.Measurement.TotalTokensPerSec, hollow: hollow,
				title: label + ": " + fmtRate(c.Measurement.TotalTokensPerSec) + " tok/s total"})
			if c.Measurement.PerRequestTokensPerSec > 0 {
				p = append(p, chartPoint{n: n, v: c.Measurement.PerRequestTokensPerSec, hollow: hollow,
					title: label + ": " + fmtRate(c.Measurement.PerRequestTokensPerSec) + " tok/s per request"})
			}
		}
		names = append(names, "context "+FormatTokens(ctx))
		total, perReq = append(total, t), append(perReq, p)
	}
	rate := func(v float64) string { return numGroup(v, 0) }
	return []svgChart{
		newConcurrencyChart("Total tok/s", "output across all simultaneous requests; hollow points were not Valid",
			"tok/s", g.concurrency, names, total, rate, false),
		newConcurrencyChart("Per-request tok/s", "median over requests of 1 ÷ time between tokens",
			"tok/s", g.concurrency, names, perReq, rate, false),
	}
}
