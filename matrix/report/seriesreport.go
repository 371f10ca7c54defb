package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/llmload/llmload/internal/chart"
	"github.com/llmload/llmload/internal/seriesview"
)

// htmlSeriesCell is one measured cell's charts over time.
type htmlSeriesCell struct {
	Label, Caption string
	Charts         []chart.Chart
}

// htmlSeries lays out the charts of each measured cell's series (see
// [seriesview.Charts]).
func (rp *report) htmlSeries() []htmlSeriesCell {
	var out []htmlSeriesCell
	for _, c := range rp.cells {
		if m := c.Measurement; m != nil && m.Series != nil {
			if caption, charts := seriesview.Charts(m.Series, float64(c.Concurrency)); len(charts) > 0 {
				out = append(out, htmlSeriesCell{Label: cellLabel(c), Caption: caption, Charts: charts})
			}
		}
	}
	return out
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
func (r doc) writeSeriesCSV(w io.Writer) error {
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
		for i, row := range seriesview.Rows(s, 1) {
			start := s.Start.Add(time.Duration(i) * s.Every)
			in := "0"
			if !start.Before(s.Window.Start) && start.Before(s.Window.End) {
				in = "1"
			}
			_ = cw.Write([]string{strconv.Itoa(c.ContextTokens), strconv.Itoa(c.Concurrency),
				num(row.From), num(every), in,
				num(row.TokS), strconv.Itoa(row.Started), strconv.Itoa(row.Finished), strconv.Itoa(row.Failed),
				num(row.TTFT50), num(row.TTFT90), num(row.TTFT99), num(row.ITL50), num(row.ITL90), num(row.ITL99),
				num(row.Decoding), num(row.Waiting),
				num(row.Running), num(row.ServerWaiting), num(row.KVUsage), num(row.Preempted)})
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("matrix: write series CSV: %w", err)
	}
	return nil
}
