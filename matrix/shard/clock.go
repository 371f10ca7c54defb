package shard

import (
	"context"
	"net/http"
	"time"
)

// clockExchanges is how many exchanges measure a clock: the one with the
// shortest round trip is kept, the one least delayed on its way.
const clockExchanges = 8

// offset is the result of an NTP-style exchange between a follower and its
// leader: the follower's clock minus the leader's, and the bound of that
// measure, half the exchange's round trip (the time the messages spent on
// the way, which the exchange cannot split).
type offset struct {
	Offset, Error time.Duration
}

// offsetOf computes the offset from one exchange: t1 the follower sent, t2
// the leader received, t3 the leader replied, t4 the follower received,
// each on its sender's or receiver's clock.
func offsetOf(t1, t2, t3, t4 time.Time) offset {
	rtt := t4.Sub(t1) - t3.Sub(t2)
	// leader − follower = ((t2 − t1) + (t3 − t4)) / 2
	ahead := (t2.Sub(t1) + t3.Sub(t4)) / 2
	return offset{Offset: -ahead, Error: max(rtt, 0) / 2}
}

// measureClock runs clockExchanges exchanges with the leader at base and
// returns the one with the shortest round trip. now is the follower's
// clock.
func measureClock(ctx context.Context, hc *http.Client, token, run, base string, now func() time.Time) (offset, error) {
	best := offset{Error: -1}
	var last error
	for range clockExchanges {
		t1 := now().Round(0)
		var resp clockResponse
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := post(rctx, hc, token, run, base, pathClock, clockRequest{Sent: t1}, &resp)
		cancel()
		t4 := now().Round(0)
		if err != nil {
			last = err
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if o := offsetOf(t1, resp.Received, resp.Replied, t4); best.Error < 0 || o.Error < best.Error {
			best = o
		}
	}
	if best.Error < 0 {
		return offset{}, last
	}
	return best, nil
}
