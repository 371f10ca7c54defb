package requestlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/internal/clockstep"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

func TestLine(t *testing.T) {
	w := metrics.Window{Start: at(100), End: at(1100)}
	tl := &metrics.Timeline{Due: at(200), Start: at(205), Sent: at(206), Headers: at(210), First: at(250), FirstAnswer: at(300), ReasoningTokens: 3, ID: "cmpl-1", Last: at(900), End: at(901),
		Chunks: 10, Tokens: 10, ExtraTokens: 2, Source: metrics.SourceFinalUsage, PromptTokens: 512, CompletionTokens: 12,
		FinishReason: "length", Server: metrics.ServerTimings{Source: "vllm", Queue: 3 * time.Millisecond, Prefill: 40 * time.Millisecond, Generation: 650 * time.Millisecond}}
	var b bytes.Buffer
	lw := New(&b)
	lw.Write("8 streams \"quoted\"", w, &loadgen.Request{Model: "m"}, tl)
	require.NoError(t, lw.Close())
	var l map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &l), b.String())
	assert.Equal(t, `8 streams "quoted"`, l["run"])
	assert.Equal(t, "m", l["model"])
	assert.Equal(t, "inside", l["window"])
	assert.Equal(t, "completed", l["outcome"])
	assert.Equal(t, "2026-01-02T03:04:05.200000000Z", l["due"])
	assert.Equal(t, "2026-01-02T03:04:05.901000000Z", l["end"])
	assert.Equal(t, 5.0, l["queue_ms"])
	assert.Equal(t, 6.0, l["late_ms"], "from due to written")
	assert.Equal(t, 44.0, l["ttft_ms"])
	assert.Equal(t, 94.0, l["ttfo_ms"])
	assert.Equal(t, 3.0, l["reasoning_tokens"])
	assert.Equal(t, "cmpl-1", l["id"])
	assert.Equal(t, "2026-01-02T03:04:05.300000000Z", l["first_answer"])
	assert.Equal(t, 695.0, l["latency_ms"])
	assert.Equal(t, 701.0, l["from_due_ms"])
	assert.Equal(t, 12.0, l["output_tokens"])
	assert.Equal(t, "final_usage", l["source"])
	assert.Equal(t, map[string]any{"source": "vllm", "queue_ms": 3.0, "prefill_ms": 40.0, "generation_ms": 650.0}, l["server"])
	assert.Equal(t, map[string]any{"queue_ms": 3.0, "prefill_ms": 40.0, "rest_ms": 1.0}, l["split"])
	assert.NotContains(t, l, "error")
	assert.Equal(t, byte('\n'), b.Bytes()[b.Len()-1])
}

func TestWhereAndFailures(t *testing.T) {
	w := metrics.Window{Start: at(100), End: at(200)}
	for _, tc := range []struct {
		tl      metrics.Timeline
		w       metrics.Window
		where   string
		outcome string
	}{
		{metrics.Timeline{End: at(50), Done: true}, w, "before", "completed"},
		{metrics.Timeline{End: at(150), Done: true}, metrics.Window{}, "before", "completed"},
		{metrics.Timeline{End: at(100), Kind: metrics.KindStall, Err: errors.New("stalled")}, w, "inside", "failed"},
		{metrics.Timeline{End: at(200), Kind: metrics.KindCanceled, Err: errors.New("window ended")}, w, "after", "canceled"},
		{metrics.Timeline{End: at(150)}, w, "inside", "canceled"},
	} {
		var b bytes.Buffer
		lw := New(&b)
		lw.Write("r", tc.w, nil, &tc.tl)
		require.NoError(t, lw.Close())
		var l map[string]any
		require.NoError(t, json.Unmarshal(b.Bytes(), &l), b.String())
		assert.Equal(t, tc.where, l["window"], b.String())
		assert.Equal(t, tc.outcome, l["outcome"], b.String())
		if tc.tl.Kind != metrics.KindNone {
			assert.Equal(t, string(tc.tl.Kind), l["error"])
			assert.Equal(t, tc.tl.Err.Error(), l["message"])
		}
		assert.NotContains(t, l, "model")
	}
}

// Lines written at once from many goroutines come out whole, one a line.
func TestConcurrentWritesToFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	lw, err := Create(path, false)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				tl := &metrics.Timeline{Start: at(float64(i)), End: at(float64(i + 1)), Tokens: g + 1, Chunks: 1, Done: true}
				lw.Write("r", metrics.Window{}, nil, tl)
			}
		})
	}
	wg.Wait()
	require.NoError(t, lw.Close())
	assert.Equal(t, 4000, lw.Lines())

	lw, err = Append(path)
	require.NoError(t, err)
	lw.Write("resumed", metrics.Window{}, nil, &metrics.Timeline{})
	require.NoError(t, lw.Close())

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	n, sum := 0, 0.0
	for sc.Scan() {
		var l map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), sc.Text())
		if n < 4000 {
			sum += l["output_tokens"].(float64)
		}
		n++
	}
	assert.Equal(t, 4001, n, "Append kept the first part")
	assert.Equal(t, 500.0*(1+2+3+4+5+6+7+8), sum)
}

type failing struct{ n int }

func (f *failing) Write(p []byte) (int, error) {
	if f.n += len(p); f.n > 100<<10 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// A write that fails stops the writing, and Close says why.
func TestWriteError(t *testing.T) {
	lw := New(&failing{})
	for range 1000 {
		lw.Write("r", metrics.Window{}, nil, &metrics.Timeline{Start: t0, End: t0, Done: true})
	}
	assert.EqualError(t, lw.Close(), "disk full")
	assert.Less(t, lw.Lines(), 1000)
}

func TestCreateRefused(t *testing.T) {
	_, err := Create(filepath.Join(t.TempDir(), "missing", "r.jsonl"), false)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// The system clock stepped by 78 s after the process started (a virtual
// machine resumed): a time taken from a stamp counted since the start and
// one read now disagree by the step on the wall clock, not on the
// monotonic one. The line's times are counted on one clock, so "sent" does
// not come before "start" and first − sent is the TTFT.
func TestTimesOnOneClock(t *testing.T) {
	start := time.Now()
	sent, ok := clockstep.Wall(start.Add(time.Millisecond), -78*time.Second)
	require.True(t, ok, "time.Time is laid out differently: cannot step its wall clock")
	first := start.Add(41 * time.Millisecond)
	tl := &metrics.Timeline{Due: start, Start: start, Sent: sent, First: first, Last: first, End: first, Tokens: 1, Chunks: 1}
	var b bytes.Buffer
	lw := New(&b)
	lw.Write("run", metrics.Window{Start: start, End: start.Add(time.Second)}, nil, tl)
	require.NoError(t, lw.Close())
	var l struct{ Start, Sent, First time.Time }
	require.NoError(t, json.Unmarshal(b.Bytes(), &l), b.String())
	assert.Equal(t, time.Millisecond, l.Sent.Sub(l.Start), b.String())
	assert.Equal(t, 40*time.Millisecond, l.First.Sub(l.Sent), b.String())
	assert.WithinDuration(t, start, l.Start, time.Second, "the times are the wall clock's")
}
