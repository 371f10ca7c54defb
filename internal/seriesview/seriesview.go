// Package seriesview lays out a [metrics.Series] as llmload's reports
// show it: rows of buckets (put together for a long series) for CSV and
// tables, and line charts with their figures on hover for HTML.
package seriesview

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/llmload/llmload/internal/chart"
	"github.com/llmload/llmload/internal/thousands"
	"github.com/llmload/llmload/metrics"
)

// MaxPoints bounds the points of a time-series chart: a longer
// series is drawn with each point the buckets of a span put together, so
// a page stays light whatever the run's length.
const MaxPoints = 240

// Row is one bucket of a series as the reports show it, or several
// put together: counts added, rates and averages averaged, medians
// averaged over the buckets that have one and 99th percentiles their
// highest. The server's figures are NaN where it published none.
type Row struct {
	From, To                                   float64 // seconds since the series' start
	TokS                                       float64
	Started, Finished, Failed                  int
	TTFT50, TTFT90, TTFT99                     float64
	ITL50, ITL90, ITL99                        float64
	Decoding, Waiting                          float64
	Running, ServerWaiting, KVUsage, Preempted float64
}

// seriesLen returns the number of a series' buckets: the length of its
// shortest client column, so that a damaged document read back never
// indexes past one.
func Len(s *metrics.Series) int {
	n := len(s.TokensPerSec)
	for _, c := range [][]float64{s.TTFTP50, s.TTFTP90, s.TTFTP99, s.ITLP50, s.ITLP90, s.ITLP99, s.Decoding, s.Waiting} {
		n = min(n, len(c))
	}
	for _, c := range [][]int{s.Started, s.Finished, s.Failed} {
		n = min(n, len(c))
	}
	return n
}

// Rows returns a series' buckets as rows, put together k at a time.
func Rows(s *metrics.Series, k int) []Row {
	n := Len(s)
	k = max(k, 1)
	every := s.Every.Seconds()
	col := func(c []float64, i int) float64 {
		if i < len(c) {
			return c[i]
		}
		return math.NaN()
	}
	var rows []Row
	for lo := 0; lo < n; lo += k {
		hi := min(lo+k, n)
		r := Row{From: float64(lo) * every, To: float64(hi) * every}
		var t50, t90, i50, i90 meanOf
		var run, sw, kv meanOf
		pre := math.NaN()
		for i := lo; i < hi; i++ {
			r.TokS += s.TokensPerSec[i] / float64(hi-lo)
			r.Decoding += s.Decoding[i] / float64(hi-lo)
			r.Waiting += s.Waiting[i] / float64(hi-lo)
			r.Started += s.Started[i]
			r.Finished += s.Finished[i]
			r.Failed += s.Failed[i]
			t50.add(s.TTFTP50[i])
			t90.add(s.TTFTP90[i])
			i50.add(s.ITLP50[i])
			i90.add(s.ITLP90[i])
			r.TTFT99 = max(r.TTFT99, s.TTFTP99[i])
			r.ITL99 = max(r.ITL99, s.ITLP99[i])
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
		r.TTFT50, r.TTFT90, r.ITL50, r.ITL90 = t50.mean(), t90.mean(), i50.mean(), i90.mean()
		r.Running, r.ServerWaiting, r.KVUsage, r.Preempted = run.serverMean(), sw.serverMean(), kv.serverMean(), pre
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
	return thousands.Float(r, dec)
}

// at is a time as a tooltip says it: "12.5 s", "3 min 20 s".
func (c seriesClock) at(secs float64) string {
	if secs < 600 {
		return strconv.FormatFloat(math.Round(secs*10)/10, 'f', -1, 64) + " s"
	}
	return time.Duration(secs * float64(time.Second)).Round(time.Second).String()
}

// Charts lays out the charts of a series: its output tok/s, its
// latencies (TTFT and the gaps between tokens, on a log scale), and its
// requests at once (the client's streams decoding and waiting, the
// server's running and waiting), the y axis of the last up to at least
// most; each with a hover band a point holding the point's figures, and
// the window's start marked. A series longer than MaxPoints is drawn with
// its buckets put together. caption says how long a point is.
func Charts(s *metrics.Series, most float64) (caption string, charts []chart.Chart) {
	n := Len(s)
	if n == 0 || s.Every <= 0 {
		return "", nil
	}
	k := (n + MaxPoints - 1) / MaxPoints
	rows := Rows(s, k)
	total := float64(n) * s.Every.Seconds()
	clock := clockFor(total)
	span := fmtDuration(s.Every)
	if k > 1 {
		span = fmtDuration(time.Duration(k) * s.Every)
	}
	caption = fmt.Sprintf("every %s, warm-up and window; hover for the figures", span)
	mid := func(r Row) float64 { return (r.From + r.To) / 2 / clock.unit }
	windowAt := -1.0
	if !s.Window.Start.IsZero() {
		windowAt = s.Window.Start.Sub(s.Start).Seconds() / clock.unit
	}
	when := func(r Row) string { return clock.at(r.From) + "–" + clock.at(r.To) }

	newChart := func(title, caption, ylabel string) (chart.Chart, func(float64) float64) {
		ch := chart.New(title, caption, "time", ylabel)
		ch.W, ch.H, ch.Right, ch.Bottom = 420, 240, 404, 196
		x := ch.XLinear(total/clock.unit, clock.label)
		if windowAt >= 0 && windowAt <= total/clock.unit {
			ch.Mark, ch.MarkLabel = x(windowAt), "window"
		}
		for _, r := range rows {
			x0, x1 := x(r.From/clock.unit), x(r.To/clock.unit)
			ch.Bands = append(ch.Bands, chart.Band{X: math.Round(x0*10) / 10, W: math.Round((x1-x0)*10) / 10})
		}
		return ch, x
	}
	// line draws a line through get's values; dots, where set, marks each
	// point with its tooltip (TTFT: few buckets have one in a closed loop
	// of long requests, so a line alone would hide them).
	line := func(ch *chart.Chart, name string, color int, get func(Row) float64, x, y func(float64) float64, dots func(Row, float64) string) {
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
		hi = max(hi, r.TokS)
	}
	y := tp.YLinear(max(hi, 1), func(v float64) string { return thousands.Float(v, 0) })
	line(&tp, "tok/s", 0, func(r Row) float64 { return r.TokS }, x, y, nil)
	for i, r := range rows {
		tp.Bands[i].Title = fmt.Sprintf("%s: %s tok/s · %d started · %d finished · %d failed",
			when(r), thousands.Float(r.TokS, 1), r.Started, r.Finished, r.Failed)
	}

	// Latencies, on a log scale: TTFT and the gaps between tokens are
	// orders of magnitude apart.
	lat, x := newChart("Latency", "TTFT by first token, gaps by token", "ms")
	lo, hi := math.Inf(1), 0.0
	for _, r := range rows {
		for _, v := range []float64{r.TTFT50, r.TTFT99, r.ITL50, r.ITL99} {
			if v > 0 {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if hi > 0 {
		y := lat.YLog(lo, hi, shortNum)
		positive := func(get func(Row) float64) func(Row) float64 {
			return func(r Row) float64 {
				if v := get(r); v > 0 {
					return v
				}
				return math.NaN()
			}
		}
		ttft := func(q string) func(Row, float64) string {
			return func(r Row, v float64) string { return when(r) + ": TTFT " + q + " " + msText(v) }
		}
		line(&lat, "TTFT p50", 1, positive(func(r Row) float64 { return r.TTFT50 }), x, y, ttft("p50"))
		line(&lat, "TTFT p99", 2, positive(func(r Row) float64 { return r.TTFT99 }), x, y, ttft("p99"))
		line(&lat, "inter-token p50", 3, positive(func(r Row) float64 { return r.ITL50 }), x, y, nil)
		line(&lat, "inter-token p99", 4, positive(func(r Row) float64 { return r.ITL99 }), x, y, nil)
	}
	for i, r := range rows {
		lat.Bands[i].Title = fmt.Sprintf("%s: TTFT p50 %s · p90 %s · p99 %s; inter-token p50 %s · p90 %s · p99 %s",
			when(r), msText(r.TTFT50), msText(r.TTFT90), msText(r.TTFT99), msText(r.ITL50), msText(r.ITL90), msText(r.ITL99))
	}

	// Streams and the server's requests.
	st, x := newChart("Requests at once", "the client's streams, the server's requests", "requests")
	hi = max(most, 1)
	for _, r := range rows {
		for _, v := range []float64{r.Decoding, r.Waiting, r.Running, r.ServerWaiting} {
			if !math.IsNaN(v) {
				hi = max(hi, v)
			}
		}
	}
	y = st.YLinear(hi, shortNum)
	line(&st, "decoding (client)", 5, func(r Row) float64 { return r.Decoding }, x, y, nil)
	line(&st, "waiting for a first token (client)", 6, func(r Row) float64 { return r.Waiting }, x, y, nil)
	line(&st, "running (server)", 7, func(r Row) float64 { return r.Running }, x, y, nil)
	line(&st, "waiting (server)", 8, func(r Row) float64 { return r.ServerWaiting }, x, y, nil)
	for i, r := range rows {
		t := fmt.Sprintf("%s: client %s decoding · %s waiting", when(r), thousands.Float(r.Decoding, 2), thousands.Float(r.Waiting, 2))
		if !math.IsNaN(r.Running) {
			t += fmt.Sprintf("; server %s running", thousands.Float(r.Running, 1))
		}
		if !math.IsNaN(r.ServerWaiting) {
			t += fmt.Sprintf(" · %s waiting", thousands.Float(r.ServerWaiting, 1))
		}
		if !math.IsNaN(r.KVUsage) {
			t += fmt.Sprintf(" · KV cache %s%%", thousands.Float(100*r.KVUsage, 0))
		}
		if !math.IsNaN(r.Preempted) {
			t += fmt.Sprintf(" · %s preemptions", thousands.Float(r.Preempted, 0))
		}
		st.Bands[i].Title = t
	}
	return caption, []chart.Chart{tp, lat, st}
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
