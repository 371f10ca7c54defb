package shard_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/shard"
)

// pacedSpec is a short matrix against a server that sends a token every
// 10 ms to every stream, however many: 100 tok/s a stream.
func pacedSpec(url string, concurrency ...int) matrix.Spec {
	return matrix.Spec{
		URL: url, Model: loadgentest.DefaultModel, API: loadgen.Completions,
		Contexts: []int{0}, Concurrency: concurrency, Prefill: []int{},
		Duration: matrix.Duration(3 * time.Second), MaxTokens: 30000,
		Warmup: &matrix.Warmup{Min: matrix.Duration(300 * time.Millisecond), Flow: matrix.Duration(500 * time.Millisecond),
			Timeout: matrix.Duration(15 * time.Second)},
	}
}

// syncBuffer is a log several goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fleet is a leader served on loopback and followers in goroutines.
type fleet struct {
	leader    *shard.Leader
	url       string
	followers []*shard.Follower
	errs      []error
	cancel    []context.CancelFunc
	wg        sync.WaitGroup
	log       *syncBuffer
}

func startFleet(t *testing.T, spec matrix.Spec, followers int, silence time.Duration) *fleet {
	t.Helper()
	f := &fleet{log: &syncBuffer{}}
	f.leader = &shard.Leader{Spec: spec, Followers: followers, JoinTimeout: 20 * time.Second, Silence: silence, Log: f.log}
	srv := httptest.NewServer(f.leader)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	f.errs = make([]error, followers)
	for i := range followers {
		ctx, cancel := context.WithCancel(context.Background())
		fw := &shard.Follower{Leader: srv.URL, Name: "follower-" + string(rune('a'+i)), Log: f.log}
		f.followers = append(f.followers, fw)
		f.cancel = append(f.cancel, cancel)
		f.wg.Go(func() { f.errs[i] = fw.Run(ctx) })
	}
	t.Cleanup(func() {
		for _, c := range f.cancel {
			c()
		}
		f.wg.Wait()
	})
	return f
}

// TestFleetMergesShards: a leader and two followers, in one process,
// measure two cells against a server of known pacing: the cells' shares
// split the streams, the merged throughput is 100 tok/s a stream, the time
// between tokens 10 ms, and the merged recording holds every shard's
// tokens and requests. When the run ends, the followers are told and end.
func TestFleetMergesShards(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	spec := pacedSpec(srv.URL+"/v1", 3, 7)
	f := startFleet(t, spec, 2, shard.DefaultSilence)
	r := &matrix.Runner{Spec: spec, Fleet: f.leader, Log: f.log,
		Client: &loadgen.Client{HTTPClient: srv.Client()}}
	res, err := r.Run(t.Context())
	require.NoError(t, err, f.log.String())
	f.leader.Close(t.Context())
	f.wg.Wait()
	for i, err := range f.errs {
		assert.NoError(t, err, "follower %d ends when the run is over", i+1)
	}

	for _, c := range res.Cells {
		require.NotNil(t, c.Measurement, "%d: %s %s", c.Concurrency, c.Status, c.Reason)
		assert.Equal(t, matrix.Valid, c.Status, "%d: %s", c.Concurrency, c.Reason)
		assert.False(t, c.Measurement.Partial)
		require.Len(t, c.Measurement.Shards, 3, f.log.String())
		shares := []int{}
		tokens := 0
		for i, s := range c.Measurement.Shards {
			assert.Equal(t, i, s.Index)
			assert.Empty(t, s.Lost)
			assert.Positive(t, s.OutputTokens)
			assert.Less(t, s.ClockErrorMs, 5.0, "loopback")
			shares = append(shares, s.Streams)
			tokens += s.OutputTokens
		}
		assert.Equal(t, matrix.SplitConcurrency(c.Concurrency, 3), shares)
		assert.Equal(t, tokens, c.Measurement.OutputTokens, "the merged tokens are the shards' tokens")
		assert.InEpsilon(t, 100*float64(c.Concurrency), c.Measurement.TotalTokensPerSec, 0.05, "%d streams", c.Concurrency)
		assert.InDelta(t, 10, c.Measurement.TBT.P50, 0.3)
		require.NotNil(t, c.Measurement.Recording)
		assert.Equal(t, int64(c.Measurement.Recording.Summary.Requests), c.Measurement.Recording.Histograms.Latency.Count()+int64(c.Measurement.Recording.Summary.Canceled+c.Measurement.Recording.Summary.Failed),
			"every request in the merged histograms")
	}
}

// TestFleetLosesASilentFollower: a follower that stops answering in the
// middle of a cell's window is dropped from that cell, which says which
// shard it lost and is partial; the run goes on, and the next cell runs on
// the shards that are left.
func TestFleetLosesASilentFollower(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	spec := pacedSpec(srv.URL+"/v1", 4, 6)
	f := startFleet(t, spec, 2, time.Second)
	r := &matrix.Runner{Spec: spec, Fleet: f.leader, Log: f.log,
		Client: &loadgen.Client{HTTPClient: srv.Client()}}
	// Silence follower 2 once the first cell's window is open.
	go func() {
		deadline := time.After(30 * time.Second)
		for {
			select {
			case <-deadline:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if bytes.Contains([]byte(f.log.String()), []byte("cell 1: context 0 × 4")) {
				time.Sleep(3 * time.Second) // launch, warm-up, into the window
				f.cancel[1]()
				return
			}
		}
	}()
	res, err := r.Run(t.Context())
	require.NoError(t, err, f.log.String())
	f.leader.Close(t.Context())
	f.wg.Wait()
	assert.True(t, errors.Is(f.errs[1], context.Canceled), "%v", f.errs[1])

	first := res.Cells[0]
	require.NotNil(t, first.Measurement, f.log.String())
	assert.True(t, first.Measurement.Partial, "a cell that lost a shard is partial")
	require.Len(t, first.Measurement.Shards, 3)
	lost := first.Measurement.Shards[1]
	if lost.Name != "follower-b" {
		lost = first.Measurement.Shards[2]
	}
	require.Equal(t, "follower-b", lost.Name)
	assert.Contains(t, lost.Lost, "no word from it", f.log.String())
	assert.Contains(t, strings.Join(first.Measurement.Notes, "\n"), fmt.Sprintf("shard %d (follower-b) was lost: no word from it", lost.Index))
	assert.Equal(t, first.Concurrency-lost.Streams, first.Measurement.Shards[0].Streams+first.Measurement.Shards[3-lost.Index].Streams)
	// The shards left, within 10%: the server and every shard share this
	// process, and the test runs beside others.
	assert.InEpsilon(t, 100*float64(first.Concurrency-lost.Streams), first.Measurement.TotalTokensPerSec, 0.1, "the shards left: %.1f tok/s; %s", first.Measurement.TotalTokensPerSec, f.log.String())

	second := res.Cells[1]
	require.NotNil(t, second.Measurement, f.log.String())
	assert.False(t, second.Measurement.Partial)
	require.Len(t, second.Measurement.Shards, 2, "the next cell runs on the shards left")
	assert.Equal(t, []int{3, 3}, []int{second.Measurement.Shards[0].Streams, second.Measurement.Shards[1].Streams})
	assert.InEpsilon(t, 600, second.Measurement.TotalTokensPerSec, 0.05)
}
