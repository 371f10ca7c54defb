//go:build race

package loadgen_test

// raceEnabled reports a build with the race detector, which makes the
// client many times slower per chunk.
const raceEnabled = true
