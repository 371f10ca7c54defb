// Package tokencount reads and writes token counts as people write
// context lengths on a command line and as reports show them: "16K",
// "1.5M", "0,16K,32K,248K".
package tokencount

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Err reports text that is not a token count (see [ParseList]). The
// errors that wrap it name no package: they quote a command line's text,
// and the command names itself and the flag, as in
// `capacity: -contexts: "12Q" is not a token count`.
var Err = errors.New("not a token count")

// maxTokenCount bounds the counts parseTokens accepts: far beyond any
// context, far below int's limit.
const maxTokenCount = 1 << 40

// parseTokens reads a token count as people write context lengths: a
// decimal number (with a fraction or an exponent if need be), optionally
// followed by K (1,024) or M (1,048,576) in either case, such as "8192",
// "16K", "248k", "1.5M", "1e3" or "0". Spaces around it are ignored. The count must be whole, at least 0 and at most 2⁴⁰;
// anything else is an error wrapping [Err].
func parseTokens(s string) (int, error) {
	s = strings.TrimSpace(s)
	num, mult := s, 1.0
	if n := len(num); n > 0 {
		switch num[n-1] {
		case 'K', 'k':
			num, mult = num[:n-1], 1<<10
		case 'M', 'm':
			num, mult = num[:n-1], 1<<20
		}
	}
	// Decimal only: ParseFloat would also take hexadecimal, "Inf",
	// "NaN" and digits separated by underscores.
	if num == "" || strings.Trim(num, "0123456789.eE+-") != "" {
		return 0, fmt.Errorf("%q is %w (write counts like 8192, 16K or 1.5M)", s, Err)
	}
	v, err := strconv.ParseFloat(num, 64)
	v *= mult
	switch {
	case err != nil || !(v >= 0):
		return 0, fmt.Errorf("%q is %w (write counts like 8192, 16K or 1.5M)", s, Err)
	case v > maxTokenCount:
		return 0, fmt.Errorf("%q is %w of 2^40 or fewer", s, Err)
	case v != float64(int64(v)):
		return 0, fmt.Errorf("%q is %w: %g is not whole", s, Err, v)
	}
	return int(v), nil
}

// ParseList reads a comma-separated list of token counts, each as
// parseTokens reads it, such as "0,16K,32K,248K". Empty items are
// skipped, so an empty string is an empty, non-nil list.
func ParseList(s string) ([]int, error) {
	out := []int{}
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		v, err := parseTokens(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Format writes a token count as reports show context lengths:
// multiples of 1,024 as "16K", others as digits. [ParseList] reads it back.
func Format(n int) string {
	if n != 0 && n%1024 == 0 {
		return strconv.Itoa(n/1024) + "K"
	}
	return strconv.Itoa(n)
}
