// Package figure writes the figures the matrix's runner and its reports
// both say, in one way: a ratio to three significant digits, a count of
// things, a GPU energy line, and a figure rounded for a file.
package figure

import (
	"math"
	"strconv"

	"github.com/llmload/llmload/internal/thousands"
	"github.com/llmload/llmload/metrics"
)

// Significant writes v with three significant digits at least: 0.0123,
// 1.23, 12.3, 1,234.
func Significant(v float64) string {
	dec := 0
	if v > 0 {
		dec = max(0, 2-int(math.Floor(math.Log10(v))))
	}
	return thousands.Float(v, dec)
}

// Plural is n and the word for that many: "1 context", "6 contexts".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Energy says a cell's energy in a line: "GPUs: 4,215 J at 140.5 W mean ·
// 1.23 tok/J · 0.813 J a token · $0.42 per million tokens".
func Energy(e *metrics.Energy) string {
	s := "GPUs: " + thousands.Float(e.Joules, 0) + " J at " + thousands.Float(e.MeanWatts, 1) + " W mean"
	if e.TokensPerJoule > 0 {
		s += " · " + Significant(e.TokensPerJoule) + " tok/J · " + Significant(e.JoulesPerToken) + " J a token"
	}
	if e.DollarsPerMillionTokens > 0 {
		s += " · $" + thousands.Float(e.DollarsPerMillionTokens, 2) + " per million tokens"
	}
	return s
}

// Round rounds x to 12 significant digits, so that a figure converted
// between clocks reads back as it was written.
func Round(x float64) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	v, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 12, 64), 64)
	if err != nil {
		return x
	}
	return v
}
