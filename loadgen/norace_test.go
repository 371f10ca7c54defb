//go:build !race

package loadgen_test

const raceEnabled = false
