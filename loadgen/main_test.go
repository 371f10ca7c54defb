package loadgen_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/llmload/llmload/loadgen"
)

func TestMain(m *testing.M) {
	// BenchmarkClientStream runs this test binary again as its server.
	if os.Getenv(blastServerEnv) != "" {
		os.Exit(serveBlast())
	}
	// LLMLOAD_TEST_READ=poll runs every test on StreamTransport on its
	// pollers (Poll set by NewStreamTransport), =goroutine on the goroutine
	// of each request.
	switch r := os.Getenv("LLMLOAD_TEST_READ"); r {
	case "poll", "goroutine":
		loadgen.SetPollByDefaultForTest(r == "poll")
	case "":
	default:
		fmt.Fprintf(os.Stderr, "LLMLOAD_TEST_READ=%q: want poll or goroutine\n", r)
		os.Exit(2)
	}
	goleak.VerifyTestMain(m)
}
