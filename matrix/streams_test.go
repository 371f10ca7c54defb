package matrix

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// feed gives a tracker of n streams one reading every tick from start, the
// counts at each reading from state(i).
func feed(t *streamTracker, start time.Time, readings int, state func(i int) (decoding, waiting int)) time.Time {
	now := start
	for i := range readings {
		d, w := state(i)
		t.observe(now, d, w, int64(i))
		now = now.Add(streamTick)
	}
	return now
}

func TestStreamTracker(t *testing.T) {
	t0 := time.Unix(1000, 0)
	window := 1000 // readings: 10 s
	tests := []struct {
		name  string
		n     int
		state func(i int) (int, int)
		want  func(t *testing.T, s *Streams)
	}{
		{
			name:  "every stream decoding",
			n:     4,
			state: func(int) (int, int) { return 4, 0 },
			want: func(t *testing.T, s *Streams) {
				assert.InDelta(t, 4, s.AvgDecoding, 1e-9)
				assert.Equal(t, 4, s.PeakDecoding)
				assert.InDelta(t, 1, s.AllShare, 1e-9)
				assert.Equal(t, 4, s.Ceiling)
				assert.Zero(t, s.WaitingShare)
			},
		},
		{
			// A closed loop of short requests: each slot spends a tenth of
			// its cycle in prefill, the slots out of step, so some stream is
			// always waiting and all decode at once only now and then.
			name: "short requests, out of step",
			n:    16,
			state: func(i int) (int, int) {
				waiting := 1 + i%3 // 1, 2 or 3 in prefill
				if i%50 < 3 {
					waiting = 0 // for a few readings, none
				}
				return 16 - waiting, waiting
			},
			want: func(t *testing.T, s *Streams) {
				assert.Equal(t, 16, s.PeakDecoding, "all decoded at once now and then")
				assert.Less(t, s.AllShare, 0.06)
				assert.Less(t, s.CeilingShare, 0.5, "not held at a ceiling")
				assert.Empty(t, queued(16, nil, s, 0))
			},
		},
		{
			// A server that runs 4 of 8: four decode, four wait, and at each
			// turnover one of the waiting is admitted while a new one waits.
			name: "a queue",
			n:    8,
			state: func(i int) (int, int) {
				if i%20 == 0 {
					return 3, 5 // a turnover: one admitted, in prefill
				}
				return 4, 4
			},
			want: func(t *testing.T, s *Streams) {
				assert.Equal(t, 4, s.PeakDecoding)
				assert.Equal(t, 4, s.Ceiling)
				// Held counts: a dip lasts until the next reading too.
				assert.InDelta(t, 0.90, s.CeilingShare, 0.01)
				assert.InDelta(t, 1, s.WaitingShare, 1e-9)
				assert.InDelta(t, 3.95, s.AvgDecoding, 0.01)
				assert.InDelta(t, 4.05, s.AvgWaiting, 0.01)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newStreamTracker(tc.n)
			tr.mark(t0, t0.Add(time.Duration(window)*streamTick))
			feed(tr, t0, window+50, tc.state) // readings after the window's end do not count
			s := tr.summary()
			require.NotNil(t, s)
			assert.Equal(t, window, s.Samples)
			tc.want(t, s)
		})
	}
}

// TestStreamTrackerCapped: the warm-up's view of a cap. A count that keeps
// rising (a server still prefilling stream after stream) is not held; one
// that stays at its high while others wait is, for as long as it stays.
func TestStreamTrackerCapped(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rising := newStreamTracker(8)
	end := feed(rising, t0, 800, func(i int) (int, int) { d := 1 + i/100; return d, 8 - d })
	d, _ := rising.capped(end)
	assert.LessOrEqual(t, d, time.Second+streamTick, "a new high every second resets the cap")

	held := newStreamTracker(8)
	end = feed(held, t0, 500, func(i int) (int, int) {
		if i%25 == 0 {
			return 3, 5
		}
		return 4, 4
	})
	d, at := held.capped(end)
	assert.Equal(t, 4, at)
	assert.InDelta(t, 5*time.Second, d, float64(50*time.Millisecond))
	assert.False(t, held.allDecoded())

	held.observe(end, 8, 0, 0)
	held.observe(end.Add(streamTick), 8, 0, 0)
	assert.False(t, held.allDecoded(), "two readings are a turnover's moment, not every stream decoding")
	held.observe(end.Add(2*streamTick), 8, 0, 0)
	d, _ = held.capped(end.Add(time.Second))
	assert.Zero(t, d, "every stream decoding ends the cap")
	assert.True(t, held.allDecoded())
}

// TestStreamTrackerTurnover: in a queue of 2 of 4, a turnover shows a
// third stream decoding for one reading now and then (the next request's
// first token read before the last one's end); the peak is still 2.
func TestStreamTrackerTurnover(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tr := newStreamTracker(4)
	tr.mark(t0, t0.Add(10*time.Second))
	feed(tr, t0, 1000, func(i int) (int, int) {
		if i%30 == 0 {
			return 3, 1
		}
		return 2, 2
	})
	s := tr.summary()
	require.NotNil(t, s)
	assert.Equal(t, 2, s.PeakDecoding)
	assert.Equal(t, 2, s.Ceiling)
	assert.Greater(t, s.CeilingShare, 0.9)
	// Little's law: about 2 streams waiting while 100 requests begin a
	// second (one a reading) is 20 ms of waiting each.
	assert.InDelta(t, 1000, s.Launched, 1)
	assert.InDelta(t, 20, s.MeanWaitMs, 0.5)
	assert.Equal(t, "at most 2 of 4 streams decoded at once (2 for 100% of the window); the others waited for a first token 2.0× as long as a request's decoding on average (the prompt's prefill takes 10% of it)",
		queued(4, nil, &Streams{Ceiling: s.Ceiling, CeilingShare: s.CeilingShare, WaitingShare: s.WaitingShare, MeanWaitMs: 20, DecodeMs: 10}, time.Millisecond))

	// A client short of CPU sees the overlap for longer: three readings in
	// every thirty, a tenth of the window above the ceiling at most.
	slow := newStreamTracker(4)
	slow.mark(t0, t0.Add(10*time.Second))
	feed(slow, t0, 1000, func(i int) (int, int) {
		if i%30 < 3 {
			return 3, 1
		}
		return 2, 2
	})
	s = slow.summary()
	assert.Equal(t, 3, s.PeakDecoding)
	assert.Equal(t, 2, s.Ceiling)
	s.MeanWaitMs, s.DecodeMs = 200, 100
	assert.Contains(t, queued(4, nil, s, time.Millisecond), "at most 2 of 4 streams decoded at once")
}

func TestStreamTrackerSlots(t *testing.T) {
	tr := newStreamTracker(3)
	assert.False(t, tr.everySlotFinished())
	for slot := range 3 {
		tr.begin(slot, 0)
	}
	assert.False(t, tr.everySlotFinished(), "first requests begun, none finished")
	tr.begin(0, 1)
	tr.begin(1, 1)
	assert.False(t, tr.everySlotFinished())
	tr.begin(2, 5)
	assert.True(t, tr.everySlotFinished())
	tr.begin(7, 0) // out of range: ignored
}

func TestQueued(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		samples *serverSamples
		streams *Streams
		prefill time.Duration
		want    string // a part of the reason, "" for not queued
	}{
		{"one stream waits for nobody", 1, &serverSamples{Count: 30, WaitingShare: 1, MaxWaiting: 3}, nil, 0, ""},
		{"waiting in most samples", 8, &serverSamples{Count: 30, AvgRunning: 8, PeakRunning: 8, WaitingShare: 0.9, MaxWaiting: 2}, nil, 0, "waiting in 90%"},
		{"a request waiting now and then is turnover", 16, &serverSamples{Count: 30, AvgRunning: 15.6, PeakRunning: 16, WaitingShare: 0.2, MaxWaiting: 1}, nil, 0, ""},
		{"never all running", 8, &serverSamples{Count: 30, AvgRunning: 4, PeakRunning: 4, NoWaiting: true}, nil, 0, "at most 4 of 8"},
		{"the server's view wins", 8, &serverSamples{Count: 30, AvgRunning: 8, PeakRunning: 8},
			&Streams{PeakDecoding: 4, Ceiling: 4, CeilingShare: 1, WaitingShare: 1, MeanWaitMs: 700, DecodeMs: 640}, 10 * time.Millisecond, ""},
		{"client: held at a ceiling, long waits", 8, nil,
			&Streams{PeakDecoding: 5, Ceiling: 4, CeilingShare: 0.9, WaitingShare: 0.95, MeanWaitMs: 700, DecodeMs: 640}, 10 * time.Millisecond,
			"at most 4 of 8 streams decoded at once (4 for 90% of the window); the others waited for a first token 1.1× as long as a request's decoding on average (the prompt's prefill takes 2% of it)"},
		// A server short of CPU: one slot of eight always turning over,
		// its stream waiting a tenth of a request for its first token.
		{"client: held below N, short waits", 8, nil,
			&Streams{PeakDecoding: 8, Ceiling: 7, CeilingShare: 0.92, WaitingShare: 1, MeanWaitMs: 340, DecodeMs: 3000}, 10 * time.Millisecond, ""},
		// Short requests on a server that runs 2 of 4: turnovers keep the
		// count off its ceiling, but the streams wait far longer than
		// their prompt's prefill.
		{"client: off its ceiling, long waits", 4, nil,
			&Streams{PeakDecoding: 2, Ceiling: 2, CeilingShare: 0.3, WaitingShare: 1, MeanWaitMs: 200, DecodeMs: 190}, 5 * time.Millisecond,
			"1.1× as long as a request's decoding on average (the prompt's prefill takes 3% of it)"},
		{"client: waits as long as prefill", 16, nil,
			&Streams{PeakDecoding: 16, Ceiling: 15, CeilingShare: 0.2, WaitingShare: 0.95, MeanWaitMs: 60, DecodeMs: 290}, 25 * time.Millisecond, ""},
		{"client: no decoding time, no verdict", 4, nil, &Streams{PeakDecoding: 2, Ceiling: 2, CeilingShare: 1, WaitingShare: 1, MeanWaitMs: 500}, 0, ""},
		{"client: all decoded at once", 16, nil, &Streams{PeakDecoding: 16, Ceiling: 16, AllShare: 0.2, MeanWaitMs: 500, DecodeMs: 100}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := queued(tc.n, tc.samples, tc.streams, tc.prefill)
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, tc.want)
		})
	}
}

func TestExplain(t *testing.T) {
	c := &Cell{ContextTokens: 1024, Concurrency: 8, Status: Valid}
	agree := &Measurement{OutputTokensPerSec: 790, PerRequestTokensPerSec: 100, Streams: &Streams{AvgDecoding: 7.9}}
	assert.Empty(t, explain(c, agree, 0), "figures that agree need no note")

	prefill := &Measurement{OutputTokensPerSec: 400, PerRequestTokensPerSec: 100, TTFT: Quantiles{P50: 900},
		Streams: &Streams{AvgDecoding: 4, AvgWaiting: 3.8}}
	notes := explain(c, prefill, time.Second)
	require.Len(t, notes, 2)
	assert.Contains(t, notes[0], "the total tok/s is 50% of the per-request rate × 8 streams")
	assert.Contains(t, notes[0], "the streams decoded 50% of the window")
	assert.Contains(t, notes[0], "48% they waited for a first token (prefill)")
	assert.Contains(t, notes[1], "prefills it again on every request")

	slow := &Measurement{OutputTokensPerSec: 20, PerRequestTokensPerSec: 250, Streams: &Streams{AvgDecoding: 1}}
	notes = explain(&Cell{Concurrency: 1, Status: Valid}, slow, 0)
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "the total tok/s is 8% of the per-request rate × 1 stream:")
	assert.Contains(t, notes[0], "a decoding stream made 8% of the median request's tokens a second in the window")
}

// TestReadOldPrefillRows: a results file written before prefill rows had a
// status reads with the status its figures imply.
func TestReadOldPrefillRows(t *testing.T) {
	doc := `{"schema":"` + Schema + `","spec":{"url":"http://x/v1","api":"chat","contexts":[0],"concurrency":[1],"prefill":[8192,16384],"duration":"30s","max_tokens":8192},
"server":{"url":"http://x/v1","limits":{"kv_tokens":0,"max_running":0,"max_model_len":0}},"started":"2026-01-01T00:00:00Z","complete":false,
"prefill":[{"context_tokens":8192,"prompt_tokens":8200,"ttft_ms":3500,"prompt_tok_s":2342.9},{"context_tokens":16384,"prompt_tokens":0,"ttft_ms":0,"prompt_tok_s":0,"error":"scout: 500"}],
"cells":[]}`
	r, err := ReadResults(strings.NewReader(doc))
	require.NoError(t, err)
	require.Len(t, r.Prefill, 2)
	assert.Equal(t, Valid, r.Prefill[0].Status)
	assert.Equal(t, Failed, r.Prefill[1].Status)
	assert.Equal(t, "scout: 500", r.Prefill[1].Reason)
}

// TestStreamTrackerWindowToCome: a window marked before it starts, as a
// sharded cell's is, counts only the readings from its start: the warm-up
// before it, with every stream waiting, is not in the summary.
func TestStreamTrackerWindowToCome(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tr := newStreamTracker(4)
	tr.observe(t0, 0, 4, 0)
	start := t0.Add(time.Second)
	tr.mark(start, start.Add(10*time.Second))
	feed(tr, t0.Add(streamTick), 1100, func(i int) (int, int) {
		if i < 99 {
			return 0, 4 // before the window: every stream waits
		}
		return 4, 0
	})
	s := tr.summary()
	require.NotNil(t, s)
	assert.InDelta(t, 4, s.AvgDecoding, 1e-9, "the waiting before the window is not in it")
	assert.Zero(t, s.WaitingShare)
	assert.InDelta(t, 1, s.AllShare, 1e-9)
	assert.Equal(t, 1000, s.Samples)
}
