package errorkinds_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/llmload/llmload/internal/errorkinds"
	"github.com/llmload/llmload/metrics"
)

func TestFormat(t *testing.T) {
	assert.Equal(t, "server_status ×1,205, stall ×3, truncated ×3", errorkinds.Format(map[metrics.ErrorKind]int{
		metrics.KindStall: 3, metrics.KindServerStatus: 1205, metrics.KindTruncated: 3, metrics.KindConnect: 0,
	}), "most frequent first, by name on a tie, none counted zero times")
	assert.Equal(t, "", errorkinds.Format(nil))
	assert.Equal(t, "stall ×1,000,000", errorkinds.Format(map[metrics.ErrorKind]int{metrics.KindStall: 1_000_000}))
}
