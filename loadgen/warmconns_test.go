package loadgen_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
)

// TestBurstsFindConnectionsOpen: a schedule of same-instant bursts (16
// requests at once, then 24) is replayed against a server that notes, for
// every streaming request, whether it came on a connection that had
// carried nothing before. Before the run starts, the generator opens a
// connection for each request of the largest burst in the schedule's
// first seconds, so no request of either burst dials as it is due.
// (net/http's transport puts a connection back in its pool from a
// goroutine of its own, a moment after its answer was read: a burst just
// after the warm-up may still find a few of them out.)
func TestBurstsFindConnectionsOpen(t *testing.T) {
	p := loadgentest.FastProfile()
	h := loadgentest.NewHandler(p)
	defer h.Close()
	var mu sync.Mutex
	seen := map[string]int{} // requests a connection carried
	var dialed, streamed int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.Method == http.MethodPost {
			streamed++
			if seen[r.RemoteAddr] == 0 {
				dialed++
			}
		}
		seen[r.RemoteAddr]++
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: loadgen.NewStreamTransport(64)}}
	defer c.CloseIdleConnections()

	bursts := []struct {
		at time.Duration
		n  int
	}{{0, 16}, {400 * time.Millisecond, 24}}
	var due []time.Duration
	for _, b := range bursts {
		for range b.n {
			due = append(due, b.at)
		}
	}
	g := &loadgen.Generator{
		Client: c,
		Load: loadgen.Schedule{MaxInFlight: 64, Due: func(seq int) (time.Duration, bool) {
			if seq >= len(due) {
				return 0, false
			}
			return due[seq], true
		}},
		Source: loadgen.Repeat(completion(5)),
	}
	run, err := g.Run(t.Context())
	require.NoError(t, err)
	assert.Equal(t, len(due), run.Summary.Completed)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, len(due), streamed)
	// Without the warm-up, 24 of the 40 dial (each of the first burst, and
	// the second's 8 more); with it none does on an idle machine, and a
	// connection or two may be late back in the pool on a loaded one.
	t.Logf("%d of %d requests dialled their connection as they were due", dialed, streamed)
	assert.LessOrEqual(t, dialed, 4, "streaming requests that dialled their connection as they were due")
	assert.GreaterOrEqual(t, len(seen), 24, "a connection for each request of the largest burst")
}
