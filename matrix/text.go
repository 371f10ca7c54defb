package matrix

import (
	"math"
	"strconv"

	"github.com/llmload/llmload/internal/thousands"
	"github.com/llmload/llmload/metrics"
)

// The runner's own words in its notes and log; the reports have theirs
// (package report).

// fmtInt writes n with thousands separators.
func fmtInt(n int) string { return thousands.Int(n) }

// plural is n and the word for that many.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// hasRates reports whether a cell produced output, so that its rates and
// latencies mean something. A cell that ran and starved has a measurement
// (its window, its average active requests) but no rates.
func hasRates(c *Cell) bool {
	return c != nil && c.Measurement != nil && c.Measurement.OutputTokensPerSec > 0
}

// energyText is the GPUs' energy of a cell in the log.
func energyText(e *metrics.Energy) string {
	s := "GPUs: " + thousands.Float(e.Joules, 0) + " J at " + thousands.Float(e.MeanWatts, 1) + " W mean"
	if e.TokensPerJoule > 0 {
		s += " · " + fmtSignificant(e.TokensPerJoule) + " tok/J · " + fmtSignificant(e.JoulesPerToken) + " J a token"
	}
	if e.DollarsPerMillionTokens > 0 {
		s += " · $" + thousands.Float(e.DollarsPerMillionTokens, 2) + " per million tokens"
	}
	return s
}

// fmtSignificant writes v with three significant digits, at most.
func fmtSignificant(v float64) string {
	dec := 0
	if v > 0 {
		dec = max(0, 2-int(math.Floor(math.Log10(v))))
	}
	return thousands.Float(v, dec)
}
