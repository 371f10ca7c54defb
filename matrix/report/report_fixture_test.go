package report

import (
	"github.com/llmload/llmload/matrix"

	"encoding/csv"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// seedCSV is the seed's measurements.csv, copied from the seed page.
const seedCSV = "testdata/seed-measurements.csv"

// readMeasurementsCSV builds Results from a CSV in WriteCSV's format, such
// as the seed's measurements.csv: the grid's axes and the prefill contexts
// in the order they appear, a measurement for every decode row with any
// number. Fixtures only: the CSV holds medians, so p90 and p99 are absent.
func readMeasurementsCSV(t testing.TB, path string) *matrix.Results {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.NotEmpty(t, recs)
	require.Equal(t, csvHeader, recs[0])

	r := &matrix.Results{Schema: matrix.Schema, Complete: true, Spec: matrix.Spec{Prefill: []int{}}}
	num := func(s string) float64 {
		if s == "" {
			return 0
		}
		v, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err, "%q", s)
		return v
	}
	integer := func(s string) int {
		if s == "" {
			return 0
		}
		v, err := strconv.Atoi(s)
		require.NoError(t, err, "%q", s)
		return v
	}
	for _, rec := range recs[1:] {
		ctx, n := integer(rec[1]), integer(rec[2])
		st := matrix.Status(rec[3])
		require.True(t, known(st), "%q", rec[3])
		switch rec[0] {
		case "prefill":
			p := matrix.Prefill{ContextTokens: ctx, Status: matrix.Valid, PromptTokens: ctx, TTFT: num(rec[6]), PromptTokensPerSec: num(rec[4])}
			if st != matrix.Valid {
				p.Status, p.Reason, p.Error = matrix.Failed, "not measured", "not measured"
			}
			r.Prefill = append(r.Prefill, p)
			r.Spec.Prefill = append(r.Spec.Prefill, ctx)
		case "decode":
			c := matrix.Cell{ContextTokens: ctx, Concurrency: n, Status: st,
				Predicted: capacity.Verdict{Fits: true, Reason: capacity.WithinLimits}}
			if slices.ContainsFunc(rec[4:], func(s string) bool { return s != "" }) {
				c.PromptTokens = ctx
				c.Measurement = &matrix.Measurement{
					OutputTokensPerSec:     num(rec[4]),
					PerRequestTokensPerSec: num(rec[5]),
					TTFT:                   matrix.Quantiles{P50: num(rec[6])},
					TBT:                    matrix.Quantiles{P50: num(rec[7])},
					AvgActive:              num(rec[8]),
					Completed:              integer(rec[9]),
					OutputTokens:           integer(rec[10]),
					MeasuredS:              num(rec[11]),
				}
			} else if st == matrix.OverCapacity {
				c.Predicted = capacity.Verdict{Reason: capacity.OverKVTokens}
			}
			r.Cells = append(r.Cells, c)
			if !slices.Contains(r.Spec.Contexts, ctx) {
				r.Spec.Contexts = append(r.Spec.Contexts, ctx)
			}
			if !slices.Contains(r.Spec.Concurrency, n) {
				r.Spec.Concurrency = append(r.Spec.Concurrency, n)
			}
		default:
			t.Fatalf("unknown phase %q", rec[0])
		}
	}
	return r
}

// seedResults is the seed page as Results: the measurements.csv numbers,
// the seed's server and spec, and reasons for the cells that were not
// Valid.
func seedResults(t testing.TB) *matrix.Results {
	t.Helper()
	r := readMeasurementsCSV(t, seedCSV)
	r.Spec.URL = "http://127.0.0.1:8000/v1"
	r.Spec.Model = "bench"
	r.Spec.Duration = 30 * time.Second
	r.Spec.MaxTokens = 8192
	r.Started = time.Date(2026, 3, 14, 9, 26, 0, 0, time.UTC)
	r.Finished = r.Started.Add(95 * time.Minute)
	r.Server = capacity.Server{
		URL:    "http://127.0.0.1:8000/v1",
		Model:  "Qwen3.5-4B-AWQ-4bit",
		Engine: "vllm",
		Limits: capacity.Limits{KVTokens: 330_000, MaxRunning: 128, MaxModelLen: 262_144, Source: "vllm /metrics"},
	}
	for i := range r.Cells {
		c := &r.Cells[i]
		switch {
		case c.Status == matrix.RequestsQueued:
			c.Reason = "average running requests " + strconv.FormatFloat(c.Measurement.AvgActive, 'f', 2, 64) +
				" below 0.95 × " + strconv.Itoa(c.Concurrency)
		case c.Status == matrix.OverCapacity && c.Measurement != nil:
			c.Reason = "no output in the window: requests waited for KV cache"
		case c.Status == matrix.OverCapacity:
			need := c.Concurrency * (c.ContextTokens + 8192)
			c.Reason = strconv.Itoa(c.Concurrency) + " × (" + strconv.Itoa(c.ContextTokens) + " + 8192) = " +
				strconv.Itoa(need) + " tokens > 330000 KV tokens"
			c.Predicted.Detail = c.Reason
		}
	}
	return r
}

// simulatedResults is a small, incomplete run against llmload's simulator
// at 20× speed that exercises what the seed does not: a Failed cell with
// error kinds, a partial cell, a client-limited cell, a failed prefill,
// cells not run yet, and strings that need escaping.
func simulatedResults() *matrix.Results {
	meas := func(total, perReq, ttft, tbt, active float64, out int) *matrix.Measurement {
		return &matrix.Measurement{
			OutputTokensPerSec: total, PerRequestTokensPerSec: perReq,
			TTFT:      matrix.Quantiles{P50: ttft, P90: ttft * 1.4, P99: ttft * 2},
			TBT:       matrix.Quantiles{P50: tbt, P90: tbt * 1.1, P99: tbt * 1.3},
			ITL:       matrix.Quantiles{P50: tbt, P90: tbt * 1.2, P99: tbt * 1.6},
			AvgActive: active, Completed: 1, OutputTokens: out, MeasuredS: 30,
		}
	}
	failed := meas(410.2, 25.1, 950, 39.8, 14.2, 12_306)
	partial := meas(66.3, 66.9, 1_250.4, 14.9, 1, 1_105)
	partial.Partial, partial.MeasuredS = true, 16.7
	limited := meas(275.5, 70.1, 230, 14.3, 4, 8_265)
	limited.ClientLimited = true
	limited.Client.Limited, limited.Client.Reason = true, "timer lag p99 41 ms > 20 ms"
	queued := meas(150.8, 44.7, 3_310, 22.4, 3.1, 4_524)

	started := time.Date(2026, 5, 2, 18, 4, 0, 0, time.UTC)
	r := &matrix.Results{
		Schema: matrix.Schema,
		Spec: matrix.Spec{
			URL: "http://127.0.0.1:41234/v1", Model: "sim-4b", API: loadgen.Chat,
			Contexts: []int{0, 16 * tokensK, 32 * tokensK}, Concurrency: []int{1, 4, 16},
			Prefill: []int{8 * tokensK, 16 * tokensK}, Duration: 30 * time.Second, MaxTokens: 8192,
		},
		Server: capacity.Server{
			URL: "http://127.0.0.1:41234/v1", Model: `sim-4b <seed> & "friends"`,
			Simulated: true, Speed: 20,
			Limits: capacity.Limits{KVTokens: 200_000, MaxRunning: 16, MaxModelLen: 40_960, Source: "simulator"},
			Notes:  []string{"prompt sizes calibrated from usage.prompt_tokens (no /tokenize)"},
		},
		Started: started,
		Prefill: []matrix.Prefill{
			{ContextTokens: 8 * tokensK, Status: matrix.Valid, PromptTokens: 8_192, TTFT: 3_480.2, PromptTokensPerSec: 2_353.9},
			{ContextTokens: 16 * tokensK, Status: matrix.Failed, PromptTokens: 16_384, Reason: "scout: server returned 500: <html>upstream\x1b[31m error</html>",
				Error: "scout: server returned 500: <html>upstream\x1b[31m error</html>"},
		},
		Cells: []matrix.Cell{
			{ContextTokens: 0, Concurrency: 1, Status: matrix.Valid, Requests: 1, Measurement: meas(81.2, 81.6, 80.6, 12.25, 1, 2_436)},
			{ContextTokens: 0, Concurrency: 4, Status: matrix.Valid, Requests: 4, Errors: 1, ErrorKinds: map[metrics.ErrorKind]int{metrics.KindStall: 1}, Measurement: limited},
			{ContextTokens: 0, Concurrency: 16, Status: matrix.Failed, Reason: "more than half of the requests failed | <script>alert(1)</script>",
				Requests: 20, Errors: 12, ErrorKinds: map[metrics.ErrorKind]int{metrics.KindServerStatus: 9, metrics.KindTruncated: 3}, Measurement: failed},
			{ContextTokens: 16 * tokensK, Concurrency: 1, Status: matrix.Valid, PromptTokens: 16_800, Requests: 1, Measurement: partial},
			{ContextTokens: 16 * tokensK, Concurrency: 4, Status: matrix.RequestsQueued, Reason: "a waiting request was sampled", PromptTokens: 16_800, Requests: 3, Measurement: queued},
			{ContextTokens: 16 * tokensK, Concurrency: 16, Status: matrix.OverCapacity,
				Reason:    "16 × (16384 + 8192) = 393216 tokens > 200000 KV tokens",
				Predicted: capacity.Verdict{Reason: capacity.OverKVTokens, Need: 393_216, Have: 200_000}},
			{ContextTokens: 32 * tokensK, Concurrency: 1, Status: matrix.OverCapacity,
				Reason:    "one request needs 32768 + 8192 + 64 template = 41024 tokens > max_model_len 40960",
				Predicted: capacity.Verdict{Reason: capacity.OverMaxModelLen, Need: 41_024, Have: 40_960}},
		},
	}
	// The figures above are as the reports show them, in the simulated
	// server's time; the results hold them in wall time.
	return inWallTime(r)
}
