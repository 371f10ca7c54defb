package loadgen_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// BenchmarkClientStream runs this test binary again as its server.
	if os.Getenv(blastServerEnv) != "" {
		os.Exit(serveBlast())
	}
	goleak.VerifyTestMain(m)
}
