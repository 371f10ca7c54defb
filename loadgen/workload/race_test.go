//go:build race

package workload_test

// raceEnabled reports a build with the race detector, which makes the
// client several times slower to launch a request.
const raceEnabled = true
