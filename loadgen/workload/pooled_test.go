package workload_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/workload"
)

// A Feed makes each Embeddings request of Batch items, each item's text an
// input of its length, and each Rerank request of a query and Batch
// documents; a batch of one embeds a string. Every request can be sent.
func TestFeedBatchesPooledRequests(t *testing.T) {
	for _, tc := range []struct {
		api          loadgen.API
		batch, items int
	}{
		{loadgen.Embeddings, 3, 3},
		{loadgen.Rerank, 3, 4},
		{loadgen.Embeddings, 1, 1},
		{loadgen.Rerank, 0, 2},
	} {
		syn := &workload.Synthetic{Input: workload.Fixed(12), Output: workload.Fixed(1), Sizing: workload.SimulatorSizing(false), Seed: 7}
		feed := workload.NewFeed(syn.Reader(), &workload.Builder{API: tc.api, Model: "m", Batch: tc.batch})
		seen := map[string]bool{}
		for seq := range 4 {
			req := feed.Source(0, seq)
			require.NotNil(t, req)
			_, err := req.Body()
			require.NoError(t, err, "%v batch %d", tc.api, tc.batch)
			texts := req.Documents
			if tc.api == loadgen.Rerank || len(texts) == 0 {
				texts = append(texts, req.Prompt)
			}
			assert.Len(t, texts, tc.items, "%v batch %d", tc.api, tc.batch)
			for _, x := range texts {
				assert.Len(t, strings.Fields(x), 12, "an input of its length")
				seen[x] = true
			}
			assert.Zero(t, req.MaxTokens, "nothing to generate")
		}
		assert.Len(t, seen, 4*tc.items, "%v batch %d: every input an item of its own", tc.api, tc.batch)
	}
}
