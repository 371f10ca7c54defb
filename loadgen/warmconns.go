package loadgen

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// warmConnsTimeout bounds the opening of connections ahead of an open
// loop's arrivals: a server that does not answer by then is left to the
// arrivals themselves.
const warmConnsTimeout = 2 * time.Second

// warmConns opens n connections to the server and leaves them idle in the
// client's pool, so that n arrivals due at once each find one open rather
// than dialling as they are due: it sends n GET requests for the model
// list at once and, once every one has its answer's header (or has
// failed), reads each answer to its end. Holding every answer open until
// all have come keeps a connection from going back to the pool and
// carrying a second request of the n, which would leave fewer than n
// open. It is best effort: a failure here is the arrivals' to meet and
// count.
func (c *Client) warmConns(ctx context.Context, n int) {
	if n <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, warmConnsTimeout)
	defer cancel()
	hc := c.httpClient()
	url := strings.TrimRight(c.BaseURL, "/") + "/models"
	var answered sync.WaitGroup
	answered.Add(n)
	all := make(chan struct{})
	go func() { answered.Wait(); close(all) }()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			resp, err := c.warmRequest(ctx, hc, url)
			answered.Done()
			if err != nil {
				return
			}
			select {
			case <-all:
			case <-ctx.Done():
			}
			// Read to the end, within a bound, so the connection goes back
			// to the pool.
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
		})
	}
	wg.Wait()
}

// warmRequest sends one request of warmConns and returns its answer, its
// body unread.
func (c *Client) warmRequest(ctx context.Context, hc *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	for k, vs := range c.Header {
		req.Header[k] = vs
	}
	return hc.Do(req)
}

// warmSettle is how long a run waits after opening its connections for
// the transport to have them all in its pool.
const warmSettle = 20 * time.Millisecond

// burstWindow is how close together arrivals must be due to count as
// one burst: each of them needs a connection of its own at once.
const burstWindow = 10 * time.Millisecond

// maxAhead bounds the arrivals read ahead.
const maxAhead = 4096

// firstLookahead is how far into its schedule an open loop looks for its
// largest burst before its first arrival.
const firstLookahead = 10 * time.Second

// lookahead is how far ahead of an open loop's next arrival the schedule
// is read, to see its bursts coming.
const lookahead = time.Second

// upcoming is the arrivals an open loop has read from its schedule and not
// yet launched, in order.
type upcoming struct {
	due  func(seq int) (time.Time, bool)
	next int         // the next seq to read
	at   []time.Time // due times of seq next-len(at) … next-1
	seq  int         // the seq of at[0]
	done bool        // the schedule has ended
	max  int         // bound on len(at)
}

// fill reads the schedule up to until, or until max arrivals are read
// ahead, and returns the index in at of the first arrival it read.
func (u *upcoming) fill(until time.Time) int {
	first := len(u.at)
	for !u.done && len(u.at) < u.max && (len(u.at) == 0 || !u.at[len(u.at)-1].After(until)) {
		at, ok := u.due(u.next)
		if !ok {
			u.done = true
			break
		}
		u.at = append(u.at, at)
		u.next++
	}
	return first
}

// pop returns the next arrival, reading the schedule if none is read.
func (u *upcoming) pop() (int, time.Time, bool) {
	if len(u.at) == 0 {
		u.fill(time.Time{})
		if len(u.at) == 0 {
			return 0, time.Time{}, false
		}
	}
	seq, at := u.seq, u.at[0]
	u.at = u.at[1:]
	u.seq++
	return seq, at, true
}

// popBy returns the next arrival if it is due by t.
func (u *upcoming) popBy(t time.Time) (int, time.Time, bool) {
	if len(u.at) == 0 {
		u.fill(t)
	}
	if len(u.at) == 0 || u.at[0].After(t) {
		return 0, time.Time{}, false
	}
	return u.pop()
}

// burst returns the largest number of the arrivals read ahead that are
// due within burstWindow, counting the bursts that end at at[from:]: each
// arrival is looked at once when it is read, not at every launch.
func (u *upcoming) burst(from int) int {
	most := 0
	for j := from; j < len(u.at); j++ {
		n := 1
		for i := j - 1; i >= 0 && u.at[j].Sub(u.at[i]) <= burstWindow; i-- {
			n++
		}
		most = max(most, n)
	}
	return most
}
