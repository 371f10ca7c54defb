package metrics

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSketchBinsHoldTheirValues(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		d := time.Duration(r.Int64N(int64(time.Hour)))
		got := sketchValue(sketchKey(d))
		if d < 64 {
			require.Equal(t, d, got)
			continue
		}
		require.InDelta(t, float64(d), float64(got), float64(d)/64, "%v", d)
	}
	assert.Less(t, int(sketchKey(math.MaxInt64)), 1<<11, "keys fit in 11 bits")
}

func TestSketchQuantilesMatchExactOnes(t *testing.T) {
	var s sketch
	var h Histogram
	r := rand.New(rand.NewPCG(3, 4))
	for range 10_000 {
		d := time.Duration(math.Exp(r.NormFloat64()*0.8) * float64(20*time.Millisecond))
		s.record(d)
		h.Record(d)
	}
	for _, q := range []float64{0.5, 0.9, 0.99} {
		exact := float64(h.Quantile(q)) / float64(time.Millisecond)
		assert.InEpsilon(t, exact, s.quantile(q), 0.02, "q %v", q)
	}
	assert.LessOrEqual(t, len(s.bins), sketchMaxBins)
}

// feed records one request: sent at sent, first token after ttft, then
// tokens one a chunk every gap, ending with [DONE].
func feed(r *Recorder, sent time.Time, ttft, gap time.Duration, tokens int) {
	var tl Timeline
	tl.Start, tl.Sent = sent, sent
	at := sent.Add(ttft)
	for i := range tokens {
		r.Observe(&tl, at.Add(time.Duration(i)*gap), 1)
	}
	tl.End, tl.Done = tl.Last, true
	r.Record(&tl)
}

func TestSeriesBucketsWhatHappened(t *testing.T) {
	r := &Recorder{Every: time.Second}
	t0 := time.Unix(1_700_000_000, 0)
	// Two streams, one after the other on each: a request of 100 tokens
	// every 10 ms, TTFT 200 ms in the first 5 s, 800 ms after.
	for stream := range 2 {
		at := t0.Add(time.Duration(stream) * 50 * time.Millisecond)
		for at.Before(t0.Add(10 * time.Second)) {
			ttft := 200 * time.Millisecond
			if !at.Before(t0.Add(5 * time.Second)) {
				ttft = 800 * time.Millisecond
			}
			feed(r, at, ttft, 10*time.Millisecond, 100)
			at = at.Add(ttft + 99*10*time.Millisecond)
		}
	}
	s := r.Series()
	require.NotNil(t, s)
	assert.Equal(t, t0.UTC(), s.Start)
	assert.Equal(t, time.Second, s.Every)
	n := len(s.TokensPerSec)
	require.GreaterOrEqual(t, n, 11)
	total := 0
	for i := range n {
		total += s.Finished[i]
	}
	sum := r.Recording(ScopeAll).Summary
	assert.Equal(t, sum.Completed, total, "every completed request is in one bucket")
	// A decoding stream makes 100 tokens a second; each waits 200 ms of
	// every 1.19 s in the first five seconds.
	assert.InDelta(t, 100*s.Decoding[2], s.TokensPerSec[2], 6)
	assert.InDelta(t, 2*0.99/1.19, s.Decoding[2], 0.15)
	assert.InDelta(t, 10, s.ITLP50[2], 0.2)
	assert.InDelta(t, 10, s.ITLP99[2], 0.2)
	assert.InDelta(t, 200, s.TTFTP50[1], 4)
	assert.InDelta(t, 800, s.TTFTP50[8], 16)
	// At any time, each stream decodes or waits.
	for i := 1; i < 9; i++ {
		assert.InDelta(t, 2, s.Decoding[i]+s.Waiting[i], 0.05, "bucket %d", i)
	}
	assert.Greater(t, s.Waiting[8], s.Waiting[2], "longer TTFTs: more time waiting")
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var back Series
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, n, len(back.TokensPerSec))
}

func TestSeriesCoarsensPastItsCap(t *testing.T) {
	r := &Recorder{Every: time.Second}
	t0 := time.Unix(1_700_000_000, 0)
	// Ten hours, a request a second of 5 tokens.
	const hours = 10
	for i := range hours * 3600 {
		feed(r, t0.Add(time.Duration(i)*time.Second), 100*time.Millisecond, 10*time.Millisecond, 5)
	}
	s := r.Series()
	require.NotNil(t, s)
	assert.Equal(t, 16*time.Second, s.Every)
	assert.LessOrEqual(t, len(s.TokensPerSec), seriesCap)
	started, tokens := 0, 0.0
	for i := range len(s.TokensPerSec) {
		started += s.Started[i]
		tokens += s.TokensPerSec[i] * s.Every.Seconds()
	}
	assert.Equal(t, hours*3600, started)
	assert.InEpsilon(t, 5*hours*3600, tokens, 0.01)
	assert.InDelta(t, 100, s.TTFTP50[10], 2)
	b, err := json.MarshalIndent(s, "", "  ")
	require.NoError(t, err)
	assert.Less(t, len(b), 2<<20, "ten hours stay within 2 MB as indented JSON")
	t.Logf("10 h: %d buckets of %v, %d bytes as indented JSON", len(s.TokensPerSec), s.Every, len(b))
}

func TestSeriesOffByDefault(t *testing.T) {
	r := &Recorder{}
	feed(r, time.Unix(1_700_000_000, 0), 10*time.Millisecond, time.Millisecond, 10)
	assert.Nil(t, r.Series())
	assert.Nil(t, (&Recorder{Every: time.Second}).Series(), "nothing recorded")
}

// Two recorders' series, each of part of the requests, merge into the
// series of one recorder of every request: counts, tokens and sketches
// exactly, the streams decoding and waiting to rounding; through JSON, as a
// shard's report travels, and from a clock a few milliseconds off.
func TestSeriesMerge(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	a, b, all := &Recorder{Every: time.Second}, &Recorder{Every: time.Second}, &Recorder{Every: time.Second}
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 60 {
		sent := t0.Add(time.Duration(r.Int64N(int64(8 * time.Second))))
		ttft := time.Duration(10+r.IntN(200)) * time.Millisecond
		gap := time.Duration(5+r.IntN(20)) * time.Millisecond
		n := 20 + r.IntN(80)
		feed(all, sent, ttft, gap, n)
		if i%3 == 0 {
			feed(a, sent, ttft, gap, n)
		} else {
			feed(b, sent, ttft, gap, n)
		}
	}
	want := all.Recording(ScopeAll).Series
	require.NotNil(t, want)
	ra, rb := a.Recording(ScopeAll), b.Recording(ScopeAll)
	j, err := json.Marshal(rb)
	require.NoError(t, err)
	var back Recording
	require.NoError(t, json.Unmarshal(j, &back))

	m, err := MergeRecordings(ra, back)
	require.NoError(t, err)
	got := m.Series
	require.NotNil(t, got)
	assert.Equal(t, want.Start, got.Start)
	assert.Equal(t, want.Every, got.Every)
	assert.Equal(t, want.Started, got.Started)
	assert.Equal(t, want.Finished, got.Finished)
	assert.Equal(t, want.Tokens, got.Tokens)
	assert.Equal(t, want.TokensPerSec, got.TokensPerSec)
	assert.Equal(t, want.TTFTP50, got.TTFTP50)
	assert.Equal(t, want.TTFTP99, got.TTFTP99)
	assert.Equal(t, want.ITLP50, got.ITLP50)
	assert.Equal(t, want.ITLP99, got.ITLP99)
	assert.InDeltaSlice(t, want.Decoding, got.Decoding, 0.01)
	assert.InDeltaSlice(t, want.Waiting, got.Waiting, 0.01)

	// A shard's clock 3 ms off, its series moved onto the leader's: the
	// same buckets.
	off := 3 * time.Millisecond
	moved := *ra.Series
	moved.Start, moved.End, moved.From = moved.Start.Add(-off), moved.End.Add(-off), moved.From.Add(-off)
	ra.Series = &moved
	m, err = MergeRecordings(ra, rb)
	require.NoError(t, err)
	assert.Equal(t, want.Start, m.Series.Start)
	assert.Equal(t, want.Started, m.Series.Started)

	// A series that cannot merge is refused with its recording's index.
	bad := *rb.Series
	bad.Tokens = bad.Tokens[:1]
	rb.Series = &bad
	_, err = MergeRecordings(ra, rb)
	var me *MergeError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, 1, me.Index)
}
