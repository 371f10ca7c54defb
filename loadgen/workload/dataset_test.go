package workload_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/workload"
)

// readAll reads every record of a dataset, errors included.
func readAll(t *testing.T, r *workload.DatasetReader) ([]workload.Record, []*workload.ParseError) {
	t.Helper()
	var recs []workload.Record
	var errs []*workload.ParseError
	for range 10000 {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return recs, errs
		}
		if err != nil {
			var pe *workload.ParseError
			require.ErrorAs(t, err, &pe)
			errs = append(errs, pe)
			continue
		}
		recs = append(recs, rec)
	}
	t.Fatal("the reader never ended")
	return nil, nil
}

func TestShareGPTArray(t *testing.T) {
	f, err := os.Open("testdata/sharegpt.json")
	require.NoError(t, err)
	defer f.Close()
	r := workload.NewDatasetReader(f, "sharegpt.json")
	recs, errs := readAll(t, r)
	require.Empty(t, errs)
	require.Len(t, recs, 2)
	assert.Equal(t, 1, r.Skipped, "the conversation without a user turn")

	assert.Equal(t, 2, recs[0].Line)
	assert.Len(t, recs[0].Turns, 4)
	it := recs[0].Item(nil, nil)
	assert.Equal(t, []loadgen.Message{{Role: "user", Content: "What is the tallest mountain in Europe?"}}, it.Messages)
	assert.Equal(t, workload.EstimateTokens("Mount Elbrus, in the Caucasus, at 5,642 metres."), it.OutputTokens, "the reply's length")
	assert.Equal(t, 11, workload.EstimateTokens("Mount Elbrus, in the Caucasus, at 5,642 metres."), "8 words, 4 tokens every 3")

	assert.Equal(t, 17, recs[1].Line)
	it = recs[1].Item(workload.Fixed(99), nil)
	assert.Equal(t, []loadgen.Message{
		{Role: "system", Content: "You answer in one line."},
		{Role: "user", Content: `Name a river in "Spain" [with brackets].`},
	}, it.Messages, "the system message goes with the first user turn")
	assert.Equal(t, 99, it.OutputTokens, "an output length given replaces the reply's")
}

func TestPromptsJSONL(t *testing.T) {
	d, err := workload.OpenDataset("testdata/prompts.jsonl")
	require.NoError(t, err)
	assert.Equal(t, 3, d.Records)
	items := d.Items(nil, 1)
	defer items.(io.Closer).Close()
	var got []int
	for range 7 { // more than the file holds: it starts again
		it, err := items.Read()
		require.NoError(t, err)
		got = append(got, it.OutputTokens)
	}
	assert.Equal(t, []int{10, 0, 819, 10, 0, 819, 10}, got, "output_tokens, or 0 to leave it to the server")
}

// A malformed record is reported with its line, and the file is refused.
func TestDatasetMalformedLines(t *testing.T) {
	_, err := workload.OpenDataset("testdata/sharegpt-malformed.jsonl")
	require.Error(t, err)
	var fe *workload.FileError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, 3, fe.Count)
	var lines []int
	for _, pe := range fe.Errs {
		lines = append(lines, pe.Line)
	}
	assert.Equal(t, []int{2, 5, 6}, lines)
	var pe *workload.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 2, pe.Line, "errors.As finds the first")
	msg := err.Error()
	assert.Contains(t, msg, "sharegpt-malformed.jsonl has 3 malformed records: line 2: not valid JSON")
	assert.Contains(t, msg, `line 5: conversations[0] is from "robot"`)
	assert.Contains(t, msg, "line 6: conversations is a string, want an array")
	assert.NotContains(t, msg, "\n")
	assert.Equal(t, "workload: sharegpt-malformed.jsonl:2: "+pe.Err.Error(), pe.Error())
}

// In a JSON array, an error names the line where it is, within a record
// of many lines.
func TestDatasetArrayErrorLines(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		line       int
		msg        string
	}{
		{"value of the wrong type", "[\n{\"conversations\": [\n {\"from\": \"human\",\n  \"value\": 12}\n]}\n]", 4, "conversations.value is a number, want a string"},
		{"bad JSON inside", "[{\"conversations\": [{\"from\": \"human\", \"value\": \"a\"},\n{\"from\": \"gpt\" \"value\": \"b\"}]}]", 2, "not valid JSON"},
		{"missing comma", "[\n{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n]", 3, "want , or ]"},
		{"unterminated", "[\n{\"prompt\": \"a\"},\n{\"prompt\": \"b\"", 3, "ends inside an element"},
		{"not an object", "[\n{\"prompt\": \"a\"},\n 7\n]", 3, "must be a JSON object"},
		{"after the end", "[{\"prompt\": \"a\"}]\n\nx", 3, "after the end of the JSON array"},
		{"neither form", "{\"text\": \"a\"}", 1, `neither "conversations"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := workload.NewDatasetReader(strings.NewReader(tc.file), "d.json")
			_, errs := readAll(t, r)
			require.NotEmpty(t, errs)
			assert.Equal(t, tc.line, errs[0].Line)
			assert.Contains(t, errs[0].Error(), tc.msg)
			assert.Contains(t, errs[0].Error(), "d.json:")
		})
	}
}

func TestDatasetEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.json")
	require.NoError(t, os.WriteFile(path, []byte(`[{"conversations": [{"from": "gpt", "value": "x"}]}]`), 0o600))
	_, err := workload.OpenDataset(path)
	assert.ErrorIs(t, err, workload.ErrEmpty)
	assert.Contains(t, err.Error(), "1 skipped")
}
