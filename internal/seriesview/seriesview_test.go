package seriesview

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/metrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// series returns a series of n buckets of 1 s: tok/s 100·i, one request
// begun and one finished a bucket, TTFT p50 10 ms and p99 10·i ms, and
// a server that publishes no waiting count.
func series(n int) *metrics.Series {
	s := &metrics.Series{Start: time.Unix(1_700_000_000, 0), Every: time.Second}
	for i := range n {
		f := float64(i)
		s.TokensPerSec = append(s.TokensPerSec, 100*f)
		s.Started, s.Finished, s.Failed = append(s.Started, 1), append(s.Finished, 1), append(s.Failed, 0)
		s.TTFTP50, s.TTFTP90, s.TTFTP99 = append(s.TTFTP50, 10), append(s.TTFTP90, 10), append(s.TTFTP99, 10*f)
		s.ITLP50, s.ITLP90, s.ITLP99 = append(s.ITLP50, 1), append(s.ITLP90, 1), append(s.ITLP99, 2)
		s.Decoding, s.Waiting = append(s.Decoding, 4), append(s.Waiting, 0)
		s.ServerRunning = append(s.ServerRunning, 4)
	}
	s.End = s.Start.Add(time.Duration(n) * time.Second)
	s.Window = metrics.Window{Start: s.Start.Add(2 * time.Second), End: s.End}
	return s
}

func TestRowsPutBucketsTogether(t *testing.T) {
	rows := Rows(series(4), 2)
	require.Len(t, rows, 2)
	r := rows[1]
	assert.Equal(t, 2.0, r.From)
	assert.Equal(t, 4.0, r.To)
	assert.Equal(t, 250.0, r.TokS, "rates averaged")
	assert.Equal(t, 2, r.Started, "counts added")
	assert.Equal(t, 30.0, r.TTFT99, "the tail is the highest")
	assert.Equal(t, 10.0, r.TTFT50)
	assert.Equal(t, 4.0, r.Running)
	assert.True(t, math.IsNaN(r.ServerWaiting), "not published")
}

func TestLenOfADamagedSeries(t *testing.T) {
	s := series(5)
	s.ITLP99 = s.ITLP99[:3]
	assert.Equal(t, 3, Len(s), "the shortest column")
	assert.Len(t, Rows(s, 1), 3)
	s.ServerRunning = s.ServerRunning[:1]
	rows := Rows(s, 1)
	assert.True(t, math.IsNaN(rows[2].Running), "a short server column is not read past its end")
}

func TestChartsOfALongSeries(t *testing.T) {
	s := series(3600)
	caption, charts := Charts(s, 4)
	require.Len(t, charts, 3)
	assert.Equal(t, "every 15 s, warm-up and window; hover for the figures", caption)
	for _, ch := range charts {
		assert.Len(t, ch.Bands, MaxPoints, "%s: at most MaxPoints points", ch.Title)
		assert.Positive(t, ch.Mark, "%s: the window's start", ch.Title)
		assert.NotEmpty(t, ch.Bands[10].Title)
	}
	assert.Contains(t, charts[0].Bands[1].Title, "15 s–30 s: 2,200.0 tok/s · 15 started · 15 finished · 0 failed")
	_, none := Charts(&metrics.Series{}, 1)
	assert.Empty(t, none)
}

func TestShortNum(t *testing.T) {
	for v, want := range map[float64]string{0.6000000000000001: "0.6", 1250: "1,250", 12.3456: "12.35", 0: "0"} {
		assert.Equal(t, want, shortNum(v), "%v", v)
	}
}
