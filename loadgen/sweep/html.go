package sweep

import (
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/llmload/llmload/internal/chart"
	"github.com/llmload/llmload/internal/seriesview"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

//go:embed report.html.tmpl
var reportHTML string

// htmlTemplate is the page, its charts drawn by chart.Template as the
// matrix's pages draw theirs.
var htmlTemplate = template.Must(template.Must(template.New("report").Parse(chart.Template)).Parse(reportHTML))

// writeHTML writes the results as a page of its own (see [Results.Write]).
func (r *Results) writeHTML(w io.Writer) error {
	page := htmlPage{Title: r.what(), Server: textsafe.Line(r.Server.String())}
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
		page.Answer = f.answer()
	}
	page.Pooled = r.pooled()
	for _, run := range withModels(r.Runs) {
		s := &run.Summary
		row := htmlRow{Label: run.name(), Requests: run.Requests, Completed: s.Completed, Failed: s.Failed,
			RequestRate: fmt.Sprintf("%.2f", run.RequestRate), OutputTokS: fmt.Sprintf("%.1f", run.OutputTokensPerSec)}
		ds := []metrics.Distribution{s.TTFT, s.TPOT, s.ITL, s.Latency}
		if page.Pooled {
			row.OutputTokS = fmt.Sprintf("%.1f", run.InputTokensPerSec)
			ds = ds[3:]
		}
		for _, d := range ds {
			row.Cells = append(row.Cells, ms(d.Mean), ms(d.P50), ms(d.P99))
		}
		if r.Objective != nil {
			row.Goodput = fmt.Sprintf("%.2f", s.Goodput)
			row.Met = fmt.Sprintf("%s, %.0f%%", yesNo(run.Met), run.GoodShare*100)
		}
		row.Energy = []string{"—", "—", "—", "—", "—"}
		if e := run.Energy; e != nil {
			page.HasEnergy = true
			row.Energy = []string{fmt.Sprintf("%.1f", e.Joules), fmt.Sprintf("%.1f", e.MeanWatts),
				perToken(e.TokensPerJoule), perToken(e.JoulesPerToken), "—"}
			if e.HourlyCost > 0 {
				page.HasCost = true
				row.Energy[4] = perToken(e.DollarsPerMillionTokens)
			}
		}
		page.Rows = append(page.Rows, row)
	}
	for i := range page.Rows {
		if !page.HasCost {
			page.Rows[i].Energy = page.Rows[i].Energy[:4]
		}
	}
	page.HasObjective = r.Objective != nil
	if len(r.Runs) >= 2 {
		page.Charts = r.curves()
	}
	for _, run := range r.Runs {
		if run.Series == nil {
			continue
		}
		most := 1.0
		if c, ok := run.Load.(loadgen.Closed); ok {
			most = float64(c.Streams)
		}
		if caption, charts := seriesview.Charts(run.Series, most); len(charts) > 0 {
			page.Series = append(page.Series, htmlSeries{Label: run.name(), Caption: caption, Charts: charts})
		}
	}
	return htmlTemplate.Execute(w, page)
}

type htmlPage struct {
	Title, Server, Objective, Answer string
	HasObjective                     bool
	Pooled                           bool // Embeddings or Rerank: input tokens and latency alone
	HasEnergy, HasCost               bool // a run has the GPUs' energy; one has a cost
	Notes                            []string
	Rows                             []htmlRow
	Charts                           []chart.Chart
	Series                           []htmlSeries
}

// htmlSeries is one run's charts over time.
type htmlSeries struct {
	Label, Caption string
	Charts         []chart.Chart
}

type htmlRow struct {
	Label                       string
	Requests, Completed, Failed int
	RequestRate, OutputTokS     string
	Cells                       []string
	Goodput, Met                string
	Energy                      []string // GPU J, mean W, tok/J, J/tok and $/M tok
}

// curves are the latency–throughput curves of the runs: by the requests a
// second each completed (its Capacity) or, for runs that vary their
// concurrency (Results.Axis), by their streams.
func (r *Results) curves() []chart.Chart {
	axis, x := AxisRate, func(run Result) float64 { return run.Capacity }
	if r.Axis == AxisConcurrency {
		axis, x = AxisConcurrency, func(run Result) float64 {
			if c, ok := run.Load.(loadgen.Closed); ok {
				return float64(max(c.Streams, 1))
			}
			return 0
		}
	}
	runs := slices.DeleteFunc(slices.Clone(r.Runs), func(run Result) bool { return !(x(run) > 0) })
	slices.SortStableFunc(runs, func(a, b Result) int { return cmp.Compare(x(a), x(b)) })
	if len(runs) < 2 {
		return nil
	}
	mark := -1.0
	if r.Search != nil && r.Search.level() > 0 {
		mark = r.Search.level()
	}
	var charts []chart.Chart
	kinds := []struct {
		title, caption string
		of             func(*metrics.Summary) metrics.Distribution
	}{
		{"Time to first token", "from the request written to its first token", func(s *metrics.Summary) metrics.Distribution { return s.TTFT }},
		{"Time per output token", "after the first, over completed requests", func(s *metrics.Summary) metrics.Distribution { return s.TPOT }},
		{"End-to-end latency", "from the request written to its last token", func(s *metrics.Summary) metrics.Distribution { return s.Latency }},
	}
	if r.pooled() {
		kinds = kinds[2:]
		kinds[0].caption = "from the request written to the answer's last byte"
	}
	for _, c := range kinds {
		var pts [2][]chart.Point
		for _, run := range runs {
			d := c.of(&run.Summary)
			for i, v := range []time.Duration{d.P50, d.P99} {
				msv := float64(v) / float64(time.Millisecond)
				at := fmt.Sprintf("%.2f req/s", x(run))
				if axis == AxisConcurrency {
					at = axis.level(x(run))
				}
				pts[i] = append(pts[i], chart.Point{X: x(run), Y: msv,
					Title: fmt.Sprintf("%s: %s, %s %.2f ms", textsafe.Line(run.Label), at, []string{"p50", "p99"}[i], msv)})
			}
		}
		charts = append(charts, newChart(c.title, c.caption, axis, []string{"median", "99th percentile"}, pts[:], mark))
	}
	return charts
}

// newChart lays out a chart of series of points: x (levels of axis)
// linear from 0, y linear from 0, or logarithmic when the values span more
// than a factor of logSpan; mark, if positive, is the x of a search's
// answer.
func newChart(title, caption string, axis Axis, names []string, series [][]chart.Point, mark float64) chart.Chart {
	xLabel := "requests a second"
	if axis == AxisConcurrency {
		xLabel = "streams"
	}
	ch := chart.New(title, caption, xLabel, "ms")
	xMax, yMin, yMax := max(mark, 0), math.Inf(1), 0.0
	for _, s := range series {
		for _, p := range s {
			xMax, yMax = max(xMax, p.X), max(yMax, p.Y)
			if p.Y > 0 {
				yMin = min(yMin, p.Y)
			}
		}
	}
	x := ch.XLinear(xMax, trimFloat)
	var y func(float64) float64
	if yMax > logSpan*yMin {
		ch.YLabel = "ms (log)"
		y = ch.YLog(yMin, yMax, trimFloat)
	} else {
		y = ch.YLinear(yMax, trimFloat)
	}
	for i, s := range series {
		ch.Add(names[i], i, s, x, y)
	}
	if mark > 0 {
		ch.Mark = math.Round(x(mark)*10) / 10
		ch.MarkLabel = fmt.Sprintf("highest %s meeting the objective: %s", axis, axis.level(mark))
	}
	return ch
}

// logSpan is the ratio of a chart's largest latency to its smallest above
// which its y axis is logarithmic.
const logSpan = 30

func trimFloat(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}
