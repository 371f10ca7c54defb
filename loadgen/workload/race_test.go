//go:build race

package workload_test

// raceEnabled reports a build with the race detector, which makes the
// client several times slower at everything it does before a request is
// written.
const raceEnabled = true
