//go:build !linux

package loadgen

import (
	"context"
	"io"
	"time"
)

// pollStream is never made on this system: StreamTransport reads every
// body on the goroutine of its request.
type pollStream struct{}

// pollSource returns nil: there is no poller on this system.
func (b *streamBody) pollSource() *pollStream { return nil }

func (*pollStream) Read([]byte) (int, error) { return 0, io.EOF }

func (*pollStream) arrival() time.Time { return time.Time{} }

func (*pollStream) tokenAt(time.Time) {}

func (*pollStream) run(context.Context, func() (bool, error)) (result, readErr error) {
	return nil, io.EOF
}

func setPollGather(time.Duration) time.Duration { return 0 }
