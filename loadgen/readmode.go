package loadgen

import (
	"strings"
	"sync/atomic"
)

// A readMode is how a response body was read: see [Run].ReadMode.
type readMode int

const (
	readPolled    readMode = iota // on the shared pollers of a StreamTransport with Poll
	readGoroutine                 // by the request's goroutine, from a StreamTransport's connection
	readNetHTTP                   // by the request's goroutine, from another transport's body (net/http's)
	readModes
)

// readModeNames are the words of [Run].ReadMode, by readMode.
var readModeNames = [readModes]string{"shared pollers", "a goroutine per stream", "net/http"}

// readCounts counts the bodies a Client has read, by readMode.
type readCounts [readModes]atomic.Int64

// snapshot returns the counts now.
func (rc *readCounts) snapshot() [readModes]int64 {
	var n [readModes]int64
	for m := range n {
		n[m] = rc[m].Load()
	}
	return n
}

// readModeSince names the ways of reading that were used since from was
// taken: "shared pollers", "a goroutine per stream" or "net/http", or
// several joined by " and "; "" where no body was read.
func readModeSince(from, to [readModes]int64) string {
	var used []string
	for m := range from {
		if to[m] > from[m] {
			used = append(used, readModeNames[m])
		}
	}
	return strings.Join(used, " and ")
}
