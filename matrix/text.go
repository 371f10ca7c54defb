package matrix

import (
	"github.com/llmload/llmload/internal/thousands"
)

// The runner's own words in its notes and log; the reports have theirs
// (package report).

// fmtInt writes n with thousands separators.
func fmtInt(n int) string { return thousands.Int(n) }

// hasRates reports whether a cell produced output, so that its rates and
// latencies mean something. A cell that ran and starved has a measurement
// (its window, its average active requests) but no rates.
func hasRates(c *Cell) bool {
	return c != nil && c.Measurement != nil && c.Measurement.OutputTokensPerSec > 0
}
