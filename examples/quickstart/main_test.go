package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv("QUICKSTART_MAIN") != "" {
		os.Args = append(os.Args[:1], "-duration", "3s")
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

// TestQuickstart runs the program against its simulated server: the fast
// profile streams 100 tokens a second to each of the four streams after a
// first token in about 20 ms.
func TestQuickstart(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "QUICKSTART_MAIN=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	m := regexp.MustCompile(`^(\d+) requests: TTFT p50 (\S+), p99 (\S+); ([\d.]+) tok/s in all, ([\d.]+) a stream\n$`).FindStringSubmatch(string(out))
	require.NotNil(t, m, "%s", out)
	total, _ := strconv.ParseFloat(m[4], 64)
	each, _ := strconv.ParseFloat(m[5], 64)
	assert.InDelta(t, 400, total, 120, "four streams of 100 tok/s")
	assert.InDelta(t, 100, each, 25, "100 tok/s a stream")
}
