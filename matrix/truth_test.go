package matrix_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/harness/hostileserver"
	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/report"
	"github.com/llmload/llmload/metrics"
)

// ollamaLike serves the simulator the way Ollama serves a model: no
// /metrics, no /tokenize and no max_model_len, so limits are unknown and
// prompts can be sized only from usage; a prompt longer than its context
// is cut to it silently (its first words kept, then its end), and usage
// counts what was kept. Optional misbehaviour: words beyond doubleAfter
// count twice (a tokenizer whose rate changes with length), a word counts
// a token for every charsPerToken characters (a small vocabulary, like a
// tiny model's, which counts the run's name in a prompt's head too),
// every failEvery-th generation request answers 500, and every request of
// one token after the first two of its prompt (a cold one, a warm one)
// waits lateScout first (a server still
// finishing the requests a cell's end cancelled when the next cell's
// scout arrives).
type ollamaLike struct {
	sim           http.Handler
	context       int // tokens a request's prompt is cut to; 0 never
	doubleAfter   int
	charsPerToken int
	failEvery     int64
	lateScout     time.Duration
	generations   atomic.Int64

	mu     sync.Mutex
	scouts map[string]int // requests of one token, by prompt
}

// scout counts a request of one token and returns how many of its prompt
// there have been.
func (o *ollamaLike) scout(body map[string]any) int {
	key := fmt.Sprint(body["prompt"], body["messages"])
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.scouts == nil {
		o.scouts = map[string]int{}
	}
	o.scouts[key]++
	return o.scouts[key]
}

// chatOverhead is the simulator's chat template: 8 tokens around one user
// message (see the loadgentest package documentation).
const chatOverhead = 8

func newOllamaLike(t *testing.T, p loadgentest.Profile, o *ollamaLike) *httptest.Server {
	t.Helper()
	sim := loadgentest.NewHandler(p)
	t.Cleanup(sim.Close)
	o.sim = sim
	srv := httptest.NewServer(o)
	t.Cleanup(srv.Close)
	return srv
}

func (o *ollamaLike) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/chat/completions", "/v1/completions":
	case "/v1/models":
		io.WriteString(w, `{"object":"list","data":[{"id":"bench","object":"model"}]}`)
		return
	default:
		http.NotFound(w, r)
		return
	}
	if o.failEvery > 0 && o.generations.Add(1)%o.failEvery == 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"message":"an unlucky request","type":"InternalServerError","code":500}}`)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if n, ok := body["max_tokens"].(float64); ok && n == 1 && o.lateScout > 0 && o.scout(body) > 2 {
		select {
		case <-time.After(o.lateScout):
		case <-r.Context().Done():
			return
		}
	}
	overhead := 0
	if r.URL.Path == "/v1/chat/completions" {
		overhead = chatOverhead
		msgs := body["messages"].([]any)
		m := msgs[0].(map[string]any)
		if text, ok := m["content"].(string); ok { // content parts (images) are sent as they are
			m["content"] = o.rewrite(text, overhead)
		}
	} else {
		body["prompt"] = o.rewrite(body["prompt"].(string), 0)
	}
	b, _ := json.Marshal(body)
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(b))
	r2.ContentLength = int64(len(b))
	o.sim.ServeHTTP(w, r2)
}

// rewrite applies the tokenizer's quirk and the context's cut to a prompt.
func (o *ollamaLike) rewrite(text string, overhead int) string {
	words := strings.Fields(text)
	if n := o.charsPerToken; n > 0 {
		var pieces []string
		for _, w := range words {
			for len(w) > n {
				pieces = append(pieces, w[:n])
				w = w[n:]
			}
			pieces = append(pieces, w)
		}
		words = pieces
	}
	if o.doubleAfter > 0 && len(words) > o.doubleAfter {
		var out []string
		for i, w := range words {
			out = append(out, w)
			if i >= o.doubleAfter {
				out = append(out, w)
			}
		}
		words = out
	}
	if limit := o.context - overhead; o.context > 0 && len(words) > limit {
		const keep = 5
		words = append(words[:keep:keep], words[len(words)-(limit-keep):]...)
	}
	return strings.Join(words, " ")
}

// quickWarmup keeps test cells short.
var quickWarmup = &matrix.WarmupRule{Min: 500 * time.Millisecond, Flow: time.Second, Timeout: 20 * time.Second}

func runMatrix(t *testing.T, spec matrix.Spec, srv *httptest.Server) (*matrix.Results, string) {
	t.Helper()
	var log bytes.Buffer
	r := &matrix.Runner{Spec: spec, Client: &loadgen.Client{HTTPClient: srv.Client()}, Log: &log, IdleTimeout: 100 * time.Millisecond}
	res, err := r.Run(t.Context())
	require.NoError(t, err, log.String())
	require.True(t, res.Complete)
	return res, log.String()
}

// TestPromptsOnATruncatingServer: a server with a 4,096-token context that
// cuts longer prompts silently and publishes no limit. Prompt sizing never
// calibrates from a cut answer; rows that fit are sized within 1% of their
// label as the server counts them; rows beyond the context are Over
// capacity because the server cut them, never measured as their label.
func TestPromptsOnATruncatingServer(t *testing.T) {
	longtest.Skip(t)
	p := loadgentest.FastProfile()
	p.Speed = 10
	p.MaxModelLen = 64 * 1024
	srv := newOllamaLike(t, p, &ollamaLike{context: 4096})
	spec := matrix.Spec{URL: srv.URL + "/v1", Model: "bench", API: loadgen.Chat,
		Contexts: []int{1024, 3 * 1024, 8 * 1024}, Concurrency: []int{1}, Prefill: []int{2 * 1024, 16 * 1024},
		Duration: time.Second, MaxTokens: 64, WarmupRule: quickWarmup}
	res, log := runMatrix(t, spec, srv)

	for _, row := range res.Prefill {
		switch row.ContextTokens {
		case 2 * 1024:
			assert.Equal(t, matrix.Valid, row.Status, row.Reason)
			assert.InDelta(t, row.ContextTokens, row.PromptTokens, float64(row.ContextTokens)/100, "sized as the server counts")
		default:
			assert.Equal(t, matrix.OverCapacity, row.Status, "prefill %d: %s", row.ContextTokens, row.Reason)
			assert.Contains(t, row.Reason, "truncate")
			assert.Equal(t, 4096, row.PromptTokens, "the size the server counted, not the label")
			assert.Zero(t, row.PromptTokensPerSec, "never measured as its label")
		}
	}
	for _, c := range res.Cells {
		if c.ContextTokens == 8*1024 {
			assert.Equal(t, matrix.OverCapacity, c.Status, c.Reason)
			assert.Contains(t, c.Reason, "truncate")
			assert.Nil(t, c.Measurement, "never measured")
			continue
		}
		assert.Equal(t, matrix.Valid, c.Status, "%d: %s", c.ContextTokens, c.Reason)
		assert.InDelta(t, c.ContextTokens, c.PromptTokens, float64(c.ContextTokens)/100, "%d sized as the server counts", c.ContextTokens)
	}
	assert.NotContains(t, log, "resized", "a rate calibrated within the context needs no correction here")

	var table bytes.Buffer
	require.NoError(t, report.Write(&table, report.Table, res))
	assert.Contains(t, table.String(), "16K (4,096 counted)", "the table shows the size the server counted")
}

// TestCalibrationOnASmallContext: a server whose context (600 tokens) is
// smaller than the calibration's usual request: the cut answer is caught
// (the prompt's second half counts fewer tokens a word than its first),
// the calibration shrinks, and rows within the context are still sized
// right.
func TestCalibrationOnASmallContext(t *testing.T) {
	longtest.Skip(t)
	p := loadgentest.FastProfile()
	p.Speed = 10
	srv := newOllamaLike(t, p, &ollamaLike{context: 600})
	spec := matrix.Spec{URL: srv.URL + "/v1", Model: "bench", API: loadgen.Completions,
		Contexts: []int{256, 400}, Concurrency: []int{1}, Prefill: []int{},
		Duration: time.Second, MaxTokens: 32, WarmupRule: quickWarmup}
	res, log := runMatrix(t, spec, srv)
	for _, c := range res.Cells {
		assert.Equal(t, matrix.Valid, c.Status, "%d: %s\n%s", c.ContextTokens, c.Reason, log)
		assert.InDelta(t, c.ContextTokens, c.PromptTokens, float64(c.ContextTokens)/100, "%d", c.ContextTokens)
	}
}

// TestPromptsResizedByTheServersCount: a tokenizer whose rate changes with
// length fools a calibration made on short prompts; the server's count of
// each prompt's first request corrects it, and the resized prompt is the
// one measured.
func TestPromptsResizedByTheServersCount(t *testing.T) {
	longtest.Skip(t)
	p := loadgentest.FastProfile()
	p.Speed = 10
	srv := newOllamaLike(t, p, &ollamaLike{doubleAfter: 1500})
	spec := matrix.Spec{URL: srv.URL + "/v1", Model: "bench", API: loadgen.Completions,
		Contexts: []int{0}, Concurrency: []int{1}, Prefill: []int{4 * 1024},
		Duration: time.Second, MaxTokens: 32, WarmupRule: quickWarmup}
	res, log := runMatrix(t, spec, srv)
	require.Len(t, res.Prefill, 1)
	row := res.Prefill[0]
	assert.Equal(t, matrix.Valid, row.Status, row.Reason)
	assert.InDelta(t, 4096, row.PromptTokens, 4096*0.01, log)
	assert.Contains(t, log, "resized")
	assert.GreaterOrEqual(t, row.Requests, 2, "the first prompt, then the resized one")
}

// TestPromptsResizedOnASmallVocabulary: a tokenizer of a few characters a
// token, like a tiny model's, counts filler words unevenly and the
// prompt's head (which names the run) as several tokens a word. Every row
// is sized within 2% of its label, on both APIs, however the calibration
// and the first resize land.
func TestPromptsResizedOnASmallVocabulary(t *testing.T) {
	longtest.Skip(t)
	p := loadgentest.FastProfile()
	p.Speed = 10
	srv := newOllamaLike(t, p, &ollamaLike{charsPerToken: 1})
	for _, api := range []loadgen.API{loadgen.Chat, loadgen.Completions} {
		t.Run(api.String(), func(t *testing.T) {
			spec := matrix.Spec{URL: srv.URL + "/v1", Model: "bench", API: api,
				Contexts: []int{0}, Concurrency: []int{1}, Prefill: []int{256, 512, 768, 1024, 1536},
				Duration: 500 * time.Millisecond, MaxTokens: 8, WarmupRule: quickWarmup}
			res, log := runMatrix(t, spec, srv)
			for _, row := range res.Prefill {
				assert.Equal(t, matrix.Valid, row.Status, row.Reason)
				assert.InEpsilon(t, row.ContextTokens, row.PromptTokens, 0.02, "prefill %d counted %d\n%s", row.ContextTokens, row.PromptTokens, log)
			}
		})
	}
}

// pacedProfile is a server in real time: tens of milliseconds to the
// first token, 10 ms between tokens, whatever the batch.
func pacedProfile() loadgentest.Profile {
	p := loadgentest.FastProfile()
	p.Speed = 1
	p.PrefillPerToken = 1e-3 // 20 ms for the short prompt
	return p
}

// TestShortRequestsOnAPacedServer: requests of 0.3 s and 1 s on a server
// that runs them all at once, with real-time pacing: every cell up to 16
// streams is Valid, its warm-up well under 20 s, though closed-loop slots
// spend a moment between requests and a moment in prefill. Both with the
// server's /metrics and with the client's own timeline alone.
func TestShortRequestsOnAPacedServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs in real time")
	}
	for _, metrics := range []bool{true, false} {
		var srv *httptest.Server
		if metrics {
			s := loadgentest.NewServer(pacedProfile())
			t.Cleanup(s.Close)
			srv = s.Server
		} else {
			srv = newOllamaLike(t, pacedProfile(), &ollamaLike{})
		}
		for _, maxTokens := range []int{30, 100} {
			t.Run(fmt.Sprintf("metrics=%v/max-tokens=%d", metrics, maxTokens), func(t *testing.T) {
				t.Parallel() // in real time, but light: the server sleeps, the client waits
				spec := matrix.Spec{URL: srv.URL + "/v1", Model: "bench", API: loadgen.Chat,
					Contexts: []int{0}, Concurrency: []int{1, 4, 16}, Prefill: []int{},
					Duration: 2 * time.Second, MaxTokens: maxTokens,
					WarmupRule: &matrix.WarmupRule{Min: 500 * time.Millisecond, Flow: 2 * time.Second, Timeout: 60 * time.Second}}
				res, log := runMatrix(t, spec, srv)
				for _, c := range res.Cells {
					require.NotNil(t, c.Measurement, "%d", c.Concurrency)
					assert.Equal(t, matrix.Valid, c.Status, "×%d: %s\n%s", c.Concurrency, c.Reason, log)
					assert.Less(t, c.Measurement.WarmupS, 10.0, "×%d warmed up for %.1f s: %s", c.Concurrency, c.Measurement.WarmupS, c.Measurement.WarmupEnded)
					assert.False(t, c.Measurement.WarmupTimedOut)
					assert.Contains(t, c.Measurement.WarmupEnded, "every stream produced")
				}
			})
		}
	}
}

// TestQueuedFromTheClientsTimeline: a server that runs two requests at
// once, queues the rest and publishes no metrics: cells up to two streams
// are Valid, beyond it Requests queued, judged from the client's own view
// (streams decoding at once held at two while others waited), and the
// warm-up ends without waiting for its timeout; once a cell has found the
// cap, a later one's warm-up ends as soon as it is held there.
func TestQueuedFromTheClientsTimeline(t *testing.T) {
	longtest.Skip(t)
	p := loadgentest.FastProfile()
	p.Speed = 5
	p.MaxNumSeqs = 2
	srv := newOllamaLike(t, p, &ollamaLike{})
	spec := matrix.Spec{URL: srv.URL + "/v1", Model: "bench", API: loadgen.Chat,
		Contexts: []int{0}, Concurrency: []int{2, 4, 8}, Prefill: []int{},
		Duration: 2 * time.Second, MaxTokens: 100, WarmupRule: quickWarmup}
	res, log := runMatrix(t, spec, srv)
	for _, c := range res.Cells {
		require.NotNil(t, c.Measurement)
		assert.Less(t, c.Measurement.WarmupS, 15.0, "×%d: %s", c.Concurrency, c.Measurement.WarmupEnded)
		assert.Nil(t, c.Measurement.Server, "no /metrics")
		require.NotNil(t, c.Measurement.Streams)
		if c.Concurrency <= 2 {
			assert.Equal(t, matrix.Valid, c.Status, "×%d: %s\n%s", c.Concurrency, c.Reason, log)
			continue
		}
		assert.Equal(t, matrix.RequestsQueued, c.Status, "×%d: %s\n%s", c.Concurrency, c.Reason, log)
		assert.Contains(t, c.Reason, fmt.Sprintf("at most 2 of %d streams decoded at once", c.Concurrency))
		assert.Equal(t, 2, c.Measurement.Streams.Ceiling)
		if c.Concurrency == 8 {
			assert.Contains(t, c.Measurement.WarmupEnded, "as many as the server ran at once in an earlier cell", "the ×4 cell found the cap")
		}
		require.NotEmpty(t, c.Measurement.Notes, "a total below per request × streams is explained")
		assert.Contains(t, c.Measurement.Notes[0], "the streams decoded")
	}
}

// TestQueuedAfterALateScout: on a server that runs two requests at once
// and publishes no metrics, the scout of a later cell may find it still
// busy with the requests the previous cell's end cancelled, and answer
// late; the cell beyond the server's slots is still Requests queued,
// judged against the prompt's quickest answer from the idle server.
func TestQueuedAfterALateScout(t *testing.T) {
	longtest.Skip(t)
	p := loadgentest.FastProfile()
	p.Speed = 5
	p.MaxNumSeqs = 2
	srv := newOllamaLike(t, p, &ollamaLike{lateScout: 600 * time.Millisecond})
	spec := matrix.Spec{URL: srv.URL + "/v1", Model: "bench", API: loadgen.Completions,
		Contexts: []int{512}, Concurrency: []int{2, 4}, Prefill: []int{512},
		Duration: 2 * time.Second, MaxTokens: 100, WarmupRule: quickWarmup}
	res, log := runMatrix(t, spec, srv)
	for _, c := range res.Cells {
		require.NotNil(t, c.Measurement, "×%d: %s %s", c.Concurrency, c.Status, c.Reason)
		want := matrix.Valid
		if c.Concurrency > 2 {
			want = matrix.RequestsQueued
		}
		assert.Equal(t, want, c.Status, "×%d: %s\n%s", c.Concurrency, c.Reason, log)
		for _, note := range c.Measurement.Notes {
			assert.NotContains(t, note, "prefills it again", "×%d: the streams queue, the prompt is cached", c.Concurrency)
		}
	}
}

// TestEveryThirdRequestFails: a server that fails every third request with
// a 500 (the scout's too) gives a measured cell with its error share, not
// a Failed one; every failure is counted in the cell.
func TestEveryThirdRequestFails(t *testing.T) {
	longtest.Skip(t)
	p := loadgentest.FastProfile()
	p.Speed = 5
	srv := newOllamaLike(t, p, &ollamaLike{failEvery: 3})
	spec := matrix.Spec{URL: srv.URL + "/v1", Model: "bench", API: loadgen.Chat,
		Contexts: []int{512}, Concurrency: []int{4}, Prefill: []int{1024},
		Duration: 3 * time.Second, MaxTokens: 30, WarmupRule: quickWarmup}
	res, log := runMatrix(t, spec, srv)
	for _, c := range res.Cells {
		require.NotNil(t, c.Measurement, "%d: %s: %s\n%s", c.ContextTokens, c.Status, c.Reason, log)
		assert.NotEqual(t, matrix.Failed, c.Status, c.Reason)
		assert.Positive(t, c.Measurement.OutputTokensPerSec)
		share := float64(c.Errors) / float64(c.Requests)
		assert.InDelta(t, 1.0/3, share, 0.1, "%d of %d failed", c.Errors, c.Requests)
		assert.Equal(t, c.Errors, c.ErrorKinds[metrics.KindServerStatus], "every failure counted by kind")
	}
	require.Len(t, res.Prefill, 1)
	assert.Equal(t, matrix.Valid, res.Prefill[0].Status, res.Prefill[0].Reason)
	var table bytes.Buffer
	require.NoError(t, report.Write(&table, report.Table, res))
	assert.Contains(t, table.String(), "requests failed (server_status")
}

// TestEveryThirdRequestFailsOnAPacedServer: in real time, with requests
// of 0.3 s and 1 s, a server that runs every request at once and fails
// every third with a 500 gives measured cells with their error share, up
// to 16 streams: Valid, as the server queues nothing, each warmed up in
// well under 20 s though every third request of each stream fails.
func TestEveryThirdRequestFailsOnAPacedServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs in real time")
	}
	for _, maxTokens := range []int{30, 100} {
		t.Run(fmt.Sprintf("max-tokens=%d", maxTokens), func(t *testing.T) {
			t.Parallel() // in real time, but light: the server sleeps, the client waits
			srv := newOllamaLike(t, pacedProfile(), &ollamaLike{failEvery: 3})
			spec := matrix.Spec{URL: srv.URL + "/v1", Model: "bench", API: loadgen.Chat,
				Contexts: []int{0}, Concurrency: []int{1, 4, 16}, Prefill: []int{},
				Duration: 3 * time.Second, MaxTokens: maxTokens,
				WarmupRule: &matrix.WarmupRule{Min: 500 * time.Millisecond, Flow: 2 * time.Second, Timeout: 60 * time.Second}}
			res, log := runMatrix(t, spec, srv)
			t.Log(log)
			for _, c := range res.Cells {
				require.NotNil(t, c.Measurement, "×%d: %s: %s\n%s", c.Concurrency, c.Status, c.Reason, log)
				assert.Equal(t, matrix.Valid, c.Status, "×%d: %s", c.Concurrency, c.Reason)
				assert.Positive(t, c.Measurement.OutputTokensPerSec)
				share := float64(c.Errors) / float64(c.Requests)
				assert.InDelta(t, 1.0/3, share, 0.1, "×%d: %d of %d failed", c.Concurrency, c.Errors, c.Requests)
				assert.Equal(t, c.Errors, c.ErrorKinds[metrics.KindServerStatus], "every failure counted by kind")
				assert.Less(t, c.Measurement.WarmupS, 10.0, "×%d warmed up for %.1f s: %s", c.Concurrency, c.Measurement.WarmupS, c.Measurement.WarmupEnded)
				t.Logf("×%-2d %s: %.1f tok/s total, %.1f per request, TTFT p50 %.0f ms, TBT p50 %.1f ms, %d of %d requests failed (%.0f%%), warm-up %.1f s (%s)",
					c.Concurrency, c.Status, c.Measurement.OutputTokensPerSec, c.Measurement.PerRequestTokensPerSec, c.Measurement.TTFT.P50, c.Measurement.TBT.P50,
					c.Errors, c.Requests, 100*share, c.Measurement.WarmupS, c.Measurement.WarmupEnded)
			}
		})
	}
}

// TestSilentServer: a server that accepts connections and never answers
// ends the run within the discovery's deadline, with an error that says
// so, before anything else is sent.
func TestSilentServer(t *testing.T) {
	srv := hostileserver.New(hostileserver.Silent)
	defer srv.Close()
	spec := matrix.Spec{URL: srv.BaseURL(hostileserver.Silent), Model: "bench", Contexts: []int{0}, Concurrency: []int{1}, Prefill: []int{1024},
		Duration: time.Second, MaxTokens: 8, WarmupRule: quickWarmup}
	start := time.Now()
	res, err := (&matrix.Runner{Spec: spec, DiscoverTimeout: 500 * time.Millisecond}).Run(t.Context())
	assert.Less(t, time.Since(start), 5*time.Second)
	require.ErrorIs(t, err, capacity.ErrNoAnswer)
	assert.Contains(t, err.Error(), "answered nothing within 500ms")
	if res != nil {
		assert.False(t, res.Complete)
	}
}
