package sweep_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/metrics"
)

// The table says how many requests had their server timings dropped and
// how many claimed more reasoning than their output, when any did, and
// says nothing of them otherwise.
func TestTableShowsDoubtedClaims(t *testing.T) {
	write := func(s metrics.Summary) string {
		var b bytes.Buffer
		require.NoError(t, (&sweep.Results{Runs: []sweep.Result{{Label: "run", Summary: s}}}).Write(&b, "table"))
		return b.String()
	}
	out := write(metrics.Summary{Requests: 5, Completed: 5, ServerTimingsDropped: 2, ReasoningOverclaimed: 3})
	assert.Regexp(t, `Server timings dropped: +2 \(`, out)
	assert.Regexp(t, `Reasoning usage over the output: +3 \(`, out)
	out = write(metrics.Summary{Requests: 5, Completed: 5})
	assert.NotContains(t, out, "Server timings dropped")
	assert.NotContains(t, out, "Reasoning usage over")
}
