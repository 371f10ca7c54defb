//go:build !unix

package safefile

// Elsewhere open(2) has no such flags; the checks before opening remain.
const (
	nonBlock = 0
	noFollow = 0
)
