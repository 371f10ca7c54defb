package matrix

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/llmload/llmload/internal/chart"
	"github.com/llmload/llmload/metrics"
)

// maxChartPoints bounds the points of a time-series chart: a longer
// series is drawn with each point the buckets of a span put together, so
// a page stays light whatever the run's length.
const maxChartPoints = 240

// seriesRow is one bucket of a series as the reports show it, or several
// put together: counts added, rates and averages averaged, medians
// averaged over the buckets that have one and 99th percentiles their
// highest. The server's figures are NaN where it published none.
type seriesRow struct {
	from, to                      float64 // seconds since the series' start
	tokS                          float64
	started, finished, failed     int
	ttft50, ttft90, ttft99        float64
	itl50, itl90, itl99           float64
	decoding, waiting             float64
	running, srvWaiting, kv, pree float64
}

// seriesLen returns the number of a series' buckets: the length of its
// shortest client column, so that a damaged document read back never
// indexes past one.
func seriesLen(s *metrics.Series) int {
	n := len(s.TokensPerSec)
	for _, c := range [][]float64{s.TTFTP50, s.TTFTP90, s.TTFTP99, s.ITLP50, s.ITLP90, s.ITLP99, s.Decoding, s.Waiting} {
		n = min(n, len(c))
	}
	for _, c := range [][]int{s.Started, s.Finished, s.Failed} {
		n = min(n, len(c))
	}
	return n
}

// seriesRows returns a series' buckets as rows, put together k at a time.
func seriesRows(s *metrics.Series, k int) []seriesRow {
	n := seriesLen(s)
	k = max(k, 1)
	every := s.Every.Seconds()
	col := func(c []float64, i int) float64 {
		if i < len(c) {
			return c[i]
		}
		return math.NaN()
	}
	var rows []seriesRow
	for lo := 0; lo < n; lo += k {
		hi := min(lo+k, n)
		r := seriesRow{from: float64(lo) * every, to: float64(hi) * every}
		var t50, t90, i50, i90 meanOf
		var run, sw, kv meanOf
		pre := math.NaN()
		for i := lo; i < hi; i++ {
			r.tokS += s.TokensPerSec[i] / float64(hi-lo)
			r.decoding += s.Decoding[i] / float64(hi-lo)
			r.waiting += s.Waiting[i] / float64(hi-lo)
			r.started += s.Started[i]
			r.finished += s.Finished[i]
			r.failed += s.Failed[i]
			t50.add(s.TTFTP50[i])
			t90.add(s.TTFTP90[i])
			i50.add(s.ITLP50[i])
			i90.add(s.ITLP90[i])
			r.ttft99 = max(r.ttft99, s.TTFTP99[i])
			r.itl99 = max(r.itl99, s.ITLP99[i])
			run.addServer(col(s.ServerRunning, i))
			sw.addServer(col(s.ServerWaiting, i))
			kv.addServer(col(s.ServerKVUsage, i))
			if v := col(s.ServerPreemptions, i); !math.IsNaN(v) {
				if math.IsNaN(pre) {
					pre = 0
				}
				pre += v
			}
		}
		r.ttft50, r.ttft90, r.itl50, r.itl90 = t50.mean(), t90.mean(), i50.mean(), i90.mean()
		r.running, r.srvWaiting, r.kv, r.pree = run.serverMean(), sw.serverMean(), kv.serverMean(), pre
		rows = append(rows, r)
	}
	return rows
}

// meanOf averages the values it is given: a quantile's, leaving out the
// zeros of buckets that had none, or a server's figure, leaving out NaN.
type meanOf struct {
	sum float64
	n   int
}

func (m *meanOf) add(v float64) {
	if v > 0 {
		m.sum += v
		m.n++
	}
}

func (m *meanOf) addServer(v float64) {
	if !math.IsNaN(v) {
		m.sum += v
		m.n++
	}
}

func (m meanOf) mean() float64 {
	if m.n == 0 {
		return 0
	}
	return m.sum / float64(m.n)
}

func (m meanOf) serverMean() float64 {
	if m.n == 0 {
		return math.NaN()
	}
	return m.sum / float64(m.n)
}

// seriesClock is the unit of a series chart's time axis: seconds, minutes
// or hours, whichever keeps its numbers short.
type seriesClock struct {
	unit float64 // seconds
	name string
}

func clockFor(total float64) seriesClock {
	switch {
	case total > 10*3600:
		return seriesClock{3600, "h"}
	case total > 600:
		return seriesClock{60, "min"}
	}
	return seriesClock{1, "s"}
}

func (c seriesClock) label(v float64) string { return shortNum(v) + " " + c.name }

// shortNum is a figure with at most four significant digits and no
// trailing zeros: "0.6", "1,250", "12.35".
func shortNum(v float64) string {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	dec := 0
	for dec < 6 && math.Abs(r*math.Pow(10, float64(dec))-math.Round(r*math.Pow(10, float64(dec)))) > 1e-9 {
		dec++
	}
	return numGroup(r, dec)
}

// at is a time as a tooltip says it: "12.5 s", "3 min 20 s".
func (c seriesClock) at(secs float64) string {
	if secs < 600 {
		return strconv.FormatFloat(math.Round(secs*10)/10, 'f', -1, 64) + " s"
	}
	return time.Duration(secs * float64(time.Second)).Round(time.Second).String()
}

// htmlSeriesCell is one measured cell's charts over time.
type htmlSeriesCell struct {
	Label, Caption string
	Charts         []chart.Chart
}

// htmlSeries lays out a chart of each measured cell's series: its
// throughput, its latencies, and its streams with the server's requests.
func (rp *report) htmlSeries() []htmlSeriesCell {
	var out []htmlSeriesCell
	for _, c := range rp.cells {
		m := c.Measurement
		if m == nil || m.Series == nil || seriesLen(m.Series) == 0 || m.Series.Every <= 0 {
			continue
		}
		out = append(out, seriesCharts(c, m.Series))
	}
	return out
}

// seriesCharts are the charts of one cell's series.
func seriesCharts(c *Cell, s *metrics.Series) htmlSeriesCell {
	n := seriesLen(s)
	k := (n + maxChartPoints - 1) / maxChartPoints
	rows := seriesRows(s, k)
	total := float64(n) * s.Every.Seconds()
	clock := clockFor(total)
	span := fmtDuration(s.Every)
	if k > 1 {
		span = fmtDuration(time.Duration(k) * s.Every)
	}
	hc := htmlSeriesCell{Label: cellLabel(c),
		Caption: fmt.Sprintf("every %s, warm-up and window; hover for the figures", span)}
	mid := func(r seriesRow) float64 { return (r.from + r.to) / 2 / clock.unit }
	windowAt := -1.0
	if !s.Window.Start.IsZero() {
		windowAt = s.Window.Start.Sub(s.Start).Seconds() / clock.unit
	}
	when := func(r seriesRow) string { return clock.at(r.from) + "–" + clock.at(r.to) }

	newChart := func(title, caption, ylabel string) (chart.Chart, func(float64) float64) {
		ch := chart.New(title, caption, "time", ylabel)
		ch.W, ch.H, ch.Right, ch.Bottom = 420, 240, 404, 196
		x := ch.XLinear(total/clock.unit, clock.label)
		if windowAt >= 0 && windowAt <= total/clock.unit {
			ch.Mark, ch.MarkLabel = x(windowAt), "window"
		}
		for _, r := range rows {
			x0, x1 := x(r.from/clock.unit), x(r.to/clock.unit)
			ch.Bands = append(ch.Bands, chart.Band{X: math.Round(x0*10) / 10, W: math.Round((x1-x0)*10) / 10})
		}
		return ch, x
	}
	// line draws a line through get's values; dots, where set, marks each
	// point with its tooltip (TTFT: few buckets have one in a closed loop
	// of long requests, so a line alone would hide them).
	line := func(ch *chart.Chart, name string, color int, get func(seriesRow) float64, x, y func(float64) float64, dots func(seriesRow, float64) string) {
		var pts []chart.Point
		for _, r := range rows {
			if v := get(r); !math.IsNaN(v) {
				p := chart.Point{X: mid(r), Y: v}
				if dots != nil {
					p.Title = dots(r, v)
				}
				pts = append(pts, p)
			}
		}
		if len(pts) > 0 {
			ch.Add(name, color, pts, x, y)
			if dots == nil && len(pts) > 3 {
				ch.Series[len(ch.Series)-1].Dots = nil
			}
		}
	}

	// Throughput.
	tp, x := newChart("Output tok/s", "tokens that arrived a second", "tok/s")
	hi := 0.0
	for _, r := range rows {
		hi = max(hi, r.tokS)
	}
	y := tp.YLinear(max(hi, 1), func(v float64) string { return numGroup(v, 0) })
	line(&tp, "tok/s", 0, func(r seriesRow) float64 { return r.tokS }, x, y, nil)
	for i, r := range rows {
		tp.Bands[i].Title = fmt.Sprintf("%s: %s tok/s · %d started · %d finished · %d failed",
			when(r), fmtRate(r.tokS), r.started, r.finished, r.failed)
	}

	// Latencies, on a log scale: TTFT and the gaps between tokens are
	// orders of magnitude apart.
	lat, x := newChart("Latency", "TTFT by first token, gaps by token", "ms")
	lo, hi := math.Inf(1), 0.0
	for _, r := range rows {
		for _, v := range []float64{r.ttft50, r.ttft99, r.itl50, r.itl99} {
			if v > 0 {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if hi > 0 {
		y := lat.YLog(lo, hi, shortNum)
		positive := func(get func(seriesRow) float64) func(seriesRow) float64 {
			return func(r seriesRow) float64 {
				if v := get(r); v > 0 {
					return v
				}
				return math.NaN()
			}
		}
		ttft := func(q string) func(seriesRow, float64) string {
			return func(r seriesRow, v float64) string { return when(r) + ": TTFT " + q + " " + msText(v) }
		}
		line(&lat, "TTFT p50", 1, positive(func(r seriesRow) float64 { return r.ttft50 }), x, y, ttft("p50"))
		line(&lat, "TTFT p99", 2, positive(func(r seriesRow) float64 { return r.ttft99 }), x, y, ttft("p99"))
		line(&lat, "inter-token p50", 3, positive(func(r seriesRow) float64 { return r.itl50 }), x, y, nil)
		line(&lat, "inter-token p99", 4, positive(func(r seriesRow) float64 { return r.itl99 }), x, y, nil)
	}
	for i, r := range rows {
		lat.Bands[i].Title = fmt.Sprintf("%s: TTFT p50 %s · p90 %s · p99 %s; inter-token p50 %s · p90 %s · p99 %s",
			when(r), msText(r.ttft50), msText(r.ttft90), msText(r.ttft99), msText(r.itl50), msText(r.itl90), msText(r.itl99))
	}

	// Streams and the server's requests.
	st, x := newChart("Requests at once", "the client's streams, the server's requests", "requests")
	hi = float64(c.Concurrency)
	for _, r := range rows {
		for _, v := range []float64{r.decoding, r.waiting, r.running, r.srvWaiting} {
			if !math.IsNaN(v) {
				hi = max(hi, v)
			}
		}
	}
	y = st.YLinear(hi, shortNum)
	line(&st, "decoding (client)", 5, func(r seriesRow) float64 { return r.decoding }, x, y, nil)
	line(&st, "waiting for a first token (client)", 6, func(r seriesRow) float64 { return r.waiting }, x, y, nil)
	line(&st, "running (server)", 7, func(r seriesRow) float64 { return r.running }, x, y, nil)
	line(&st, "waiting (server)", 8, func(r seriesRow) float64 { return r.srvWaiting }, x, y, nil)
	for i, r := range rows {
		t := fmt.Sprintf("%s: client %s decoding · %s waiting", when(r), numGroup(r.decoding, 2), numGroup(r.waiting, 2))
		if !math.IsNaN(r.running) {
			t += fmt.Sprintf("; server %s running", numGroup(r.running, 1))
		}
		if !math.IsNaN(r.srvWaiting) {
			t += fmt.Sprintf(" · %s waiting", numGroup(r.srvWaiting, 1))
		}
		if !math.IsNaN(r.kv) {
			t += fmt.Sprintf(" · KV cache %s%%", numGroup(100*r.kv, 0))
		}
		if !math.IsNaN(r.pree) {
			t += fmt.Sprintf(" · %s preemptions", numGroup(r.pree, 0))
		}
		st.Bands[i].Title = t
	}
	hc.Charts = []chart.Chart{tp, lat, st}
	return hc
}

// msText is a latency in a tooltip: "12.3 ms", or "—" for none.
func msText(v float64) string {
	if !(v > 0) {
		return "—"
	}
	return shortNum(v) + " ms"
}

// fmtDuration is a bucket's length: "1 s", "50 ms", "16 s".
func fmtDuration(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + " ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

// seriesHead is the header of the time-series CSV.
var seriesHead = []string{"context_tokens", "concurrency", "t_s", "bucket_s", "in_window",
	"tok_s", "started", "finished", "failed",
	"ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p90_ms", "itl_p99_ms",
	"streams_decoding", "streams_waiting",
	"server_running", "server_waiting", "server_kv_usage", "server_preemptions"}

// writeSeriesCSV writes every measured cell's time series as CSV, a row a
// bucket, in the reports' clock: t_s is the bucket's start in seconds from
// the cell's first, in_window 1 for a bucket that starts in the window. A
// figure the server did not publish is empty.
func (r *Results) writeSeriesCSV(w io.Writer) error {
	rp := r.report()
	cw := csv.NewWriter(w)
	_ = cw.Write(seriesHead)
	num := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	for _, c := range rp.cells {
		m := c.Measurement
		if m == nil || m.Series == nil || m.Series.Every <= 0 {
			continue
		}
		s := m.Series
		every := s.Every.Seconds()
		for i, row := range seriesRows(s, 1) {
			start := s.Start.Add(time.Duration(i) * s.Every)
			in := "0"
			if !start.Before(s.Window.Start) && start.Before(s.Window.End) {
				in = "1"
			}
			_ = cw.Write([]string{strconv.Itoa(c.ContextTokens), strconv.Itoa(c.Concurrency),
				num(row.from), num(every), in,
				num(row.tokS), strconv.Itoa(row.started), strconv.Itoa(row.finished), strconv.Itoa(row.failed),
				num(row.ttft50), num(row.ttft90), num(row.ttft99), num(row.itl50), num(row.itl90), num(row.itl99),
				num(row.decoding), num(row.waiting),
				num(row.running), num(row.srvWaiting), num(row.kv), num(row.pree)})
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("matrix: write series CSV: %w", err)
	}
	return nil
}
