package matrix

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nextResults is the seed run measured again after a change: context 0
// faster with a lower TTFT, 16K slower with a higher one, 128K × 1 no longer queued, 64K × 16 now
// fits, the 248K row and the 128K prefill not run, on the simulator.
func nextResults(t testing.TB) *Results {
	t.Helper()
	r := seedResults(t)
	r.Server.Simulated, r.Server.Speed = true, 20
	r.Server.Engine = ""
	r.Server.URL = "http://127.0.0.1:41234/v1"
	r.Prefill = r.Prefill[:len(r.Prefill)-1]
	r.Prefill[0].PromptTokS *= 1.2
	r.Prefill[0].TTFTms /= 1.2
	cells := r.Cells[:0]
	for _, c := range r.Cells {
		if c.ContextTokens == 248*K {
			continue
		}
		if c.Measurement != nil {
			m := *c.Measurement
			c.Measurement = &m
			f, ttft := 1.01, 1.02
			switch c.ContextTokens {
			case 0:
				f, ttft = 1.12, 0.9
			case 16 * K:
				f, ttft = 0.87, 1.25
			}
			m.TotalTokS *= f
			m.PerRequestTokS *= f
			m.TBTms.P50 /= f
			m.TTFTms.P50 *= ttft
		}
		switch {
		case c.ContextTokens == 128*K && c.Concurrency == 1:
			c.Status, c.Reason = Valid, ""
		case c.ContextTokens == 64*K && c.Concurrency == 16:
			c.Status, c.Reason = Valid, ""
			c.Measurement = &Measurement{TotalTokS: 131.3, PerRequestTokS: 8.1, TTFTms: Quantiles{P50: 8_820},
				TBTms: Quantiles{P50: 121.9}, AvgActive: 16, OutputTokens: 3_939, MeasuredS: 30}
		}
		cells = append(cells, c)
	}
	r.Cells = cells
	r.Complete = true
	return r
}

func TestCompare(t *testing.T) {
	cmp := Compare(seedResults(t), nextResults(t))
	require.Equal(t, ComparisonSchema, cmp.Schema)

	tests := []struct {
		name                     string
		ctx, n                   int
		presence                 Presence
		total, ttft              Change
		ratio                    float64
		baseMeasured, nextMeasur bool
		note                     string
	}{
		{"faster", 0, 1, InBoth, ChangeBetter, ChangeBetter, 1.12, true, true, ""},
		{"slower", 16 * K, 8, InBoth, ChangeWorse, ChangeWorse, 0.87, true, true, ""},
		{"within the threshold", 32 * K, 4, InBoth, ChangeSame, ChangeSame, 1.01, true, true, ""},
		{"status change", 128 * K, 1, InBoth, ChangeSame, ChangeSame, 1.01, true, true, "Requests queued → Valid"},
		{"measured in next only", 64 * K, 16, InBoth, ChangeUnknown, ChangeUnknown, 0, false, true, "Over capacity → Valid"},
		{"in base only", 248 * K, 1, OnlyInBase, ChangeUnknown, ChangeUnknown, 0, false, false, "only in base"},
		{"over capacity in both", 0, 128, InBoth, ChangeUnknown, ChangeUnknown, 0, false, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cmp.Cell(tc.ctx, tc.n)
			require.NotNil(t, c)
			assert.Equal(t, tc.presence, c.Presence)
			assert.Equal(t, tc.baseMeasured, c.BaseMeasured)
			assert.Equal(t, tc.nextMeasur, c.NextMeasured)
			assert.Equal(t, tc.note, c.Note())
			if tc.ratio == 0 {
				assert.False(t, c.TotalTokS.Compared())
				return
			}
			require.True(t, c.TotalTokS.Compared())
			assert.InDelta(t, tc.ratio, c.TotalTokS.Ratio, 1e-9)
			assert.Equal(t, tc.total, c.TotalTokS.Change)
			assert.Equal(t, tc.total, c.PerRequestTokS.Change, "per-request tok/s moves with the total")
			assert.Equal(t, tc.ttft, c.TTFTp50.Change)
			// Time between tokens fell as tok/s rose: lower is better.
			assert.Equal(t, tc.total, c.TBTp50.Change)
		})
	}
	t.Run("prefill", func(t *testing.T) {
		require.Len(t, cmp.Prefill, 5)
		assert.InDelta(t, 1.2, cmp.Prefill[0].PromptTokS.Ratio, 1e-9)
		assert.Equal(t, ChangeBetter, cmp.Prefill[0].PromptTokS.Change)
		assert.Equal(t, ChangeBetter, cmp.Prefill[0].TTFTms.Change, "a lower TTFT is better")
		last := cmp.Prefill[4]
		assert.Equal(t, OnlyInBase, last.Presence)
		assert.False(t, last.PromptTokS.Compared())
		assert.InDelta(t, 600.0, last.PromptTokS.Base, 1e-9)
	})
	t.Run("with itself", func(t *testing.T) {
		self := Compare(seedResults(t), seedResults(t))
		for _, c := range self.Cells {
			if c.TotalTokS.Compared() {
				assert.Equal(t, ChangeSame, c.TotalTokS.Change)
				assert.InDelta(t, 1.0, c.TotalTokS.Ratio, 1e-12)
			}
			assert.False(t, c.StatusChanged)
		}
	})
	t.Run("nil runs", func(t *testing.T) {
		c := Compare(nil, simulatedResults())
		for _, x := range c.Cells {
			assert.Equal(t, OnlyInNext, x.Presence)
		}
		assert.Empty(t, Compare(nil, nil).Cells)
	})
}

func TestNewRatio(t *testing.T) {
	tests := []struct {
		name          string
		base, next    float64
		lowerIsBetter bool
		want          *Ratio
	}{
		{"up", 100, 112, false, &Ratio{Base: 100, Next: 112, Ratio: 1.12, Change: ChangeBetter}},
		{"down", 100, 87, false, &Ratio{Base: 100, Next: 87, Ratio: 0.87, Change: ChangeWorse}},
		{"latency up", 100, 112, true, &Ratio{Base: 100, Next: 112, Ratio: 1.12, Change: ChangeWorse}},
		{"latency down", 100, 87, true, &Ratio{Base: 100, Next: 87, Ratio: 0.87, Change: ChangeBetter}},
		{"just within", 100, 104.9, false, &Ratio{Base: 100, Next: 104.9, Ratio: 1.049, Change: ChangeSame}},
		{"base only", 100, 0, false, &Ratio{Base: 100}},
		{"next only", 0, 50, true, &Ratio{Next: 50}},
		{"neither", 0, -1, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := newRatio(tc.base, tc.next, tc.lowerIsBetter)
			if tc.want == nil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.InDelta(t, tc.want.Ratio, got.Ratio, 1e-9)
			got.Ratio = tc.want.Ratio
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestComparisonJSON(t *testing.T) {
	cmp := Compare(seedResults(t), nextResults(t))
	var b bytes.Buffer
	require.NoError(t, cmp.WriteJSON(&b))
	var back Comparison
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	assert.Equal(t, cmp.Cells, back.Cells)
	assert.Equal(t, cmp.Prefill, back.Prefill)

	var doc map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	cell := doc["cells"].([]any)[0].(map[string]any)
	assert.Equal(t, "both", cell["presence"])
	assert.Equal(t, "valid", cell["base_status"])
	total := cell["total_tok_s"].(map[string]any)
	assert.Equal(t, "better", total["change"])
	assert.InDelta(t, 1.12, total["ratio"], 1e-9)
}

func TestComparisonGolden(t *testing.T) {
	cmp := Compare(seedResults(t), nextResults(t))
	for _, f := range []struct {
		ext   string
		write func(io.Writer) error
	}{
		{"txt", cmp.WriteTable}, {"md", cmp.WriteMarkdown}, {"csv", cmp.WriteCSV}, {"json", cmp.WriteJSON},
	} {
		t.Run(f.ext, func(t *testing.T) {
			golden(t, "compare."+f.ext, render(t, f.write))
		})
	}
}
