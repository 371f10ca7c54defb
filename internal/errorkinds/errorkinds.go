// Package errorkinds writes the failures of a run counted by kind, as
// every report of llmload shows them.
package errorkinds

import (
	"cmp"
	"slices"
	"strings"

	"github.com/llmload/llmload/internal/thousands"
	"github.com/llmload/llmload/metrics"
)

// Format lists failures counted by kind, most frequent first and
// by name on a tie, counts with thousands separators: "server_status
// ×1,205, stall ×3". Kinds counted zero times are left out; no failures is
// "".
func Format(counts map[metrics.ErrorKind]int) string {
	kinds := make([]metrics.ErrorKind, 0, len(counts))
	for k, n := range counts {
		if n > 0 {
			kinds = append(kinds, k)
		}
	}
	slices.SortFunc(kinds, func(a, b metrics.ErrorKind) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = string(k) + " ×" + thousands.Int(counts[k])
	}
	return strings.Join(parts, ", ")
}
