// Package sleep waits for a while or until a context ends, whichever comes
// first: the one wait of llmload's loops that pace, back off or poll.
package sleep

import (
	"context"
	"time"
)

// For waits d, or until ctx ends, and reports whether ctx is still live
// (d passed, or d was not positive and ctx has not ended).
func For(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Until waits until t, or until ctx ends, and reports whether ctx is still
// live.
func Until(ctx context.Context, t time.Time) bool { return For(ctx, time.Until(t)) }
