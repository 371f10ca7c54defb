package matrixcmd_test

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/llmload/llmload/internal/cmd/matrixcmd"
	"github.com/llmload/llmload/loadgen"
)

// A spec the runner refuses is refused as the flags are parsed, by the
// runner's own check ([matrix.Runner.Validate]), and said in the flags'
// words through the shared table; errors.As still finds the library's
// ConfigError.
func TestParseRefusesSpecByFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-concurrency", "0"}, "-concurrency holds 0, below 1: a concurrency is 1 request or more"},
		{[]string{"-concurrency", "1,4,16", "-contexts", "0,100000K"}, "-contexts holds 102400000, above"},
		{[]string{"-concurrency", "40000", "-shards", "2", "-listen", "127.0.0.1:0"}, "-concurrency holds 40000, 20000 a shard over 2 shards, above 16384"},
		{[]string{"-warmup-flow", "-1s"}, "-warmup-flow is -1s: a negative warm-up duration"},
	} {
		_, _, err := matrixcmd.Parse(tc.args, io.Discard, 20)
		if assert.Error(t, err, tc.args) {
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "Spec.")
			_, ok := errors.AsType[*loadgen.ConfigError](err)
			assert.True(t, ok, "the library's error is kept")
		}
	}
	o, _, err := matrixcmd.Parse([]string{"-concurrency", "1,4,16"}, io.Discard, 20)
	if assert.NoError(t, err) {
		assert.Equal(t, []int{1, 4, 16}, o.Spec.Concurrency)
	}
}
