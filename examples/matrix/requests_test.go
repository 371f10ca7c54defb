package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/tokencount"
	"github.com/llmload/llmload/matrix"
)

// Every request of every cell's streams has its line, labelled with its
// cell, and the lines add up to each cell's counts.
func TestRequestsOut(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "requests.jsonl")
	var out, errOut bytes.Buffer
	code := run(t.Context(), small(filepath.Join(dir, "r.json"), "-format", "json", "-requests-out", path), &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	res, err := matrix.LoadFile(filepath.Join(dir, "r.json"))
	require.NoError(t, err)

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	type key struct{ run, window, outcome string }
	count := map[key]int{}
	perRun := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct {
			Run, Window, Outcome, Model string
			OutputTokens                int `json:"output_tokens"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), sc.Text())
		assert.Equal(t, res.Spec.Model, l.Model)
		count[key{l.Run, l.Window, l.Outcome}]++
		perRun[l.Run]++
	}
	require.NoError(t, sc.Err())
	require.Len(t, res.Cells, 4)
	for _, c := range res.Cells {
		require.NotNil(t, c.Measurement, "%d × %d", c.ContextTokens, c.Concurrency)
		label := fmt.Sprintf("%s × %d", tokencount.Format(c.ContextTokens), c.Concurrency)
		s := c.Measurement.Recording.Summary
		assert.Equal(t, s.Requests, perRun[label], "%s: a line for every request of the streams", label)
		assert.Equal(t, c.Measurement.Completed, count[key{label, "inside", "completed"}], "%s: completed in the window", label)
		assert.Positive(t, count[key{label, "inside", "canceled"}]+count[key{label, "after", "canceled"}], "%s: the window's end cut the streams", label)
	}
	assert.Len(t, perRun, 4, "four cells, no other label")
}
