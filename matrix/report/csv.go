package report

import (
	"github.com/llmload/llmload/matrix"

	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// csvHeader is the header of [CSV]'s table, the seed's
// measurements.csv columns in their order.
var csvHeader = []string{
	"phase", "context_tokens", "concurrency", "status",
	"total_tok_s", "per_request_tok_s", "ttft_ms", "tbt_ms",
	"avg_active", "completed", "output_tokens", "measured_s",
}

// csvNoisy is the last column [CSV] adds when a cell is
// noisy (see [matrix.Measurement].Noisy): true for such a cell.
const csvNoisy = "noisy"

// csvPromptTokens is the column [CSV] adds after csvHeader's
// when a prompt's size, as the server counted it, is more than 1% off its
// context's label.
const csvPromptTokens = "prompt_tokens"

// writeCSV writes the "All measurements" table as CSV with the seed's
// measurements.csv columns: phase, context_tokens, concurrency, status,
// total_tok_s, per_request_tok_s, ttft_ms, tbt_ms, avg_active, completed,
// output_tokens and measured_s. The prefill rows come first (phase
// "prefill", total_tok_s the prompt tok/s), then the decode cells in grid
// order (phase "decode"). Latencies are medians. When the server counted a
// prompt more than 1% off its context's label, a last column,
// prompt_tokens, gives every row's size as counted (context_tokens stays
// the label). When a cell is noisy (see [matrix.Measurement].Noisy), a last
// column, noisy, says which (true) and which not. When the GPUs' energy was
// read (see [matrix.Measurement].Energy), columns gpu_energy_j, gpu_mean_w,
// tokens_per_joule, joules_per_token and, with a cost, usd_per_million_tokens
// come next. When a cell's TTFT was split by the server's own timings (see
// [matrix.Measurement].SplitRequests), columns server_queue_ms, server_prefill_ms
// and rest_ms (medians), their p99s (server_queue_p99_ms…) and
// outside_server ("client", "network" or empty) come last. Fields that do not
// apply are empty: rates and latencies of a
// cell without output, everything of a cell that was not measured. Numbers
// are written as the seed file writes them: one decimal for tok/s, time
// between tokens and measured seconds, whole milliseconds for TTFT, two
// decimals for average active requests.
func (r doc) writeCSV(w io.Writer) error {
	rp := r.report()
	cw := csv.NewWriter(w)
	head := slices.Clone(csvHeader)
	if rp.counted {
		head = append(head, csvPromptTokens)
	}
	noise := slices.ContainsFunc(rp.cells, func(c *matrix.Cell) bool { return c.Measurement != nil && c.Measurement.Noisy != "" })
	if noise {
		head = append(head, csvNoisy)
	}
	head = append(head, rp.energy.csvHead()...)
	if rp.split {
		head = append(head, csvSplitHead...)
	}
	cw.Write(head)
	for _, p := range rp.prefill {
		rec := make([]string, len(head))
		rec[0], rec[1], rec[2], rec[3] = "prefill", strconv.Itoa(p.ContextTokens), "1", tokenOf(p.status)
		if p.measured {
			rec[4] = csvFloat(p.PromptTokensPerSec, 1)
			rec[6] = csvFloat(p.TTFT, 0)
		}
		if rp.counted {
			rec[len(csvHeader)] = csvCount(p.PromptTokens)
		}
		cw.Write(rec) // the energy's columns, if any, empty
	}
	for _, c := range rp.cells {
		rec := csvCell(c)
		if rp.counted {
			rec = append(rec, csvCount(c.PromptTokens))
		}
		if noise {
			rec = append(rec, strconv.FormatBool(c.Measurement != nil && c.Measurement.Noisy != ""))
		}
		rec = append(rec, rp.energy.csvRow(energyOf(c))...)
		if rp.split {
			rec = append(rec, csvSplitRow(c.Measurement)...)
		}
		cw.Write(rec)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("matrix: write CSV: %w", err)
	}
	return nil
}

// csvSplitHead is the TTFT split's CSV columns.
var csvSplitHead = []string{"server_queue_ms", "server_prefill_ms", "rest_ms",
	"server_queue_p99_ms", "server_prefill_p99_ms", "rest_p99_ms", "outside_server"}

// csvSplitRow is a cell's TTFT split columns, empty where it has none.
func csvSplitRow(m *matrix.Measurement) []string {
	rec := make([]string, len(csvSplitHead))
	if m == nil || m.SplitRequests == 0 {
		return rec
	}
	for i, v := range []float64{m.ServerQueue.P50, m.ServerPrefill.P50, m.Rest.P50, m.ServerQueue.P99, m.ServerPrefill.P99, m.Rest.P99} {
		rec[i] = csvFloat(v, 2)
	}
	rec[6] = m.OutsideServer
	return rec
}

// csvCell is one decode cell's CSV record.
func csvCell(c *matrix.Cell) []string {
	rec := make([]string, len(csvHeader))
	rec[0], rec[1], rec[2], rec[3] = "decode", strconv.Itoa(c.ContextTokens), strconv.Itoa(c.Concurrency), tokenOf(c.Status)
	m := c.Measurement
	if m == nil {
		return rec
	}
	if hasRates(c) {
		rec[4] = csvPositive(m.OutputTokensPerSec, 1)
		rec[5] = csvPositive(m.PerRequestTokensPerSec, 1)
		rec[6] = csvPositive(m.TTFT.P50, 0)
		rec[7] = csvPositive(m.TBT.P50, 1)
	}
	rec[8] = csvFloat(m.AvgActive, 2)
	rec[9] = strconv.Itoa(m.Completed)
	rec[10] = strconv.Itoa(m.OutputTokens)
	rec[11] = csvFloat(m.MeasuredS, 1)
	return rec
}

// csvFloat formats v with dec decimals, without thousands separators;
// NaN and infinities are empty.
func csvFloat(v float64, dec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if strings.HasPrefix(s, "-") && strings.Trim(s[1:], "0.") == "" {
		return s[1:] // no "-0.0"
	}
	return s
}

// csvCount is a count, empty when zero (not known).
func csvCount(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// csvPositive is csvFloat for a value that is only meaningful when
// positive, and "" otherwise.
func csvPositive(v float64, dec int) string {
	if v > 0 {
		return csvFloat(v, dec)
	}
	return ""
}
