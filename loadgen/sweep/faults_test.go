package sweep_test

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/loadgen/workload"
	"github.com/llmload/llmload/metrics"
)

// Failed requests are counted by kind, none of them good: a run where a
// third of the requests get a 500 and a third stall meets no objective
// that asks for nine in ten.
func TestFailuresCountAgainstTheObjective(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), StallTimeout: 200 * time.Millisecond}
	faults := []string{"", "status=500", "stall-after=2"}
	target := func(loadgen.Load) (*loadgen.Generator, error) {
		syn := &workload.Synthetic{Input: workload.Fixed(16), Output: workload.Fixed(6)}
		builders := make([]*workload.Builder, len(faults))
		for i, f := range faults {
			builders[i] = &workload.Builder{API: loadgen.Completions, Model: loadgentest.DefaultModel, IgnoreEOS: true}
			if f != "" {
				builders[i].Header = http.Header{loadgentest.FaultHeader: {f}}
			}
		}
		source := func(_, seq int) *loadgen.Request { return builders[seq%len(faults)].Request(syn.Item(seq)) }
		return &loadgen.Generator{Client: c, Source: source, Requests: 12, FailurePause: -1}, nil
	}
	obj := sweep.Objective{SLO: metrics.SLO{Latency: time.Minute}}
	r, err := sweep.Run(t.Context(), target, loadgen.Open{Arrival: loadgen.Constant, Rate: 50}, "faults", obj)
	require.NoError(t, err)
	s := r.Summary
	assert.Equal(t, 12, s.Requests)
	assert.Equal(t, 4, s.Completed)
	assert.Equal(t, 8, s.Failed)
	assert.Equal(t, map[metrics.ErrorKind]int{metrics.KindServerStatus: 4, metrics.KindStall: 4}, s.Errors)
	assert.Equal(t, 4, s.Good)
	assert.InDelta(t, 4.0/12, r.GoodShare, 1e-9, "failures are judged, and not good")
	assert.False(t, r.Met)

	var table bytes.Buffer
	require.NoError(t, (&sweep.Results{Runs: []sweep.Result{r}, Objective: &obj}).Write(&table, "table"))
	assert.Contains(t, table.String(), "Failed requests:                         8 (server_status ×4, stall ×4)")
	assert.Contains(t, table.String(), "Met the objective:                       no (33.3% of requests)")
}
