// Package longtest marks the tests that llmload's quick test command leaves
// out: integration runs of tens of seconds (whole matrices, fleets under
// hostile load, soak-like runs) and timing suites that want a quiet
// machine. They run when the test binary is built with the tag "long":
//
//	go test -race -tags long ./...
//
// which is what CI runs beside the quick command.
package longtest

import "testing"

// Enabled reports whether the long tests were asked for (-tags long).
const Enabled = enabled

// Skip skips t unless the long tests were asked for, saying how to run
// it.
func Skip(t testing.TB) {
	t.Helper()
	if !Enabled {
		t.Skip("a long test: run it with -tags long")
	}
}
