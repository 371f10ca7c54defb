package loadgen_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/internal/simtokens"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/metrics"
)

// joined is one request's client timeline and server timings, beside the
// simulator's ground truth.
type joined struct {
	ttft, queue, prefill, rest time.Duration
	truthQueue                 time.Duration // the server's: first admission − receipt
	handlerTTFT                time.Duration // the handler's: first chunk flushed − request received
}

// The server's timings, asked for with include_metrics, are joined to the
// client's: at 1, 16 and 256 streams (256 on a server that runs 64 at
// once, so requests queue), each request's server queue matches the
// simulator's ground truth, and server queue + server prefill + the
// network and client (client TTFT − the handler's TTFT, from the ground
// truth) make up the client's TTFT, within 1 ms at p50.
func TestServerTimingsJoined(t *testing.T) {
	longtest.Skip(t)
	for _, tc := range []struct{ streams, seqs int }{{1, 64}, {16, 64}, {256, 64}} {
		t.Run(fmt.Sprintf("streams=%d", tc.streams), func(t *testing.T) {
			queueErr, sumErr, rest := joinRun(t, tc.streams, tc.seqs)
			t.Logf("%d streams: %d requests; |server queue − truth| p50 %v max %v; |queue + prefill + network and client − TTFT| p50 %v; rest p50 %v",
				tc.streams, len(queueErr), median(queueErr), slices.Max(queueErr), median(sumErr), median(rest))
			assert.Less(t, slices.Max(queueErr), time.Millisecond, "every joined queue time within 1 ms of the ground truth")
			assert.Less(t, median(sumErr), time.Millisecond)
		})
	}
}

func joinRun(t *testing.T, streams, seqs int) (queueErr, sumErr, rest []time.Duration) {
	p := loadgentest.FastProfile()
	p.DecodeBase = []loadgentest.BatchCost{{Batch: 1, Seconds: 0.004}}
	p.PrefillPerToken = 2e-5 // 256 tokens: 5 ms
	p.MaxNumSeqs = seqs
	p.TruthBytes = 256 << 20
	srv := loadgentest.NewServer(p)
	defer srv.Close()
	client := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: loadgen.NewHTTPClientForTest(streams)}
	defer client.CloseIdleConnections()
	req := &loadgen.Request{API: loadgen.Completions, Model: "bench", Prompt: simtokens.Prompt(256, "join"), MaxTokens: 16, IgnoreEOS: true,
		Extra: map[string]any{"include_metrics": true}}

	var mu sync.Mutex
	var got []struct {
		id string
		j  joined
	}
	g := &loadgen.Generator{Client: client, Load: loadgen.Closed{Streams: streams}, Requests: max(3*streams, 20), Source: loadgen.Repeat(req),
		OnRequest: func(_ *loadgen.Request, tl *metrics.Timeline) {
			q, pre, r, ok := tl.Split()
			if !assert.True(t, ok, "server timings on every request: %+v", tl.Server) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			got = append(got, struct {
				id string
				j  joined
			}{tl.ID, joined{ttft: tl.TTFT(), queue: q, prefill: pre, rest: r}})
		}}
	run, err := g.Run(t.Context())
	require.NoError(t, err)
	require.Equal(t, run.Launched, run.Summary.Completed+run.Summary.WarmupRequests)
	require.Equal(t, run.Launched, len(got), "a record for every request")
	for _, r := range got {
		truth, ok := srv.Truth().Request(r.id)
		require.True(t, ok, r.id)
		require.NotEmpty(t, truth.Chunks)
		j := r.j
		j.truthQueue = truth.Scheduled.Sub(truth.Received)
		j.handlerTTFT = truth.Chunks[0].Time.Sub(truth.Received)
		assert.Equal(t, j.ttft, j.queue+j.prefill+j.rest, "the split adds up")
		queueErr = append(queueErr, (j.queue - j.truthQueue).Abs())
		network := j.ttft - j.handlerTTFT
		sumErr = append(sumErr, (j.queue + j.prefill + network - j.ttft).Abs())
		rest = append(rest, j.rest)
	}
	if streams == 256 {
		var queued int
		for _, r := range got {
			if r.j.queue > 5*time.Millisecond {
				queued++
			}
		}
		assert.Positive(t, queued, "256 streams on 64 places: some requests queued")
	}
	return queueErr, sumErr, rest
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestServerTimingsOption: Request.ServerTimings asks the server for its
// own timings (include_metrics: true in the body) of a Completions or Chat
// request, and the simulator's come back in the timeline; without it none
// are asked for, and an include_metrics in Extra still works, and
// overrides it. A Responses or Messages request does not send it.
func TestServerTimingsOption(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	client := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}
	for _, api := range []loadgen.API{loadgen.Completions, loadgen.Chat} {
		for _, tc := range []struct {
			name    string
			timings bool
			extra   map[string]any
			asked   bool
		}{
			{name: "ServerTimings", timings: true, asked: true},
			{name: "neither"},
			{name: "Extra", extra: map[string]any{"include_metrics": true}, asked: true},
			{name: "Extra overrides", timings: true, extra: map[string]any{"include_metrics": false}},
		} {
			req := &loadgen.Request{API: api, Model: "bench", Prompt: "hello there", MaxTokens: 4, IgnoreEOS: true,
				ServerTimings: tc.timings, Extra: tc.extra}
			body, err := req.Body()
			require.NoError(t, err)
			assert.Equal(t, tc.asked, strings.Contains(string(body), `"include_metrics":true`), "%s %s: %s", api, tc.name, body)
			var tl metrics.Timeline
			require.NoError(t, client.Measure(t.Context(), req, &tl, nil), "%s %s", api, tc.name)
			_, _, _, ok := tl.Split()
			assert.Equal(t, tc.asked, ok, "%s %s: the server's timings in the timeline: %+v", api, tc.name, tl.Server)
		}
	}
	for _, api := range []loadgen.API{loadgen.Responses, loadgen.Messages, loadgen.Embeddings} {
		req := &loadgen.Request{API: api, Model: "bench", Prompt: "hello", ServerTimings: true}
		if api != loadgen.Embeddings {
			req.MaxTokens = 4
		}
		body, err := req.Body()
		require.NoError(t, err)
		assert.NotContains(t, string(body), "include_metrics", api)
	}
	req := &loadgen.Request{API: loadgen.Chat, Prompt: "x", ServerTimings: true}
	_, err := req.Body()
	require.NoError(t, err)
	req.ServerTimings = false
	_, err = req.Body()
	var ce *loadgen.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Request.ServerTimings", ce.Field, "a change after the first use is noticed")
}
