// Package chart lays out the line charts llmload's HTML reports draw as
// inline SVG: axes with round ticks (linear, log₂ of levels, or log₁₀),
// and series of points with their tooltips; and [Template], which draws a
// chart it laid out as the matrix's pages show it.
package chart

import (
	_ "embed"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Template is the html/template text that draws a [Chart] as a card of
// inline SVG with its keys: it defines the template "chart", for a page's
// templates to parse beside their own and call with a Chart.
//
//go:embed chart.html.tmpl
var Template string

// Chart is a line chart, laid out in SVG units.
type Chart struct {
	Title, Caption string
	XLabel, YLabel string
	W, H           int
	// The plot area.
	Left, Top, Right, Bottom float64
	XTicks, YTicks           []Tick
	Series                   []Series
	// RefY is the y of a horizontal reference line (a ratio of 1 in a
	// comparison), Mark the x of a vertical one (a search's answer) with
	// its label; negative for none.
	RefY      float64
	Mark      float64
	MarkLabel string
	// Bands are hover areas the height of the plot, each with its
	// tooltip: a time series' values over one span of x.
	Bands []Band
}

// PlotH is the plot area's height.
func (c Chart) PlotH() float64 { return c.Bottom - c.Top }

// MarkLabelBefore reports whether the mark's label is drawn before its
// line, ending there: when, after it, it would run off the chart (at
// about 6.5 units a character of the 12-unit text).
func (c Chart) MarkLabelBefore() bool {
	return c.Mark+4+6.5*float64(utf8.RuneCountInString(c.MarkLabel)) > float64(c.W)
}

// Band is a hover area from X, W wide, with its tooltip.
type Band struct {
	X, W  float64
	Title string
}

// Tick is an axis tick: its position and label.
type Tick struct {
	Pos   float64
	Label string
}

// Series is one line of a chart.
type Series struct {
	Name, Color string
	Points      string // the polyline's "x,y x,y …"
	Dots        []Dot
}

// Dot is one point of a series, with its tooltip; Hollow marks a point
// drawn open (a cell that was not Valid, or changed status).
type Dot struct {
	X, Y   float64
	Title  string
	Hollow bool
}

// Point is a value to plot, in the data's units.
type Point struct {
	X, Y   float64
	Title  string
	Hollow bool
}

// Colors are the series' colors (Tableau 10), readable on light and dark
// backgrounds.
var Colors = []string{
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
}

// New returns an empty chart of the reports' size, 640 × 330.
func New(title, caption, xLabel, yLabel string) Chart {
	return Chart{Title: title, Caption: caption, XLabel: xLabel, YLabel: yLabel,
		W: 640, H: 330, Left: 64, Top: 30, Right: 624, Bottom: 286, RefY: -1, Mark: -1}
}

// XLinear sets a linear x axis from 0 past hi, ticked at round steps, and
// returns its scale.
func (c *Chart) XLinear(hi float64, label func(float64) string) func(float64) float64 {
	step := NiceStep(hi / 6)
	top := math.Max(math.Ceil(hi/step)*step, step)
	x := func(v float64) float64 { return c.Left + v/top*(c.Right-c.Left) }
	for i := 0.0; i*step <= top*1.0001 && i <= 20; i++ {
		c.XTicks = append(c.XTicks, Tick{Pos: round1(x(i * step)), Label: label(i * step)})
	}
	return x
}

// XLevels sets an x axis of levels (such as requests at once, at least 1)
// on a log₂ scale, ticked at each, and returns its scale.
func (c *Chart) XLevels(levels []int) func(float64) float64 {
	lg := func(v float64) float64 { return math.Log2(max(v, 1)) }
	lo, hi := lg(float64(levels[0])), lg(float64(levels[len(levels)-1]))
	x := func(v float64) float64 {
		if hi == lo {
			return (c.Left + c.Right) / 2
		}
		return c.Left + 12 + (lg(v)-lo)/(hi-lo)*(c.Right-c.Left-24)
	}
	for _, n := range levels {
		c.XTicks = append(c.XTicks, Tick{Pos: x(float64(n)), Label: strconv.Itoa(n)})
	}
	return x
}

// YLinear sets a linear y axis from 0 past hi, ticked at round steps, and
// returns its scale.
func (c *Chart) YLinear(hi float64, label func(float64) string) func(float64) float64 {
	step := NiceStep(hi / 5)
	top := math.Ceil(hi/step) * step
	if top == 0 {
		top = 1
	}
	y := func(v float64) float64 { return c.Bottom - v/top*(c.Bottom-c.Top) }
	for i := 0.0; i*step <= top*1.0001 && i <= 20; i++ {
		c.YTicks = append(c.YTicks, Tick{Pos: round1(y(i * step)), Label: label(i * step)})
	}
	return y
}

// YLog sets a log₁₀ y axis around lo to hi (both positive), ticked at 1,
// 2 and 5 × 10ⁿ, and returns its scale; a value at or below 0 is drawn at
// the bottom.
func (c *Chart) YLog(lo, hi float64, label func(float64) string) func(float64) float64 {
	a, b := math.Floor(math.Log10(lo)*10)/10, math.Ceil(math.Log10(hi)*10)/10
	if b-a < 0.2 {
		a, b = a-0.1, b+0.1
	}
	y := func(v float64) float64 {
		return c.Bottom - (math.Log10(max(v, math.Pow(10, a)))-a)/(b-a)*(c.Bottom-c.Top)
	}
	for _, t := range LogTicks(math.Pow(10, a), math.Pow(10, b)) {
		c.YTicks = append(c.YTicks, Tick{Pos: round1(y(t)), Label: label(t)})
	}
	return y
}

// Add adds a series of points, placed by the scales x and y, in the
// color-th of Colors (so that a series keeps its color in every chart of a
// page, whichever others are empty).
func (c *Chart) Add(name string, color int, pts []Point, x, y func(float64) float64) {
	s := Series{Name: name, Color: Colors[color%len(Colors)]}
	xy := make([]string, len(pts))
	for i, p := range pts {
		px, py := x(p.X), y(p.Y)
		xy[i] = fmt.Sprintf("%.1f,%.1f", px, py)
		s.Dots = append(s.Dots, Dot{X: round1(px), Y: round1(py), Title: p.Title, Hollow: p.Hollow})
	}
	s.Points = strings.Join(xy, " ")
	c.Series = append(c.Series, s)
}

// NiceStep rounds a tick step up to 1, 2 or 5 × 10ⁿ.
func NiceStep(raw float64) float64 {
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

// LogTicks are the values 1, 2, 5 × 10ⁿ within [lo, hi], thinned to at
// most seven; evenly spaced values where that gives fewer than three.
func LogTicks(lo, hi float64) []float64 {
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
		step := NiceStep((hi - lo) / 4)
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

func round1(v float64) float64 { return math.Round(v*10) / 10 }
