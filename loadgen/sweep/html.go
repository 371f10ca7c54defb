package sweep

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/metrics"
)

//go:embed report.html.tmpl
var reportHTML string

var htmlTemplate = template.Must(template.New("report").Parse(reportHTML))

// WriteHTML writes the results as a page of its own: the runs' table and,
// for two runs or more, latency–throughput curves (time to first token,
// time per output token and end-to-end latency, median and 99th
// percentile, against each run's Capacity, the requests a second its
// output rate stands for), with a search's answer marked. Latencies that
// span more than a factor of 30 are drawn on a logarithmic scale.
func (r *Results) WriteHTML(w io.Writer) error {
	page := htmlPage{Title: r.what(), Server: r.Server.describe()}
	for _, n := range r.Notes {
		page.Notes = append(page.Notes, textsafe.Line(n))
	}
	for i := range r.Runs {
		if why := r.Runs[i].ClientLimited; why != "" {
			page.Notes = append(page.Notes, fmt.Sprintf("%s: the client may have limited this run (%s): its figures may be the client's, not the server's.", r.Runs[i].name(), textsafe.Line(why)))
		}
		if why := r.Runs[i].OverCapacity; why != "" {
			page.Notes = append(page.Notes, fmt.Sprintf("%s: over capacity, %s.", r.Runs[i].name(), textsafe.Line(why)))
		}
	}
	if r.Objective != nil {
		page.Objective = r.Objective.String()
	}
	if f := r.Search; f != nil {
		if f.Rate > 0 {
			page.Answer = fmt.Sprintf("Highest rate meeting the objective: %.4g req/s — %s.", f.Rate, f.Reason)
		} else {
			page.Answer = "No rate met the objective — " + f.Reason + "."
		}
	}
	for _, run := range r.Runs {
		s := &run.Summary
		row := htmlRow{Label: run.name(), Requests: run.Requests, Failed: s.Failed,
			RequestRate: fmt.Sprintf("%.2f", run.RequestRate), OutputTokS: fmt.Sprintf("%.1f", run.OutputTokensPerSec)}
		for _, d := range []metrics.Distribution{s.TTFT, s.TPOT, s.ITL, s.Latency} {
			row.Cells = append(row.Cells, ms(d.Mean), ms(d.P50), ms(d.P99))
		}
		if r.Objective != nil {
			row.Goodput = fmt.Sprintf("%.2f", s.Goodput)
			row.Met = fmt.Sprintf("%s, %.0f%%", yesNo(run.Met), run.GoodShare*100)
		}
		page.Rows = append(page.Rows, row)
	}
	page.HasObjective = r.Objective != nil
	if len(r.Runs) >= 2 {
		page.Charts = r.curves()
	}
	return htmlTemplate.Execute(w, page)
}

type htmlPage struct {
	Title, Server, Objective, Answer string
	HasObjective                     bool
	Notes                            []string
	Rows                             []htmlRow
	Charts                           []chart
}

type htmlRow struct {
	Label                   string
	Requests, Failed        int
	RequestRate, OutputTokS string
	Cells                   []string
	Goodput, Met            string
}

// chart is a line chart drawn as inline SVG.
type chart struct {
	Title, Caption           string
	W, H                     int
	Left, Top, Right, Bottom float64
	XTicks, YTicks           []tick
	XLabel, YLabel           string
	Series                   []series
	// Mark is the x of a search's answer, or negative.
	Mark      float64
	MarkLabel string
}

type tick struct {
	Pos   float64
	Label string
}

type series struct {
	Name, Color string
	Points      string
	Dots        []dot
}

type dot struct {
	X, Y  float64
	Title string
}

var colors = []string{"#4e79a7", "#e15759", "#59a14f", "#f28e2b"}

// curves are the latency–throughput curves of the runs, by request rate.
func (r *Results) curves() []chart {
	runs := slices.Clone(r.Runs)
	runs = slices.DeleteFunc(runs, func(x Result) bool { return x.Capacity <= 0 })
	slices.SortStableFunc(runs, func(a, b Result) int {
		switch {
		case a.Capacity < b.Capacity:
			return -1
		case a.Capacity > b.Capacity:
			return 1
		}
		return 0
	})
	if len(runs) < 2 {
		return nil
	}
	mark := -1.0
	if r.Search != nil && r.Search.Rate > 0 {
		mark = r.Search.Rate
	}
	var charts []chart
	for _, c := range []struct {
		title, caption string
		of             func(*metrics.Summary) metrics.Distribution
	}{
		{"Time to first token", "from the request written to its first token", func(s *metrics.Summary) metrics.Distribution { return s.TTFT }},
		{"Time per output token", "after the first, over completed requests", func(s *metrics.Summary) metrics.Distribution { return s.TPOT }},
		{"End-to-end latency", "from the request written to its last token", func(s *metrics.Summary) metrics.Distribution { return s.Latency }},
	} {
		var xs []float64
		vals := [2][]float64{}
		titles := [2][]string{}
		for _, run := range runs {
			d := c.of(&run.Summary)
			xs = append(xs, run.Capacity)
			for i, v := range []time.Duration{d.P50, d.P99} {
				msv := float64(v) / float64(time.Millisecond)
				vals[i] = append(vals[i], msv)
				titles[i] = append(titles[i], fmt.Sprintf("%s: %.2f req/s, %s %.2f ms", textsafe.Line(run.Label), run.Capacity, []string{"p50", "p99"}[i], msv))
			}
		}
		charts = append(charts, newChart(c.title, c.caption, xs, []string{"median", "99th percentile"}, vals[:], titles[:], mark))
	}
	return charts
}

// newChart lays out a chart of series of values at xs: x linear from 0,
// y linear from 0, or logarithmic when the values span more than a
// factor of logSpan.
func newChart(title, caption string, xs []float64, names []string, vals [][]float64, titles [][]string, mark float64) chart {
	ch := chart{Title: title, Caption: caption, W: 640, H: 330, Left: 64, Top: 30, Right: 624, Bottom: 286,
		XLabel: "requests a second", YLabel: "ms", Mark: -1}
	xMax := slices.Max(xs)
	if mark > 0 {
		xMax = max(xMax, mark)
	}
	yMin, yMax := math.Inf(1), 0.0
	for _, v := range vals {
		yMax = max(yMax, slices.Max(v))
		for _, f := range v {
			if f > 0 {
				yMin = min(yMin, f)
			}
		}
	}
	xStep := niceStep(xMax / 6)
	xTop := math.Max(math.Ceil(xMax/xStep)*xStep, xStep)
	x := func(v float64) float64 { return ch.Left + v/xTop*(ch.Right-ch.Left) }
	for i := 0.0; i*xStep <= xTop*1.0001 && i <= 20; i++ {
		ch.XTicks = append(ch.XTicks, tick{Pos: round1(x(i * xStep)), Label: trimFloat(i * xStep)})
	}
	var y func(float64) float64
	if yMax > logSpan*yMin {
		ch.YLabel = "ms (log)"
		lo, hi := math.Floor(math.Log10(yMin)), math.Ceil(math.Log10(yMax))
		y = func(v float64) float64 {
			return ch.Bottom - (math.Log10(max(v, math.Pow(10, lo)))-lo)/(hi-lo)*(ch.Bottom-ch.Top)
		}
		for e := lo; e <= hi; e++ {
			for _, m := range []float64{1, 2, 5} {
				if v := m * math.Pow(10, e); v <= math.Pow(10, hi)*1.0001 && (m == 1 || hi-lo <= 3) {
					ch.YTicks = append(ch.YTicks, tick{Pos: round1(y(v)), Label: trimFloat(v)})
				}
			}
		}
	} else {
		yStep := niceStep(yMax / 5)
		yTop := math.Max(math.Ceil(yMax/yStep)*yStep, yStep)
		y = func(v float64) float64 { return ch.Bottom - v/yTop*(ch.Bottom-ch.Top) }
		for i := 0.0; i*yStep <= yTop*1.0001 && i <= 20; i++ {
			ch.YTicks = append(ch.YTicks, tick{Pos: round1(y(i * yStep)), Label: trimFloat(i * yStep)})
		}
	}
	for i, v := range vals {
		s := series{Name: names[i], Color: colors[i%len(colors)]}
		pts := make([]string, len(v))
		for k := range v {
			px, py := x(xs[k]), y(v[k])
			pts[k] = fmt.Sprintf("%.1f,%.1f", px, py)
			s.Dots = append(s.Dots, dot{X: math.Round(px*10) / 10, Y: math.Round(py*10) / 10, Title: titles[i][k]})
		}
		s.Points = strings.Join(pts, " ")
		ch.Series = append(ch.Series, s)
	}
	if mark > 0 {
		ch.Mark = math.Round(x(mark)*10) / 10
		ch.MarkLabel = fmt.Sprintf("highest rate meeting the objective: %.4g req/s", mark)
	}
	return ch
}

// logSpan is the ratio of a chart's largest latency to its smallest above
// which its y axis is logarithmic.
const logSpan = 30

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

func round1(v float64) float64 { return math.Round(v*10) / 10 }

func trimFloat(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}
