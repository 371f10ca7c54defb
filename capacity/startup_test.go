package capacity

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/llmload/llmload/internal/gib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startupRow is one row of testdata/startup_logs.json.
type startupRow struct {
	Name    string          `json:"name"`
	Version string          `json:"vllm_version"`
	GPU     string          `json:"gpu"`
	Kind    []string        `json:"kind"`
	Source  string          `json:"source"`
	Config  json.RawMessage `json:"config"`
	Launch  VLLM            `json:"launch"`
	Logged  struct {
		AvailableKVGiB   float64 `json:"available_kv_gib"`
		AvailableKVBytes int64   `json:"available_kv_bytes"`
		KVTokens         int     `json:"kv_tokens"`
		KVConcurrency    string  `json:"max_concurrency"`
		NumBlocks        []int   `json:"num_blocks"`
		BlockSize        int     `json:"block_size"`
		TotalGiB         float64 `json:"total_gib"`
		WeightsGiB       float64 `json:"weights_gib"`
		ActivationGiB    float64 `json:"activation_gib"`
		NonTorchGiB      float64 `json:"non_torch_gib"`
		CUDAGraphGiB     float64 `json:"cuda_graph_gib"`
		GraphsCharged    bool    `json:"cuda_graph_subtracted"`
		Refused          bool    `json:"refused"`
	} `json:"logged"`
}

func loadStartupRows(t *testing.T) []startupRow {
	t.Helper()
	data, err := os.ReadFile("testdata/startup_logs.json")
	require.NoError(t, err)
	var doc struct {
		Rows []startupRow `json:"rows"`
	}
	require.NoError(t, json.Unmarshal(data, &doc))
	require.NotEmpty(t, doc.Rows)
	return doc.Rows
}

// estimate runs EstimateVLLM and requires vLLM's outcome: an estimate, or
// ErrInsufficientMemory (with the estimate filled in) for a refused launch.
func (r startupRow) estimate(t *testing.T, m *Model, l VLLM) *Estimate {
	t.Helper()
	e, err := EstimateVLLM(m, l)
	if r.Logged.Refused {
		require.ErrorIs(t, err, ErrInsufficientMemory)
	} else {
		require.NoError(t, err)
	}
	require.NotNil(t, e)
	return e
}

func (r startupRow) model(t *testing.T) *Model {
	t.Helper()
	m, err := ParseConfig(r.Config)
	require.NoError(t, err)
	return m
}

// TestStartupLogsFromAvailableMemory predicts the KV tokens from each logged
// "Available KV cache memory". The log prints two decimals, so the true
// figure lies within ±0.005 GiB; the logged tokens must lie within one block
// of what that range predicts.
func TestStartupLogsFromAvailableMemory(t *testing.T) {
	for _, r := range loadStartupRows(t) {
		if r.Logged.AvailableKVGiB == 0 && r.Logged.AvailableKVBytes == 0 || r.Logged.KVTokens == 0 {
			continue
		}
		t.Run(r.Name, func(t *testing.T) {
			m := r.model(t)
			at := func(bytes int64) *Estimate {
				l := r.Launch
				l.AvailableKVBytes = bytes
				return r.estimate(t, m, l)
			}
			var lo, mid, hi *Estimate
			if r.Logged.AvailableKVBytes > 0 {
				lo = at(r.Logged.AvailableKVBytes)
				mid, hi = lo, lo
			} else {
				lo = at(gib.Bytes(r.Logged.AvailableKVGiB - 0.005))
				mid = at(gib.Bytes(r.Logged.AvailableKVGiB))
				hi = at(gib.Bytes(r.Logged.AvailableKVGiB + 0.005))
			}
			perBlock := int(math.Ceil(float64(mid.KVTokens) / float64(mid.NumBlocks)))
			got := r.Logged.KVTokens
			assert.GreaterOrEqual(t, got, lo.KVTokens-perBlock, "logged tokens below the range")
			assert.LessOrEqual(t, got, hi.KVTokens+perBlock, "logged tokens above the range")
			if r.Logged.BlockSize > 0 {
				assert.Equal(t, r.Logged.BlockSize, mid.BlockSize)
			}
			if n := r.Logged.NumBlocks; len(n) == 2 && r.Logged.AvailableKVBytes > 0 {
				assert.Equal(t, n[0], mid.NumBlocks)
			}
			if r.Logged.KVConcurrency != "" {
				c, err := strconv.ParseFloat(r.Logged.KVConcurrency, 64)
				require.NoError(t, err)
				perBlockC := mid.KVConcurrency / float64(mid.NumBlocks)
				assert.GreaterOrEqual(t, c, lo.KVConcurrency-perBlockC-0.005, "logged concurrency below the range")
				assert.LessOrEqual(t, c, hi.KVConcurrency+perBlockC+0.005, "logged concurrency above the range")
			}
			t.Logf("%s: logged %d tokens from %.2f GiB; predicted %d (%d blocks of %d tokens, %d per request), off by %+.1f blocks; source %s",
				r.Name, got, float64(mid.Budget.AvailableKV.Bytes)/gibibyte, mid.KVTokens, mid.NumBlocks, mid.BlockSize, mid.BlocksPerRequest,
				float64(got-mid.KVTokens)/float64(perBlock), r.Source)
		})
	}
}

// TestStartupLogsFromBlocks checks the reporting formulas and the block
// geometry on rows whose logged figures pin the number of blocks: one block
// count in the allowed range must reproduce the logged tokens exactly and
// the logged concurrency to two decimals.
func TestStartupLogsFromBlocks(t *testing.T) {
	for _, r := range loadStartupRows(t) {
		if len(r.Logged.NumBlocks) != 2 {
			continue
		}
		t.Run(r.Name, func(t *testing.T) {
			m := r.model(t)
			var matches []int
			var last *Estimate
			for n := r.Logged.NumBlocks[0]; n <= r.Logged.NumBlocks[1]; n++ {
				l := r.Launch
				l.NumGPUBlocksOverride = n
				e := r.estimate(t, m, l)
				last = e
				if e.KVTokens != r.Logged.KVTokens {
					continue
				}
				if r.Logged.KVConcurrency != "" && fmt.Sprintf("%.2f", e.KVConcurrency) != r.Logged.KVConcurrency {
					continue
				}
				matches = append(matches, n)
			}
			require.NotEmpty(t, matches, "no block count in %v reproduces %d tokens (block size %d, %d groups, %d blocks per request)",
				r.Logged.NumBlocks, r.Logged.KVTokens, last.BlockSize, len(last.Groups), last.BlocksPerRequest)
			t.Logf("%s: %d tokens reproduced by num_blocks %v (block size %d, %d groups); source %s",
				r.Name, r.Logged.KVTokens, matches, last.BlockSize, len(last.Groups), r.Source)
		})
	}
}
