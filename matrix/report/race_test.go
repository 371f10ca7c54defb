//go:build race

package report

// raceEnabled reports a build with the race detector, which slows the
// in-process simulator too much to keep its schedule on a busy machine.
const raceEnabled = true
