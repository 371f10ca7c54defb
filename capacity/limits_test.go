package capacity

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLimitsCheck(t *testing.T) {
	all := Limits{KVTokens: 700_000, MaxRunning: 128, MaxModelLen: 262_144}
	tests := []struct {
		name        string
		limits      Limits
		ctx, n, out int
		fits        bool
		reason      Reason
		need, have  int
	}{
		{"fits", all, 32768, 16, 8192, true, WithinLimits, 655_360, 700_000},
		{"kv tokens", all, 16384, 32, 8192, false, OverKVTokens, 786_432, 700_000},
		{"exactly the kv tokens fits", Limits{KVTokens: 655_360, MaxRunning: 128, MaxModelLen: 262_144}, 32768, 16, 8192, true, WithinLimits, 655_360, 655_360},
		{"kv of the requests that run: queued ones hold none", all, 0, 129, 4096, true, OverMaxRunning, 129, 128},
		{"kv before max running", all, 0, 129, 8192, false, OverKVTokens, 128 * 8192, 700_000},
		{"max running alone: queued", Limits{MaxRunning: 4}, 1024, 8, 128, true, OverMaxRunning, 8, 4},
		{"max model len first", all, 253_952, 1, 8192, false, OverMaxModelLen, 253_952 + 8192 + DefaultTemplateOverhead, 262_144},
		{"no template overhead", Limits{MaxModelLen: 262_144, TemplateOverhead: -1}, 253_952, 1, 8192, true, LimitsUnknown, 0, 0},
		{"own template overhead", Limits{MaxModelLen: 1000, TemplateOverhead: 100}, 850, 1, 60, false, OverMaxModelLen, 1010, 1000},
		{"nothing known", Limits{}, 1 << 20, 1 << 10, 1 << 20, true, LimitsUnknown, 0, 0},
		{"known kv, unknown rest", Limits{KVTokens: 100}, 10, 2, 10, true, LimitsUnknown, 0, 0},
		{"known kv exceeded, unknown rest", Limits{KVTokens: 100}, 100, 2, 10, false, OverKVTokens, 220, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.limits.Check(tc.ctx, tc.n, tc.out)
			assert.Equal(t, tc.fits, v.Fits, v.Detail)
			assert.Equal(t, tc.reason, v.Reason, v.Detail)
			assert.Equal(t, tc.need, v.Need)
			assert.Equal(t, tc.have, v.Have)
			assert.NotEmpty(t, v.Detail)
			assert.Equal(t, tc.reason == OverMaxRunning, v.Queued, "only a cell beyond max running queues")
		})
	}
}

func TestLimitsMerge(t *testing.T) {
	live := Limits{KVTokens: 757_087, MaxModelLen: 262_144, Source: "vllm /metrics"}
	flags := Limits{KVTokens: 1, MaxRunning: 128, Source: "flags"}
	got := live.Merge(flags)
	assert.Equal(t, Limits{KVTokens: 757_087, MaxRunning: 128, MaxModelLen: 262_144, Source: "vllm /metrics; max_running from flags"}, got)
	assert.Equal(t, live, live.Merge(Limits{}))
	assert.False(t, Limits{}.known())
}

func TestVerdictJSON(t *testing.T) {
	v := Limits{KVTokens: 10}.Check(10, 1, 10)
	b, err := json.Marshal(v)
	require.NoError(t, err)
	assert.JSONEq(t, `{"fits":false,"reason":"kv_tokens","detail":"1 × (10 + 10) = 20 tokens > 10 KV tokens","need":20,"have":10}`, string(b))
	var back Verdict
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, v, back)
}

// TestCheckRange: with an estimate's range, Fits is the point estimate's
// verdict and AtRisk the range's: a cell past the pessimistic end and
// within the optimistic end is at risk, whether it fits the estimate or not.
func TestCheckRange(t *testing.T) {
	l := Limits{KVTokens: 1000, KVTokensLow: 900, KVTokensHigh: 1100, MaxRunning: 100, MaxModelLen: 500}
	for _, tc := range []struct {
		context, concurrency int
		fits, atRisk         bool
		reason               Reason
	}{
		{100, 8, true, false, WithinLimits},   // 800
		{100, 9, true, false, WithinLimits},   // 900: the pessimistic end itself
		{100, 10, true, true, WithinLimits},   // 1000: at the estimate
		{100, 11, false, true, OverKVTokens},  // 1100: over the estimate, within the optimistic end
		{100, 12, false, false, OverKVTokens}, // 1200
	} {
		v := l.Check(tc.context, tc.concurrency, 0)
		assert.Equal(t, tc.fits, v.Fits, v.Detail)
		assert.Equal(t, tc.atRisk, v.AtRisk, v.Detail)
		assert.Equal(t, tc.reason, v.Reason, v.Detail)
		if tc.atRisk {
			assert.Contains(t, v.Detail, "at risk")
		}
	}
	v := l.Check(100, 11, 0)
	assert.Contains(t, v.Detail, "1100 tokens > 1000 KV tokens, the estimate; at risk: ≤ 1100, the optimistic end of its range (900–1100)")
	v = l.Check(100, 12, 0)
	assert.Contains(t, v.Detail, "1200 tokens > 1000 KV tokens, and > 1100, the optimistic end of the estimate's range (900–1100)")

	// Without a range the point decides, as before.
	l.KVTokensLow, l.KVTokensHigh = 0, 0
	assert.False(t, l.Check(100, 11, 0).Fits)
	assert.False(t, l.Check(100, 10, 0).AtRisk)

	// The range travels with the KV tokens through Merge.
	merged := Limits{MaxRunning: 10}.Merge(Limits{KVTokens: 1000, KVTokensLow: 900, KVTokensHigh: 1100, Source: "estimate"})
	assert.Equal(t, 900, merged.KVTokensLow)
	assert.Equal(t, 1100, merged.KVTokensHigh)
}

// TestLimitsGaps: each limit missing is named with where its engine keeps
// it; on engines that hold a context per slot the KV tokens follow from
// max_running; a limit known is no gap.
func TestLimitsGaps(t *testing.T) {
	all := Limits{}.Gaps(EngineVLLM)
	require.Len(t, all, 3)
	assert.Equal(t, []LimitName{LimitMaxRunning, LimitKVTokens, LimitMaxModelLen}, []LimitName{all[0].Limit, all[1].Limit, all[2].Limit})
	assert.Contains(t, all[0].Where, "--max-num-seqs")
	assert.Contains(t, all[1].Where, "start-up log")
	assert.Empty(t, all[1].FollowsFrom)

	ollama := Limits{MaxModelLen: 4096}.Gaps(EngineOllama)
	require.Len(t, ollama, 2)
	assert.Equal(t, Gap{Limit: LimitMaxRunning, Where: "Ollama's OLLAMA_NUM_PARALLEL"}, ollama[0])
	assert.Equal(t, LimitKVTokens, ollama[1].Limit)
	assert.Equal(t, LimitMaxRunning, ollama[1].FollowsFrom)
	assert.Contains(t, ollama[1].Where, "a context per slot")

	assert.Empty(t, Limits{KVTokens: 1, MaxRunning: 1, MaxModelLen: 1}.Gaps(EngineUnknown))
	unknown := Limits{KVTokens: 1}.Gaps(EngineUnknown)
	require.Len(t, unknown, 2)
	assert.Equal(t, Gap{Limit: LimitMaxRunning}, unknown[0])
	assert.Equal(t, Gap{Limit: LimitMaxModelLen}, unknown[1])
}

func TestLimitsConcurrency(t *testing.T) {
	tests := []struct {
		name            string
		limits          Limits
		ctx, out        int
		want, low, high int
		limit           LimitName
	}{
		// 700,000 ÷ (32,768 + 8,192) = 17.09
		{"kv tokens", Limits{KVTokens: 700_000, MaxRunning: 128, MaxModelLen: 262_144}, 32768, 8192, 17, 17, 17, LimitKVTokens},
		// 700,000 ÷ 1,024 = 683.6, more than 128 run at once
		{"max running", Limits{KVTokens: 700_000, MaxRunning: 128, MaxModelLen: 262_144}, 512, 512, 128, 128, 128, LimitMaxRunning},
		// 253,952 + 8,192 + 16 > 262,144
		{"longer than max_model_len", Limits{KVTokens: 700_000, MaxRunning: 128, MaxModelLen: 262_144}, 253_952, 8192, 0, 0, 0, LimitMaxModelLen},
		// 712,092 ÷ 24,576 = 28.97; 651,447 ÷ 24,576 = 26.5; 753,174 ÷ 24,576 = 30.6
		{"estimate's range", Limits{KVTokens: 712_092, KVTokensLow: 651_447, KVTokensHigh: 753_174, MaxRunning: 128}, 16384, 8192, 28, 26, 30, LimitKVTokens},
		// the range's high end is capped by max running: 4,000 ÷ 100 = 40 > 30
		{"range capped by max running", Limits{KVTokens: 2_900, KVTokensLow: 2_000, KVTokensHigh: 4_000, MaxRunning: 30}, 50, 50, 29, 20, 30, LimitKVTokens},
		{"max running alone", Limits{MaxRunning: 4}, 1024, 128, 4, 4, 4, LimitMaxRunning},
		{"nothing known", Limits{}, 1024, 128, -1, -1, -1, ""},
		{"empty requests", Limits{KVTokens: 10}, 0, 0, 10, 10, 10, LimitKVTokens},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.limits.Concurrency(tc.ctx, tc.out)
			assert.Equal(t, tc.want, c.Requests, c.Detail)
			assert.Equal(t, tc.low, c.Low, c.Detail)
			assert.Equal(t, tc.high, c.High, c.Detail)
			assert.Equal(t, tc.limit, c.Limit, c.Detail)
			assert.NotEmpty(t, c.Detail)
			if c.Requests <= 0 || tc.ctx+tc.out == 0 {
				return // Check counts an empty request as holding nothing
			}
			// Check agrees: Low fits without risk or queue, Requests fits
			// (perhaps at risk), High fits or is at risk, one more than
			// High is over capacity without risk, or queued.
			v := tc.limits.Check(tc.ctx, c.Low, tc.out)
			assert.True(t, v.Fits && !v.Queued && !v.AtRisk, "%d: %s", c.Low, v.Detail)
			v = tc.limits.Check(tc.ctx, c.Requests, tc.out)
			assert.True(t, v.Fits && !v.Queued, "%d: %s", c.Requests, v.Detail)
			high := tc.limits.Check(tc.ctx, c.High, tc.out)
			assert.True(t, (high.Fits || high.AtRisk) && !high.Queued, "%d: %s", c.High, high.Detail)
			v = tc.limits.Check(tc.ctx, c.High+1, tc.out)
			if c.High == tc.limits.MaxRunning {
				// The extra request waits; the KV tokens of those running
				// decide as at High.
				assert.Equal(t, high.Fits || high.AtRisk, v.Fits || v.AtRisk, "%d: %s", c.High+1, v.Detail)
				return
			}
			assert.True(t, !v.Fits && !v.AtRisk || v.Queued, "%d: %s", c.High+1, v.Detail)
		})
	}
}

// known reports whether at least one limit is known.
func (l Limits) known() bool { return l.KVTokens > 0 || l.MaxRunning > 0 || l.MaxModelLen > 0 }
