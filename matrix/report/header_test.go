package report_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/matrix/report"
)

// The header gives a one-value span as that value: "1 context (16K) × 1
// concurrency level (4)", not "(16K–16K)".
func TestWriteTableOneContext(t *testing.T) {
	res := tinyResults()
	res.Spec.Contexts, res.Spec.Concurrency = []int{16 * 1024}, []int{4}
	res.Cells = res.Cells[3:]
	var out bytes.Buffer
	require.NoError(t, report.Write(&out, report.Table, res))
	assert.Contains(t, out.String(), "1 context (16K) × 1 concurrency level (4) · prefill at 8K")
	assert.NotContains(t, out.String(), "16K–16K")
}
