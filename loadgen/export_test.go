package loadgen

import (
	"time"

	"github.com/llmload/llmload/internal/clockstep"
	"github.com/llmload/llmload/loadgen/internal/chunk"
)

// ParseChunkForBenchmark exposes the chunk parser to the external tests.
func ParseChunkForBenchmark(data []byte) error {
	var c chunk.Chunk
	return chunk.Parse(data, &c)
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

// StepClockForTest makes the process look as though the system clock was
// stepped by d since it began, and returns what undoes it. No other test
// may run meanwhile.
func StepClockForTest(d time.Duration) (undo func(), ok bool) {
	was := epoch
	stepped, ok := clockstep.Wall(epoch, -d)
	if !ok {
		return func() {}, false
	}
	epoch = stepped
	return func() { epoch = was }, true
}

// BodyInFlightForTest returns the bytes of answers c holds now against its
// MaxBodyInFlight.
func BodyInFlightForTest(c *Client) int64 { return c.bodies.Load() }
