package shard_test

import (
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

	"github.com/llmload/llmload/internal/harness/logbuffer"
	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/shard"
	"github.com/llmload/llmload/metrics"
)

// pacedSpec is a short matrix against a server that sends a token every
// 10 ms to every stream, however many: 100 tok/s a stream.
func pacedSpec(url string, concurrency ...int) matrix.Spec {
	return matrix.Spec{
		URL: url, Model: loadgentest.DefaultModel, API: loadgen.Completions,
		Contexts: []int{0}, Concurrency: concurrency, Prefill: []int{},
		Duration: 3 * time.Second, MaxTokens: 30000,
		WarmupRule: &matrix.WarmupRule{Min: 300 * time.Millisecond, Flow: 500 * time.Millisecond,
			Timeout: 15 * time.Second},
	}
}

// token is the tests' fleet token.
const token = "the-fleet-token-of-the-tests"

// fleet is a leader served on loopback and followers in goroutines.
type fleet struct {
	leader    *shard.Leader
	url       string
	followers []*shard.Follower
	errs      []error
	cancel    []context.CancelFunc
	wg        sync.WaitGroup
	log       *logbuffer.Buffer
}

func startFleet(t *testing.T, spec matrix.Spec, followers int, silence time.Duration, configure ...func(*shard.Follower)) *fleet {
	t.Helper()
	f := &fleet{log: &logbuffer.Buffer{}}
	f.leader = &shard.Leader{Token: token, Spec: spec, Followers: followers, JoinTimeout: 20 * time.Second, Silence: silence, Log: f.log}
	srv := httptest.NewServer(f.leader)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	f.errs = make([]error, followers)
	for i := range followers {
		ctx, cancel := context.WithCancel(context.Background())
		fw := &shard.Follower{Token: token, Leader: srv.URL, Name: "follower-" + string(rune('a'+i)), Log: f.log}
		for _, c := range configure {
			c(fw)
		}
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
	longtest.Skip(t)
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	spec := pacedSpec(srv.URL+"/v1", 3, 7)
	f := startFleet(t, spec, 2, 0)
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
		assert.Equal(t, split(c.Concurrency, 3), shares)
		assert.Equal(t, tokens, c.Measurement.OutputTokens, "the merged tokens are the shards' tokens")
		assert.InEpsilon(t, 100*float64(c.Concurrency), c.Measurement.OutputTokensPerSec, 0.05, "%d streams", c.Concurrency)
		assert.InDelta(t, 10, c.Measurement.TBT.P50, 0.3)
		require.NotNil(t, c.Measurement.Recording)
		assert.Equal(t, int64(c.Measurement.Recording.Summary.Requests), c.Measurement.Recording.Histograms.Latency.Summary().Count+int64(c.Measurement.Recording.Summary.Canceled+c.Measurement.Recording.Summary.Failed),
			"every request in the merged histograms")
	}
}

// TestFleetLosesASilentFollower: a follower that stops answering in the
// middle of a cell's window is dropped from that cell, which says which
// shard it lost and is partial; the run goes on, and the next cell runs on
// the shards that are left.
func TestFleetLosesASilentFollower(t *testing.T) {
	longtest.Skip(t)
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	spec := pacedSpec(srv.URL+"/v1", 4, 6)
	f := startFleet(t, spec, 2, time.Second)
	r := &matrix.Runner{Spec: spec, Fleet: f.leader, Log: f.log,
		Client: &loadgen.Client{HTTPClient: srv.Client()}}
	// Silence follower 2 once the first cell's window is open and half a
	// second of its tokens (4 streams at 100 tok/s) were written.
	go func() {
		if waitIntoWindow(t.Context(), f.leader, srv, 1, 200) {
			f.cancel[1]()
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
	assert.InEpsilon(t, 100*float64(first.Concurrency-lost.Streams), first.Measurement.OutputTokensPerSec, 0.1, "the shards left: %.1f tok/s; %s", first.Measurement.OutputTokensPerSec, f.log.String())

	second := res.Cells[1]
	require.NotNil(t, second.Measurement, f.log.String())
	assert.False(t, second.Measurement.Partial)
	require.Len(t, second.Measurement.Shards, 2, "the next cell runs on the shards left")
	assert.Equal(t, []int{3, 3}, []int{second.Measurement.Shards[0].Streams, second.Measurement.Shards[1].Streams})
	assert.InEpsilon(t, 600, second.Measurement.OutputTokensPerSec, 0.05)
}

// TestLeaderRefusesACellTooLargeForItsShards: a spec of more streams than
// one process holds is a sharded run's to take, MaxStreams a shard;
// when fewer followers join than it planned, a cell whose share would pass
// that is failed with the reason, before any of its streams is sent.
func TestLeaderRefusesACellTooLargeForItsShards(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	spec := pacedSpec(srv.URL+"/v1", matrix.MaxStreams+1)
	spec.MaxTokens = 100 // within the simulator's KV cache
	_, err := (&matrix.Runner{Spec: spec, Client: &loadgen.Client{BaseURL: spec.URL, HTTPClient: srv.Client()}}).Run(t.Context())
	require.Error(t, err, "one process is refused")

	leader := &shard.Leader{Token: token, Spec: spec, Followers: 1, JoinTimeout: 300 * time.Millisecond}
	r := &matrix.Runner{Spec: spec, Fleet: leader, Client: &loadgen.Client{BaseURL: spec.URL, HTTPClient: srv.Client()}}
	res, err := r.Run(t.Context())
	leader.Close(t.Context())
	require.NoError(t, err, "two shards planned hold 16,385 streams")
	c := res.Cells[0]
	assert.Equal(t, matrix.Failed, c.Status)
	assert.Contains(t, c.Reason, "16385 streams over 1 shard (of 2 planned) are 16385 a shard, above 16384")
	assert.Nil(t, c.Measurement, "nothing measured")
	assert.Less(t, len(srv.Truth().Requests())+int(srv.Truth().Forgotten()), 10, "no stream of the cell was sent")
}

// TestFleetLateJoinWaitsForTheNextCell: a follower that joins while a cell
// runs takes no part in it (the cell runs on the shards it began with, not
// partial) and takes its share of the next one.
func TestFleetLateJoinWaitsForTheNextCell(t *testing.T) {
	longtest.Skip(t)
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	spec := pacedSpec(srv.URL+"/v1", 4, 6)
	f := startFleet(t, spec, 1, 0)
	r := &matrix.Runner{Spec: spec, Fleet: f.leader, Log: f.log,
		Client: &loadgen.Client{BaseURL: spec.URL, HTTPClient: srv.Client()}}
	late := &logbuffer.Buffer{}
	var lateErr error
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		wg.Wait()
	}()
	wg.Go(func() {
		deadline := time.Now().Add(30 * time.Second)
		// Into the cell's warm-up: every stream of cell 1 is at the server.
		for !strings.Contains(f.log.String(), "cell 1: context 0 × 4") || srv.Handler.Stats().Running < 4 {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		fw := &shard.Follower{Token: token, Leader: f.url, Name: "late", Log: late}
		lateErr = fw.Run(ctx)
	})
	res, err := r.Run(t.Context())
	require.NoError(t, err, f.log.String())
	f.leader.Close(t.Context())
	f.wg.Wait()
	cancel()
	wg.Wait()
	assert.NoError(t, lateErr, "the late follower ends with the run: %s", late.String())
	require.Contains(t, late.String(), "joined", "the late follower joined: %s", f.log.String())
	log := f.log.String()
	joined, cell1, cell2 := strings.Index(log, "(late) joined"), strings.Index(log, "cell 1 of 2"), strings.Index(log, "cell 2 of 2")
	require.True(t, cell1 >= 0 && cell2 > cell1, log)
	require.True(t, joined > cell1 && joined < cell2, "it joined while cell 1 ran: %s", log)

	first := res.Cells[0]
	require.NotNil(t, first.Measurement, f.log.String())
	assert.False(t, first.Measurement.Partial, "a join is no loss")
	require.Len(t, first.Measurement.Shards, 2, "the cell that was running when it joined is the leader's and the first follower's")
	assert.Equal(t, []int{2, 2}, []int{first.Measurement.Shards[0].Streams, first.Measurement.Shards[1].Streams})
	assert.InEpsilon(t, 400, first.Measurement.OutputTokensPerSec, 0.05)
	assert.NotContains(t, late.String(), "cell 1:", "it ran no share of cell 1")

	second := res.Cells[1]
	require.NotNil(t, second.Measurement, f.log.String())
	require.Len(t, second.Measurement.Shards, 3, "it takes part from the next cell")
	assert.Equal(t, "late", second.Measurement.Shards[2].Name)
	assert.Equal(t, 2, second.Measurement.Shards[2].Streams)
	assert.Positive(t, second.Measurement.Shards[2].OutputTokens)
	assert.InEpsilon(t, 600, second.Measurement.OutputTokensPerSec, 0.05)
	assert.Contains(t, late.String(), "cell 2: context 0 × 6, 2 streams here")
}

// TestFleetReportsAClockOff: a follower whose clock is 150 ms ahead of
// the leader's measures that offset, sets its launch and window by it, and
// the cell, measured in full, gives the shard's offset and notes that it
// exceeds 1% of the window.
func TestFleetReportsAClockOff(t *testing.T) {
	longtest.Skip(t)
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	spec := pacedSpec(srv.URL+"/v1", 4)
	log := &logbuffer.Buffer{}
	leader := &shard.Leader{Token: token, Spec: spec, Followers: 1, JoinTimeout: 20 * time.Second, Log: log}
	hs := httptest.NewServer(leader)
	defer hs.Close()
	const ahead = 150 * time.Millisecond
	fw := &shard.Follower{Token: token, Leader: hs.URL, Name: "skewed", Log: log}
	shard.SetClock(fw, func() time.Time { return time.Now().Add(ahead) })
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ferr error
	wg.Go(func() { ferr = fw.Run(ctx) })
	defer func() {
		cancel()
		wg.Wait()
	}()
	r := &matrix.Runner{Spec: spec, Fleet: leader, Log: log,
		Client: &loadgen.Client{BaseURL: spec.URL, HTTPClient: srv.Client()}}
	res, err := r.Run(t.Context())
	require.NoError(t, err, log.String())
	leader.Close(t.Context())
	wg.Wait()
	assert.NoError(t, ferr)

	c := res.Cells[0]
	require.NotNil(t, c.Measurement, log.String())
	assert.Equal(t, matrix.Valid, c.Status, c.Reason)
	assert.False(t, c.Measurement.Partial)
	require.Len(t, c.Measurement.Shards, 2)
	s := c.Measurement.Shards[1]
	assert.InDelta(t, 150, s.ClockOffsetMs, 5, "the offset measured")
	assert.Less(t, s.ClockErrorMs, 5.0)
	assert.Zero(t, c.Measurement.Shards[0].ClockOffsetMs, "the leader's clock is the run's")
	assert.Contains(t, strings.Join(c.Measurement.Notes, "\n"), "shard 1 (skewed)'s clock was 150.", "the offset is noted")
	assert.Contains(t, strings.Join(c.Measurement.Notes, "\n"), "ms ahead of the leader's")
	assert.Contains(t, strings.Join(c.Measurement.Notes, "\n"), "more than 1% of the window")
	assert.Positive(t, s.OutputTokens)
	assert.InEpsilon(t, 400, c.Measurement.OutputTokensPerSec, 0.05, "both shards measured the window")
}

// TestFleetInterruptedBeforeTheWindow: a run interrupted after a cell has
// started but before any shard's window opened keeps nothing of that cell
// as a measurement: the cell is left unmeasured, with the reason, for
// -resume to run again, and the run says it was interrupted.
func TestFleetInterruptedBeforeTheWindow(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	spec := pacedSpec(srv.URL+"/v1", 4)
	f := startFleet(t, spec, 1, 0)
	r := &matrix.Runner{Spec: spec, Fleet: f.leader, Log: f.log,
		Client: &loadgen.Client{HTTPClient: srv.Client()}}
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	go func() {
		// The follower has its share; the launch is the launch delay
		// after the leader dealt it.
		for !strings.Contains(f.log.String(), "cell 1: context") && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		cancel(errors.New("interrupted"))
	}()
	res, err := r.Run(ctx)
	require.Error(t, err, f.log.String())
	f.leader.Close(t.Context())
	f.wg.Wait()
	require.NotNil(t, res)
	require.Len(t, res.Cells, 1)
	c := res.Cells[0]
	assert.Nil(t, c.Measurement, "nothing of a window to keep: %s", f.log.String())
	assert.Equal(t, matrix.StatusUnknown, c.Status, c.Reason)
	assert.Contains(t, c.Reason, "before its window opened")
	assert.False(t, res.Complete)
}

// waitIntoWindow waits until the window of the leader's cell seq is open
// and srv has written tokens output tokens since it opened. It returns
// false if ctx ends or a minute passes first.
func waitIntoWindow(ctx context.Context, l *shard.Leader, srv *loadgentest.Server, seq int, tokens int64) bool {
	base := int64(-1)
	for deadline := time.Now().Add(time.Minute); ctx.Err() == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		start, open := shard.WindowStart(l, seq)
		if !open || time.Now().Before(start) {
			continue
		}
		written := srv.Handler.Stats().WrittenTokens
		if base < 0 {
			base = written
		}
		if written-base >= tokens {
			return true
		}
	}
	return false
}

// split is the split the leader makes of n streams over shards: as even
// as possible, the first shards one more.
func split(n, shards int) []int {
	out := make([]int, shards)
	for i := range out {
		out[i] = n / shards
		if i < n%shards {
			out[i]++
		}
	}
	return out
}

// TestCancelledLeaderBeforeAnyFollower: a leader's run cancelled while it
// waits for its followers returns the context's cause within a second,
// not complete, its cell left unmeasured for -resume.
func TestCancelledLeaderBeforeAnyFollower(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	spec := pacedSpec(srv.URL+"/v1", 4)
	log := &logbuffer.Buffer{}
	leader := &shard.Leader{Token: token, Spec: spec, Followers: 2, JoinTimeout: time.Minute, Log: log}
	ls := httptest.NewServer(leader)
	defer ls.Close()
	r := &matrix.Runner{Spec: spec, Fleet: leader, Log: log, Client: &loadgen.Client{HTTPClient: srv.Client()}}
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	stop := errors.New("interrupted")
	var cancelled time.Time
	go func() {
		// The plan is printed and the leader waits for its followers.
		for !strings.Contains(log.String(), "waiting for 2 more followers") && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		cancelled = time.Now()
		cancel(stop)
	}()
	res, err := r.Run(ctx)
	returned := time.Since(cancelled)
	leader.Close(t.Context())
	require.ErrorIs(t, err, stop, log.String())
	assert.Less(t, returned, 2*time.Second, "returned %v after the cancellation (within a second on an idle machine)", returned)
	require.NotNil(t, res)
	assert.False(t, res.Complete)
	require.Len(t, res.Cells, 1)
	assert.Equal(t, matrix.StatusUnknown, res.Cells[0].Status, res.Cells[0].Reason)
	assert.Nil(t, res.Cells[0].Measurement)
}

// TestCancelledLeaderWithALostFollower: a follower killed in the middle of
// a cell and the leader's run cancelled soon after: the run returns the
// context's cause within a second, without waiting out the follower's
// silence or the report timeout.
func TestCancelledLeaderWithALostFollower(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	spec := pacedSpec(srv.URL+"/v1", 4)
	f := startFleet(t, spec, 1, 0)
	r := &matrix.Runner{Spec: spec, Fleet: f.leader, Log: f.log, Client: &loadgen.Client{HTTPClient: srv.Client()}}
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	stop := errors.New("interrupted")
	var cancelled time.Time
	go func() {
		// Into the window: a quarter of a second of its tokens (4
		// streams at 100 tok/s) were written.
		waitIntoWindow(ctx, f.leader, srv, 1, 100)
		f.cancel[0]() // the follower dies
		cancelled = time.Now()
		cancel(stop) // and the leader is interrupted
	}()
	res, err := r.Run(ctx)
	returned := time.Since(cancelled)
	f.leader.Close(t.Context())
	f.wg.Wait()
	require.ErrorIs(t, err, stop, f.log.String())
	// It waits 500 ms for the follower's part at most, then stops its own
	// streams: well within a second on an idle machine, within two on a
	// loaded one.
	assert.Less(t, returned, 2*time.Second, "returned %v after the cancellation: %s", returned, f.log.String())
	require.NotNil(t, res)
	assert.False(t, res.Complete)
}

// TestFleetMergesTheSplit: a sharded cell's TTFT split (the server's
// queue, its prefill and the rest) is the merge of its shards': the same
// as one recorder's of every request the leader and the follower sent.
func TestFleetMergesTheSplit(t *testing.T) {
	longtest.Skip(t)
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	spec := pacedSpec(srv.URL+"/v1", 6)
	spec.MaxTokens = 200
	all := metrics.Recorder{Every: time.Second}
	record := func(_ *loadgen.Request, tl *metrics.Timeline) {
		c := *tl
		all.Record(&c)
	}
	f := startFleet(t, spec, 1, 0, func(fw *shard.Follower) {
		fw.OnCell = func(_, _ int, g *loadgen.Generator) { g.OnRequest = record }
	})
	r := &matrix.Runner{Spec: spec, Fleet: f.leader, Log: f.log, Client: &loadgen.Client{HTTPClient: srv.Client()},
		OnCell: func(_, _ int, g *loadgen.Generator) { g.OnRequest = record }}
	res, err := r.Run(t.Context())
	require.NoError(t, err, f.log.String())
	f.leader.Close(t.Context())
	f.wg.Wait()

	c := res.Cell(0, 6)
	require.NotNil(t, c.Measurement, "%s %s", c.Status, c.Reason)
	require.Len(t, c.Measurement.Shards, 2)
	for _, s := range c.Measurement.Shards {
		require.Empty(t, s.Lost)
	}
	got := c.Measurement.Recording.Summary.Split
	want := all.Recording(metrics.ScopeAll).Summary.Split
	require.Positive(t, want.Requests, "the simulator reports its timings to every shard")
	assert.Equal(t, want, got, "the cell's split is every shard's request's")
	assert.Equal(t, int(want.Requests), c.Measurement.SplitRequests)

	// The cell's time series is every shard's: each request begun and
	// completed is in it, the follower's too, and one recorder of every
	// request buckets them alike.
	s, sum := c.Measurement.Series, c.Measurement.Recording.Summary
	require.NotNil(t, s)
	total := func(col []int) (n int) {
		for _, v := range col {
			n += v
		}
		return n
	}
	assert.Equal(t, sum.Requests, total(s.Started), "every shard's requests began in the series")
	assert.Equal(t, sum.Completed+sum.CompletedOutside, total(s.Finished))
	ws := all.Series()
	require.LessOrEqual(t, len(ws.Started), len(s.Started))
	assert.Equal(t, ws.Started, s.Started[len(s.Started)-len(ws.Started):], "begun in the same buckets as one recorder's")
	assert.Nil(t, s.Tokens, "the results keep the series once, without what it merged from")
	assert.Nil(t, c.Measurement.Recording.Series)
}
