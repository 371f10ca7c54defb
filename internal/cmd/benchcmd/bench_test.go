package benchcmd_test

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/internal/cmd/benchcmd"
	"github.com/llmload/llmload/loadgen"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Bench refuses the flags that do not apply to -api embeddings and rerank,
// and those that apply only to them with a generation API.
func TestFlagsOfTheAPIs(t *testing.T) {
	for _, tc := range []struct {
		api  loadgen.API
		args []string
		says string
	}{
		{loadgen.Chat, []string{"-batch", "4"}, "-batch applies to -api embeddings and rerank"},
		{loadgen.Embeddings, []string{"-slo-ttft", "1s"}, "set -slo-latency"},
		{loadgen.Rerank, []string{"-turns", "3"}, "-turns"},
		{loadgen.Embeddings, []string{"-batch", "0"}, "-batch 0"},
	} {
		var b benchcmd.Flags
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		b.Register(fs)
		require.NoError(t, fs.Parse(tc.args))
		err := b.Parse(fs)
		if err == nil {
			err = b.CheckAPI(tc.api)
		}
		require.Error(t, err, "%v %q", tc.api, tc.args)
		assert.Contains(t, err.Error(), tc.says)
	}
	var b benchcmd.Flags
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	b.Register(fs)
	require.NoError(t, fs.Parse([]string{"-batch", "8", "-slo-latency", "1s"}))
	require.NoError(t, b.Parse(fs))
	assert.NoError(t, b.CheckAPI(loadgen.Embeddings))
	assert.Equal(t, 8, b.Batch())
}
