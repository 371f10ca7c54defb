package workload_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case helperSimulator:
		serveSimulator()
		return
	case helperProbe:
		probeMachine()
		return
	}
	goleak.VerifyTestMain(m)
}
