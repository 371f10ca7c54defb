package report

import (
	"github.com/llmload/llmload/matrix"

	"math"
	"strings"

	"github.com/llmload/llmload/internal/chart"
	"github.com/llmload/llmload/internal/thousands"
)

// newConcurrencyChart lays out a chart of values against concurrency (a
// log₂ axis), one series per name, a point's X its concurrency. The y
// axis is linear from 0, or log₁₀ when logY is set, with a reference line
// at 1 (a ratio of no change).
func newConcurrencyChart(title, caption, ylabel string, concurrency []int, names []string,
	series [][]chart.Point, format func(float64) string, logY bool) chart.Chart {
	ch := chart.New(title, caption, "requests at once", ylabel)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, p := range s {
			lo, hi = min(lo, p.Y), max(hi, p.Y)
		}
	}
	if math.IsInf(lo, 0) {
		return ch
	}
	x := ch.XLevels(concurrency)
	var y func(float64) float64
	if logY {
		y = ch.YLog(lo, hi, format)
		if ch.RefY = y(1); ch.RefY < ch.Top || ch.RefY > ch.Bottom {
			ch.RefY = -1
		}
	} else {
		y = ch.YLinear(hi, format)
	}
	for i, s := range series {
		if len(s) > 0 {
			ch.Add(names[i], i, s, x, y)
		}
	}
	return ch
}

// charts are the results page's charts: total tok/s and per-request tok/s
// against concurrency, a line per context.
func (rp *report) charts() []chart.Chart {
	g := rp.grid
	if len(g.concurrency) == 0 {
		return nil
	}
	var names []string
	var total, perReq [][]chart.Point
	for _, ctx := range g.contexts {
		var t, p []chart.Point
		for _, n := range g.concurrency {
			c := g.at(ctx, n)
			if !hasRates(c) || (c.Status != matrix.Valid && c.Status != matrix.RequestsQueued) {
				continue
			}
			hollow := c.Status != matrix.Valid || c.Measurement.Partial
			label := cellLabel(c)
			if c.Status != matrix.Valid {
				label += " (" + strings.ToLower(wordsOf(c.Status)) + ")"
			}
			t = append(t, chart.Point{X: float64(n), Y: c.Measurement.OutputTokensPerSec, Hollow: hollow,
				Title: label + ": " + fmtRate(c.Measurement.OutputTokensPerSec) + " tok/s total"})
			if c.Measurement.PerRequestTokensPerSec > 0 {
				p = append(p, chart.Point{X: float64(n), Y: c.Measurement.PerRequestTokensPerSec, Hollow: hollow,
					Title: label + ": " + fmtRate(c.Measurement.PerRequestTokensPerSec) + " tok/s per request"})
			}
		}
		names = append(names, "context "+formatTokens(ctx))
		total, perReq = append(total, t), append(perReq, p)
	}
	rate := func(v float64) string { return thousands.Float(v, 0) }
	return []chart.Chart{
		newConcurrencyChart("Total tok/s", "output across all simultaneous requests; hollow points were not Valid",
			"tok/s", g.concurrency, names, total, rate, false),
		newConcurrencyChart("Per-request tok/s", "median over requests of 1 ÷ time between tokens",
			"tok/s", g.concurrency, names, perReq, rate, false),
	}
}
