package workload_test

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/simtokens"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/workload"
)

func readTrace(t *testing.T, r *workload.TraceReader) ([]workload.TraceEntry, []*workload.ParseError) {
	t.Helper()
	var es []workload.TraceEntry
	var errs []*workload.ParseError
	for range 10000 {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			return es, errs
		}
		if err != nil {
			var pe *workload.ParseError
			require.ErrorAs(t, err, &pe)
			errs = append(errs, pe)
			continue
		}
		es = append(es, e)
	}
	t.Fatal("the reader never ended")
	return nil, nil
}

func TestMooncakeTrace(t *testing.T) {
	tr, err := workload.OpenTrace("testdata/mooncake.jsonl")
	require.NoError(t, err)
	assert.Equal(t, workload.Mooncake, tr.Format)
	assert.Equal(t, 3, tr.Requests)
	assert.Equal(t, 250*time.Millisecond, tr.Span)

	f, err := os.Open("testdata/mooncake.jsonl")
	require.NoError(t, err)
	defer f.Close()
	es, errs := readTrace(t, workload.NewTraceReader(f, ""))
	require.Empty(t, errs)
	assert.Equal(t, []workload.TraceEntry{
		{Line: 1, At: 0, InputTokens: 40, OutputTokens: 5, HashIDs: []int64{0, 1}},
		{Line: 2, At: 100 * time.Millisecond, InputTokens: 70, OutputTokens: 3, HashIDs: []int64{0, 1, 2, 3}},
		{Line: 3, At: 250 * time.Millisecond, InputTokens: 30, OutputTokens: 8, HashIDs: []int64{7, 8}},
	}, es)
}

func TestAzureTrace(t *testing.T) {
	f, err := os.Open("testdata/azure.csv")
	require.NoError(t, err)
	defer f.Close()
	r := workload.NewTraceReader(f, "azure.csv")
	es, errs := readTrace(t, r)
	require.Empty(t, errs)
	assert.Equal(t, workload.Azure, r.Format())
	assert.Equal(t, []workload.TraceEntry{
		{Line: 2, At: 0, InputTokens: 374, OutputTokens: 44},
		{Line: 3, At: 4314579 * time.Microsecond, InputTokens: 396, OutputTokens: 109},
		{Line: 4, At: 4319410 * time.Microsecond, InputTokens: 879, OutputTokens: 1},
	}, es)
}

func TestTraceMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		lines      []int
		msg        string
	}{
		{"mooncake fields", "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1}\n{\"timestamp\": 5, \"output_length\": 1}\n{\"timestamp\": 6, \"input_length\": 2.5, \"output_length\": 1}\n{\"timestamp\": -1, \"input_length\": 2, \"output_length\": 1}\n",
			[]int{2, 3, 4}, `no "input_length"`},
		{"mooncake order", "{\"timestamp\": 10, \"input_length\": 4, \"output_length\": 1}\n\n{\"timestamp\": 5, \"input_length\": 4, \"output_length\": 1}\n",
			[]int{3}, "in time order"},
		{"mooncake hash", "{\"timestamp\": 10, \"input_length\": 4, \"output_length\": 0, \"hash_ids\": [1, \"x\"]}\n",
			[]int{1}, "hash_ids is a string, want a number"},
		{"azure header", "TIME,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n",
			[]int{1}, "it has no TIMESTAMP"},
		{"azure rows", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374\n16/11/2023,1,1\n2023-11-16 18:15:47,x,1\n2023-11-16 18:15:47,0,1\n",
			[]int{2, 3, 4, 5}, "2 fields, but the header has 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := readTrace(t, workload.NewTraceReader(strings.NewReader(tc.file), "t"))
			var lines []int
			for _, e := range errs {
				lines = append(lines, e.Line)
			}
			assert.Equal(t, tc.lines, lines)
			require.NotEmpty(t, errs)
			assert.Contains(t, errs[0].Error(), tc.msg)
		})
	}
}

// A replayed request is the size its trace says, as the server counts
// it, and requests that share hash IDs share that prefix in the server's
// cache.
func TestReplayItems(t *testing.T) {
	_, c := simulator(t)
	tr, err := workload.OpenTrace("testdata/mooncake.jsonl")
	require.NoError(t, err)
	rp := workload.Replay{TimeScale: 2, BlockTokens: 16, Sizing: workload.SimulatorSizing(true), Seed: 3}
	items := tr.Items(rp)
	defer items.(io.Closer).Close()
	b := &workload.Builder{Model: loadgentest.DefaultModel, IgnoreEOS: true}
	var got []workload.Item
	for {
		it, err := items.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		got = append(got, it)
	}
	require.Len(t, got, 3)
	assert.Equal(t, []time.Duration{0, 200 * time.Millisecond, 500 * time.Millisecond},
		[]time.Duration{got[0].At, got[1].At, got[2].At}, "times scaled by 2")
	// Hash IDs 0 and 1 are two blocks of 16 tokens: the second request's
	// prompt begins with the first's 32 words.
	first, second := strings.Fields(got[0].Messages[0].Content), strings.Fields(got[1].Messages[0].Content)
	third := strings.Fields(got[2].Messages[0].Content)
	assert.Equal(t, first[:32], second[:32])
	assert.NotEqual(t, first[:16], third[:16], "other IDs, other text")
	for i, it := range got {
		resp, err := c.Do(t.Context(), b.Request(it))
		require.NoError(t, err)
		assert.Equal(t, it.InputTokens, resp.PromptTokens, "request %d's prompt", i)
		assert.Equal(t, []int{40, 70, 30}[i], resp.PromptTokens, "request %d: the trace's input length", i)
		assert.Equal(t, it.OutputTokens, resp.OutputTokens(), "request %d's output", i)
		if i == 1 {
			// The template's 3 tokens, then 32 shared: two full blocks.
			assert.Equal(t, 32, resp.CachedTokens, "the shared blocks are in the server's cache")
		}
	}
}

func TestReplayCompletions(t *testing.T) {
	rp := workload.Replay{Sizing: workload.SimulatorSizing(false)}
	it := rp.Item(workload.TraceEntry{InputTokens: 1000, OutputTokens: 7, HashIDs: []int64{5}})
	b := &workload.Builder{API: loadgen.Completions}
	req := b.Request(it)
	assert.Equal(t, 1000, simtokens.Count(req.Prompt))
	assert.Equal(t, 7, req.MaxTokens)
	assert.Equal(t, 1000, it.InputTokens)
	other := rp.Item(workload.TraceEntry{InputTokens: 600, OutputTokens: 7, HashIDs: []int64{5, 9}})
	assert.Equal(t, strings.Fields(req.Prompt)[:512], strings.Fields(other.Messages[0].Content)[:512], "hash ID 5 is the same 512 tokens")
}

// TestTraceByteOrderMark: a UTF-8 byte-order mark before a trace's first
// line is skipped, so a CSV trace keeps its TIMESTAMP column and a
// Mooncake trace is read as one.
func TestTraceByteOrderMark(t *testing.T) {
	for name, tc := range map[string]struct {
		file   string
		format string
	}{
		"azure":    {"\ufeffTIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n", workload.Azure},
		"mooncake": {"\ufeff{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1}\n", workload.Mooncake},
	} {
		t.Run(name, func(t *testing.T) {
			r := workload.NewTraceReader(strings.NewReader(tc.file), "t")
			es, errs := readTrace(t, r)
			require.Empty(t, errs)
			require.Len(t, es, 1)
			assert.Equal(t, tc.format, r.Format())
		})
	}
}

// TestTraceTimestampOverflow: a Mooncake timestamp whose nanoseconds from
// the trace's first do not fit a time.Duration is refused as such, not
// wrapped into a time out of order.
func TestTraceTimestampOverflow(t *testing.T) {
	file := "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1}\n{\"timestamp\": 9.3e12, \"input_length\": 4, \"output_length\": 1}\n"
	es, errs := readTrace(t, workload.NewTraceReader(strings.NewReader(file), "t"))
	require.Len(t, es, 1)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), "not a time in milliseconds from 0 to 9e+12")
	assert.NotContains(t, errs[0].Error(), "time order")
}
