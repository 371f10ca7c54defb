package matrix

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/matrix/internal/fleet"
	"github.com/llmload/llmload/metrics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSpecConcurrencyAShard: a sharded run may ask for MaxStreams a
// shard, its streams split as evenly as possible, and no more; any number
// of shards is checked without building the split.
func TestSpecConcurrencyAShard(t *testing.T) {
	spec := Spec{URL: "http://127.0.0.1:8000/v1", Concurrency: []int{2 * MaxStreams}}
	require.Error(t, spec.Validate(), "one process")
	assert.NoError(t, spec.validateSharded(2))
	spec.Concurrency = []int{2*MaxStreams + 1}
	err := spec.validateSharded(2)
	se, isSpec := errors.AsType[*loadgen.ConfigError](err)
	require.True(t, isSpec, "%v", err)
	assert.Equal(t, "Spec.Concurrency", se.Field)
	assert.Contains(t, err.Error(), "holds 32769, 16385 a shard over 2 shards, above 16384")
	assert.NoError(t, spec.validateSharded(3))
	assert.Equal(t, spec.Validate(), spec.validateSharded(0), "no shards is one process")
	assert.NoError(t, spec.validateSharded(math.MaxInt), "9223372036854775807 shards: checked, not split")
}

// TestLoadedFiguresChecked: a results file with a negative count, a rate
// of 1e300 or a histogram of an extreme range is refused with the place
// of the figure, quickly and without a large allocation.
func TestLoadedFiguresChecked(t *testing.T) {
	v1, err := os.ReadFile("testdata/results-v1.json")
	require.NoError(t, err)
	r, err := ReadResults(bytes.NewReader(v1))
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, r.writeJSON(&buf))
	b := buf.Bytes()
	for _, tc := range []struct{ from, to, want string }{
		{`"canceled": `, `"canceled": -7, "y": `, "canceled is -7, below 0"},
		{`"total_tok_s": `, `"total_tok_s": 1e300, "x": `, "total_tok_s is 1e+300, beyond any measurement"},
	} {
		bad := strings.Replace(string(b), tc.from, tc.to, 1)
		require.NotEqual(t, string(b), bad, tc.from)
		_, err := ReadResults(strings.NewReader(bad))
		require.Error(t, err, "%s", tc.want)
		assert.Contains(t, err.Error(), tc.want)
	}
	extreme := hdrhistogram.New(1, 1<<62, 5)
	require.NoError(t, extreme.RecordValue(5))
	v2, err := extreme.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	require.NoError(t, err)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	var h metrics.Histogram
	err = h.UnmarshalJSON([]byte(`{"v2":"` + string(v2) + `"}`))
	require.ErrorContains(t, err, "geometry")
	runtime.ReadMemStats(&ms)
	assert.Less(t, ms.TotalAlloc-before, uint64(1<<20), "refused before its 49 MB of buckets")
}

// FuzzShardReport reads a follower's report of its share as the leader's
// Runner does: nothing panics, and a report that passes is within the
// share's bounds.
func FuzzShardReport(f *testing.F) {
	own := fleet.Share{Seq: 1, Concurrency: 4, Streams: 2, Duration: time.Second, WarmupMin: time.Second}
	var rec metrics.Recorder
	good, _ := json.Marshal(&sharePart{Recording: rec.Recording(metrics.ScopeAll)})
	f.Add(good, int64(0))
	f.Add([]byte(`{"recording":{"summary":{"output_tokens":1000000000000}}}`), int64(0))
	f.Add([]byte(`{"recording":{"summary":{"requests":1,"requests":2}}}`), int64(1e15))
	f.Fuzz(func(t *testing.T, b []byte, offset int64) {
		p, err := readPart(fleet.Part{Index: 1, Streams: 2, Report: b, ClockOffset: time.Duration(offset)}, own)
		if err != nil {
			return
		}
		s := p.Recording.Summary
		most := 2 * (own.WarmupMin + own.WarmupTimeout + own.Duration + time.Minute).Seconds() * fleet.MaxTokenRate
		if s.OutputTokens < 0 || float64(s.OutputTokens) > most || s.Requests < 0 || math.IsNaN(s.AvgActive) || s.AvgActive > 2 {
			t.Fatalf("an implausible report passed: %+v", s)
		}
	})
}
