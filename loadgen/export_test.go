package loadgen

import (
	"time"
	"unsafe"
)

// ParseChunkForBenchmark exposes the chunk parser to the external tests.
func ParseChunkForBenchmark(data []byte) error {
	var c chunk
	return parseChunk(data, &c)
}

// NewHTTPClientForTest exposes the transport sizing to the external tests.
var NewHTTPClientForTest = newHTTPClient

// NewArrivalsForTest returns the gap function of an open-loop arrival
// process.
func NewArrivalsForTest(rate, shape float64, seed uint64) func() time.Duration {
	return newArrivals(rate, shape, seed).next
}

// SetPollGatherForTest sets how long a poller that woke for few sockets
// waits for more, and returns the setting it replaces.
func SetPollGatherForTest(d time.Duration) time.Duration {
	return setPollGather(d)
}

// SetPollByDefaultForTest sets Poll in the transports NewStreamTransport
// makes.
func SetPollByDefaultForTest(on bool) { pollByDefault = on }

// WallStepped returns at moved by d on the wall clock alone, as time.Now
// reads it after the system clock was stepped by d: its monotonic reading
// is at's. ok is false where time.Time is laid out otherwise.
func WallStepped(at time.Time, d time.Duration) (time.Time, bool) {
	s := at.Add(d)
	// A time.Time is {wall uint64; ext int64; loc}; with a monotonic
	// reading, ext holds it.
	(*[2]int64)(unsafe.Pointer(&s))[1] = (*[2]int64)(unsafe.Pointer(&at))[1]
	return s, s.Sub(at) == 0 && s.UnixNano()-at.UnixNano() == int64(d)
}

// StepClockForTest makes the process look as though the system clock was
// stepped by d since it began, and returns what undoes it. No other test
// may run meanwhile.
func StepClockForTest(d time.Duration) (undo func(), ok bool) {
	was := epoch
	stepped, ok := WallStepped(epoch, -d)
	if !ok {
		return func() {}, false
	}
	epoch = stepped
	return func() { epoch = was }, true
}
