// Package thousands writes numbers as llmload's reports show them, with a
// comma between thousands: 1054.66 → "1,054.7".
package thousands

import (
	"math"
	"strconv"
	"strings"
)

// Float formats v with dec decimals and thousands separators: 1054.66 with
// one decimal is "1,054.7". NaN and infinities are "—"; a value that rounds
// to zero has no minus sign.
func Float(v float64, dec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	sign := ""
	if strings.HasPrefix(s, "-") {
		s = s[1:]
		if strings.Trim(s, "0.") != "" {
			sign = "-" // no "-0.0"
		}
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	b.WriteString(sign)
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if hasFrac {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}

// Int formats n with thousands separators: 1205 is "1,205".
func Int(n int) string { return Float(float64(n), 0) }
