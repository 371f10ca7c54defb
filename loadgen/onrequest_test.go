package loadgen_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/metrics"
)

// OnRequest sees every attempt the recorder counts, once, with the request
// sent and its outcome: requests that fail and are sent again, warm-up and
// window alike.
func TestOnRequestSeesEveryAttempt(t *testing.T) {
	_, client := simulated(t, 2*time.Millisecond, 8)
	ok := completion(8)
	bad := completion(8)
	bad.Header = map[string][]string{loadgentest.FaultHeader: {"status=503"}}
	var mu sync.Mutex
	seen := map[*loadgen.Request]int{}
	outcomes := map[string]int{}
	var tokens int
	g := &loadgen.Generator{
		Client: client, Load: loadgen.Closed{Streams: 4}, Requests: 40, Retries: 2, FailurePause: -1,
		Warmup: 20 * time.Millisecond,
		Source: func(_, seq int) *loadgen.Request {
			if seq%4 == 3 {
				return bad
			}
			return ok
		},
		OnRequest: func(req *loadgen.Request, tl *metrics.Timeline) {
			mu.Lock()
			defer mu.Unlock()
			seen[req]++
			outcomes[tl.Outcome()]++
			tokens += tl.OutputTokens()
			if tl.Outcome() == "failed" {
				assert.Equal(t, metrics.KindServerStatus, tl.Kind)
			}
		},
	}
	run, err := g.Run(t.Context())
	require.NoError(t, err)
	all := run.Recorder.Recording(metrics.ScopeAll).Summary
	assert.Equal(t, run.Launched, all.Requests)
	assert.Equal(t, all.Requests, seen[ok]+seen[bad], "one call a request")
	assert.Equal(t, 2*(seen[bad]/3), run.Retried, "each bad request sent three times")
	assert.Equal(t, all.Failed, outcomes["failed"])
	assert.Equal(t, all.Completed+all.CompletedOutside, outcomes["completed"])
	assert.Equal(t, 8*outcomes["completed"], tokens)
	assert.Positive(t, outcomes["failed"])
}
