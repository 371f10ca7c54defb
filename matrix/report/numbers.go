package report

import (
	"github.com/llmload/llmload/internal/tokencount"

	"strconv"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/internal/thousands"
)

// fmtRate is a tok/s figure: "1,054.7".
func fmtRate(v float64) string { return thousands.Float(v, 1) }

// fmtPrefillRate is a prompt tok/s figure as the seed's prefill table shows
// it: whole numbers from 1,000 up ("2,343"), one decimal below ("990.0").
func fmtPrefillRate(v float64) string {
	if v >= 999.95 {
		return thousands.Float(v, 0)
	}
	return thousands.Float(v, 1)
}

// fmtTTFT is a time to first token: "12,178 ms".
func fmtTTFT(ms float64) string { return thousands.Float(ms, 0) + " ms" }

// fmtTBT is a time between tokens: "12.2 ms".
func fmtTBT(ms float64) string { return thousands.Float(ms, 1) + " ms" }

// fmtInt is a count: "15,112".
func fmtInt(n int) string { return thousands.Int(n) }

// fmtSpeed is a speed factor: 20 → "20", 12.5 → "12.5".
func fmtSpeed(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// fmtSeconds is a duration in seconds: "30 s", "1.5 s".
func fmtSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

// tokenList is a list of token counts: "8K, 16K, 32K".
func tokenList(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = formatTokens(n)
	}
	return strings.Join(s, ", ")
}

// cleanText makes a string from the server or the user safe to print on a
// terminal or in a one-line cell: see [textsafe.Line].
func cleanText(s string) string { return textsafe.Line(s) }

// abs is |x|.
func abs(x int) int { return max(x, -x) }

// formatTokens writes a token count as the reports label contexts: 16K.
func formatTokens(n int) string { return tokencount.Format(n) }
