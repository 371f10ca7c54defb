package workload_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/workload"
)

// simulator starts a simulated server that reports cached prompt tokens.
// blockSize is the KV-cache block of the simulator's fast profile: the
// server caches prompts in whole blocks of it.
var blockSize = loadgentest.FastProfile().BlockSize

func simulator(t *testing.T) (*loadgentest.Server, *loadgen.Client) {
	t.Helper()
	p := loadgentest.FastProfile()
	p.PromptTokensDetails = true
	p.Speed = 10
	srv := loadgentest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv, &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}
}

// Synthetic requests are the sizes they say, as the server counts them:
// prompt tokens with the chat template, and exactly their output tokens.
func TestSyntheticSizesAsTheServerCounts(t *testing.T) {
	_, c := simulator(t)
	for _, api := range []loadgen.API{loadgen.Chat, loadgen.Completions} {
		t.Run(api.String(), func(t *testing.T) {
			s := &workload.Synthetic{
				Input:  workload.Uniform(20, 400),
				Output: workload.LogNormal(12, 6, 0, 40),
				Prefix: workload.SharedPrefix{Groups: 2, Tokens: 64},
				Sizing: workload.SimulatorSizing(api == loadgen.Chat),
				Seed:   7,
			}
			require.NoError(t, s.Validate())
			b := &workload.Builder{API: api, Model: loadgentest.DefaultModel, IgnoreEOS: true}
			for i := range 6 {
				it := s.Item(i)
				assert.Equal(t, it, s.Item(i), "item %d is the same every time", i)
				resp, err := c.Do(t.Context(), b.Request(it))
				require.NoError(t, err)
				assert.Equal(t, it.InputTokens, resp.PromptTokens, "item %d: prompt tokens", i)
				assert.Equal(t, it.OutputTokens, resp.OutputTokens(), "item %d: output tokens", i)
				if i >= 2 {
					// The group's prefix is cached by the first of its
					// group; nothing else is shared.
					prefixBlocks := 64 / blockSize * blockSize
					assert.GreaterOrEqual(t, resp.CachedTokens, prefixBlocks-blockSize, "item %d: the shared prefix is cached", i)
					assert.Less(t, resp.CachedTokens, 64+blockSize, "item %d: nothing beyond the prefix is cached", i)
				} else {
					assert.Zero(t, resp.CachedTokens, "item %d: the first of its group finds nothing cached", i)
				}
			}
		})
	}
}

func TestSyntheticValidate(t *testing.T) {
	for name, s := range map[string]*workload.Synthetic{
		"no input":               {},
		"empty input":            {Input: workload.Fixed(0)},
		"tiny prefix":            {Input: workload.Fixed(10), Prefix: workload.SharedPrefix{Groups: 2, Tokens: 5}, Sizing: workload.SimulatorSizing(true)},
		"bad sizing":             {Input: workload.Fixed(10), Sizing: workload.Sizing{MessageTokens: -1}},
		"bad prefixes":           {Input: workload.Fixed(10), Prefix: workload.SharedPrefix{Groups: -1}},
		"input below the prefix": {Input: workload.Fixed(100), Prefix: workload.SharedPrefix{Groups: 2, Tokens: 100}},
	} {
		t.Run(name, func(t *testing.T) {
			err := s.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), "workload: Synthetic.")
		})
	}
}

// Calibrate finds the simulator's sizing from the usage it reports.
func TestCalibrate(t *testing.T) {
	_, c := simulator(t)
	for _, chat := range []bool{true, false} {
		api := loadgen.Completions
		if chat {
			api = loadgen.Chat
		}
		s, err := workload.Calibrate(t.Context(), c, api, loadgentest.DefaultModel)
		require.NoError(t, err)
		assert.Equal(t, workload.SimulatorSizing(chat), s, "%v", api)
	}
}
