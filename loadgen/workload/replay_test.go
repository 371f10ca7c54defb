package workload_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/simtokens"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/workload"
)

// arrival is a request as the server received it.
type arrival struct {
	at        time.Time
	maxTokens int
	prompt    string
}

// recorder is a simulated server that records when each request arrived,
// as its handler is called, and what it asked for.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	got  []arrival
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req struct {
		MaxTokens int `json:"max_tokens"`
		Messages  []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	a := arrival{at: at, maxTokens: req.MaxTokens}
	if len(req.Messages) > 0 {
		a.prompt = req.Messages[0].Content
	}
	rc.mu.Lock()
	rc.got = append(rc.got, a)
	rc.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	rc.next.ServeHTTP(w, r)
}

// writeMooncake writes a Mooncake trace of n requests over span: bursts
// and gaps, prompts of 100 to 2,000 tokens sharing prefixes, outputs of 4
// to 40 tokens.
func writeMooncake(t *testing.T, n int, span time.Duration) string {
	t.Helper()
	var b bytes.Buffer
	for i := range n {
		// Quadratic spacing: arrivals crowd toward the start.
		ms := math.Round(float64(span.Milliseconds()) * math.Pow(float64(i)/float64(n), 1.5))
		in := 100 + (i*397)%1900
		ids := make([]int, 0, (in+511)/512)
		for k := range (in + 511) / 512 {
			ids = append(ids, (i%3)*100+k) // three families of prefixes
		}
		hash, _ := json.Marshal(ids)
		fmt.Fprintf(&b, `{"timestamp": %v, "input_length": %d, "output_length": %d, "hash_ids": %s}`+"\n", ms, in, 4+(i*7)%37, hash)
	}
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o600))
	return path
}

// Replaying a trace sends each request when the trace says, as the server
// sees it: within 5 ms of its time from the first (99th percentile), each
// with the trace's output length as max_tokens and its input length as
// the prompt, and the run counts every request.
//
// A replay that misses the tolerance while the machine stopped the
// client's process for longer than it (a 20 ms timer of its Health fired
// more than that late) proves nothing about the client's timing — a
// request due then could not be sent by anyone — and is made again, up to
// five times.
func TestReplayOnTime(t *testing.T) {
	const n = 60
	path := writeMooncake(t, n, 6*time.Second)
	tr, err := workload.OpenTrace(path)
	require.NoError(t, err)
	require.Equal(t, n, tr.Requests)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	entries, errs := readTrace(t, workload.NewTraceReader(f, ""))
	require.Empty(t, errs)

	const within = 5 * time.Millisecond
	for attempt := 1; attempt <= 5; attempt++ {
		run, got := replay(t, tr)
		assert.Equal(t, loadgen.StopRequests, run.Stopped, "the run ends with the trace")
		assert.Equal(t, n, run.Summary.Completed, "every request of the trace, completed")
		assert.Equal(t, n, run.Summary.Requests)
		assert.Equal(t, n, run.Launched)
		assert.Equal(t, int64(n), run.Lateness.Count, "every arrival's lateness is recorded")
		require.Len(t, got, n)

		// Requests arrive in the trace's order but for ties; match them by
		// prompt.
		byPrompt := map[string]arrival{}
		for _, a := range got {
			byPrompt[a.prompt] = a
		}
		var devs []time.Duration
		first := got[0].at
		for i, e := range entries {
			it := (&workload.Replay{Sizing: workload.SimulatorSizing(true), Seed: 1}).Item(e)
			a, ok := byPrompt[it.Messages[0].Content]
			require.True(t, ok, "request %d reached the server", i)
			assert.Equal(t, e.OutputTokens, a.maxTokens, "request %d: max_tokens is the trace's output length", i)
			assert.Equal(t, e.InputTokens, simtokens.Count(a.prompt)+8, "request %d: the prompt is the trace's input length, template included", i)
			if i > 0 {
				dev := a.at.Sub(first) - (e.At - entries[0].At)
				devs = append(devs, max(dev, -dev))
			}
		}
		slices.Sort(devs)
		p99 := devs[int(math.Ceil(0.99*float64(len(devs))))-1]
		t.Logf("attempt %d: arrival at the server vs the trace, after the first: median %v, p99 %v, max %v; the client's lateness p99 %v, late %d; the client's timer lag max %v",
			attempt, devs[len(devs)/2], p99, devs[len(devs)-1], run.Lateness.P99, run.Late, run.Health.Lag.Max)
		if p99 > within && run.Health.Lag.Max > within {
			t.Logf("attempt %d: the machine stopped the client for %v: its timing proves nothing", attempt, run.Health.Lag.Max)
			continue
		}
		assert.LessOrEqual(t, p99, within, "each request reaches the server within %v of its time (p99)", within)
		return
	}
	t.Fatal("the machine stopped the client in every attempt: rerun the test alone")
}

// replay replays the trace against a simulated server that records what
// it received, sorted by arrival.
func replay(t *testing.T, tr *workload.Trace) (*loadgen.Run, []arrival) {
	t.Helper()
	p := loadgentest.FastProfile()
	p.Speed = 10
	h := loadgentest.NewHandler(p)
	defer h.Close()
	rc := &recorder{next: h}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: loadgen.NewStreamTransport(64)}}
	defer c.CloseIdleConnections()

	items := tr.Items(workload.Replay{Sizing: workload.SimulatorSizing(true), Seed: 1})
	feed := workload.NewFeed(items, &workload.Builder{Model: loadgentest.DefaultModel, IgnoreEOS: true})
	defer feed.Close()
	g := &loadgen.Generator{Client: c, Source: feed.Source, Load: feed.Load()}
	run, err := g.Run(t.Context())
	require.NoError(t, err)
	require.NoError(t, feed.Err())

	rc.mu.Lock()
	got := slices.Clone(rc.got)
	rc.mu.Unlock()
	slices.SortFunc(got, func(a, b arrival) int { return a.at.Compare(b.at) })
	return run, got
}

// A replay with a zero seed writes text of its own: a second replay of a
// trace against the same server finds no more of its prompts in the
// prefix cache than the first did (within 5 points), where a second replay
// with the first's seed finds them.
func TestReplaysDoNotRepeat(t *testing.T) {
	tr, err := workload.OpenTrace(writeMooncake(t, 24, 300*time.Millisecond))
	require.NoError(t, err)
	p := loadgentest.FastProfile()
	p.Speed = 10
	srv := loadgentest.NewServer(p)
	defer srv.Close()
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}
	defer c.CloseIdleConnections()

	// hitShare replays the trace once and returns the share of its prompt
	// tokens the server found in its prefix cache.
	hitShare := func(rp workload.Replay) float64 {
		before := srv.Handler.Stats()
		feed := workload.NewFeed(tr.Items(rp), &workload.Builder{Model: loadgentest.DefaultModel, IgnoreEOS: true})
		defer feed.Close()
		g := &loadgen.Generator{Client: c, Source: feed.Source, Load: feed.Load()}
		run, err := g.Run(t.Context())
		require.NoError(t, err)
		require.NoError(t, feed.Err())
		require.Equal(t, 24, run.Summary.Completed)
		after := srv.Handler.Stats()
		return float64(after.PrefixCacheHits-before.PrefixCacheHits) / float64(after.PrefixCacheQueries-before.PrefixCacheQueries)
	}
	sizing := workload.SimulatorSizing(true)
	first := hitShare(workload.Replay{Sizing: sizing})
	second := hitShare(workload.Replay{Sizing: sizing})
	t.Logf("prefix-cache hit share: first replay %.1f%%, second %.1f%%", 100*first, 100*second)
	assert.Positive(t, first, "the trace's requests share prefixes among themselves")
	assert.InDelta(t, first, second, 0.05, "a second replay with a zero seed is as cold as the first")

	rp := workload.Replay{Sizing: sizing, Seed: 42}
	again := hitShare(rp)
	repeated := hitShare(rp)
	t.Logf("with one seed twice: %.1f%%, then %.1f%%", 100*again, 100*repeated)
	assert.Greater(t, repeated, again+0.1, "the same seed, the same text: the cache holds it")
}

// A record whose hash IDs do not fit its input length at the replay's
// block size is refused with its line, before a run (Mix.Validate) and
// while reading (Trace.Items).
func TestReplayRefusesHashIDsThatDoNotFit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"timestamp": 0, "input_length": 600, "output_length": 4, "hash_ids": [1, 2]}
{"timestamp": 10, "input_length": 100, "output_length": 4, "hash_ids": [1, 2, 3]}
`), 0o600))
	tr, err := workload.OpenTrace(path)
	require.NoError(t, err, "well formed")
	mix := &workload.Mix{Trace: tr}
	err = mix.Validate()
	var fe *workload.FileError
	require.ErrorAs(t, err, &fe)
	require.Len(t, fe.Errs, 1)
	assert.Equal(t, 2, fe.Errs[0].Line)
	assert.Contains(t, err.Error(), "line 2: 3 hash_ids for input_length 100")

	mix.Replay.BlockTokens = 40 // 600 tokens are 15 blocks of 40, not 2
	require.ErrorAs(t, mix.Validate(), &fe)
	assert.Equal(t, 1, fe.Errs[0].Line)

	items := tr.Items(workload.Replay{Sizing: workload.SimulatorSizing(true)})
	defer items.(io.Closer).Close()
	_, err = items.Read()
	require.NoError(t, err, "line 1 fits 512-token blocks")
	_, err = items.Read()
	var pe *workload.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 2, pe.Line)
}
