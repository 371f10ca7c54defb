package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/fifotest"
	"github.com/llmload/llmload/matrix"
)

// oneCell is the smallest matrix: one cell, no prefill table.
var oneCell = []string{"-contexts", "0", "-concurrency", "1", "-prefill", "", "-duration", "1s", "-max-tokens", "256", "-quiet"}

// -requests-out the same file as -results (or the file -resume finishes)
// or -o would destroy the one or the other: refused before anything
// runs, naming both flags, however the path is spelt.
func TestRequestsOutIsNotTheResults(t *testing.T) {
	v1, err := filepath.Abs("../../matrix/testdata/results-v1.json")
	require.NoError(t, err)
	dir := t.TempDir()
	t.Chdir(dir)
	saved, err := matrix.LoadFile(v1)
	require.NoError(t, err)
	require.NoError(t, matrix.SaveFile("resumable.json", saved))
	before, err := os.ReadFile("resumable.json")
	require.NoError(t, err)
	for _, tc := range []struct {
		args  []string
		other string
	}{
		{[]string{"-results", "r.json", "-requests-out", "r.json"}, "-results"},
		{[]string{"-results", filepath.Join(dir, "r.json"), "-requests-out", "./r.json"}, "-results"},
		{[]string{"-resume", "resumable.json", "-requests-out", filepath.Join(dir, "resumable.json")}, "-results"},
		{[]string{"-results", "r.json", "-o", "report.txt", "-requests-out", "sub/../report.txt"}, "-o"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			start := time.Now()
			args := append(oneCell, tc.args...)
			if tc.args[0] == "-resume" {
				args = append([]string{"-quiet"}, tc.args...) // the run's own grid
			}
			code, stdout, stderr := command(t, t.Context(), args...)
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, "-requests-out ")
			assert.Contains(t, stderr, "is the file given to "+tc.other)
			assert.Empty(t, stdout)
			assert.Less(t, time.Since(start), 5*time.Second, "refused before anything runs")
		})
	}
	after, err := os.ReadFile("resumable.json")
	require.NoError(t, err)
	assert.Equal(t, before, after, "the results being resumed are untouched")
	assert.NoFileExists(t, "r.json")
	assert.NoFileExists(t, "report.txt")
}

// -requests-out never follows a symbolic link nor opens a named pipe, and
// replaces an existing file only with -overwrite, as -results does.
func TestMatrixRequestsOutNeverClobbers(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, "r.json")
	target := filepath.Join(dir, "precious.txt")
	require.NoError(t, os.WriteFile(target, []byte("keep me"), 0o644))
	link := filepath.Join(dir, "link.jsonl")
	require.NoError(t, os.Symlink(target, link))
	existing := filepath.Join(dir, "earlier.jsonl")
	require.NoError(t, os.WriteFile(existing, []byte("an earlier run's requests\n"), 0o644))
	pipe := fifotest.New(t, dir, "pipe.jsonl")

	for _, tc := range []struct {
		path, want string
		overwrite  bool
	}{
		{link, link + " is a symbolic link, not a regular file", false},
		{link, link + " is a symbolic link, not a regular file", true},
		{pipe, pipe + " is a named pipe, not a regular file", true},
		{existing, existing + " already exists", false},
	} {
		args := append(oneCell, "-results", results, "-requests-out", tc.path)
		if tc.overwrite {
			args = append(args, "-overwrite")
		}
		type result struct {
			code   int
			stderr string
		}
		r := fifotest.Within(t, pipe, func() result { code, _, stderr := command(t, t.Context(), args...); return result{code, stderr} })
		assert.Equal(t, 2, r.code, r.stderr)
		assert.Contains(t, r.stderr, tc.want)
		assert.NoFileExists(t, results, "refused before the run")
	}
	b, _ := os.ReadFile(target)
	assert.Equal(t, "keep me", string(b), "the link's target is untouched")
	b, _ = os.ReadFile(existing)
	assert.Equal(t, "an earlier run's requests\n", string(b))

	code, _, stderr := command(t, t.Context(), append(oneCell, "-results", results, "-requests-out", existing, "-overwrite")...)
	require.Equal(t, 0, code, stderr)
	b, _ = os.ReadFile(existing)
	assert.NotContains(t, string(b), "an earlier run's requests", "replaced with -overwrite")
	assert.Contains(t, string(b), `"run":"0 × 1"`)
}

// Runs started in the same second in one directory each get a results
// file of their own, and a run says where its results go before it
// starts, even with -o and -quiet.
func TestDefaultResultsNeverCollide(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	// Other runs' files, named for this second and the next few.
	now := time.Now()
	for s := range 30 {
		name := "matrix-results-" + now.Add(time.Duration(s)*time.Second).Format("20060102-150405") + ".json"
		require.NoError(t, os.WriteFile(name, []byte("another run's"), 0o644))
	}
	code, _, stderr := command(t, t.Context(), append(oneCell, "-o", "report.txt")...)
	require.Equal(t, 0, code, stderr)
	m := regexp.MustCompile(`^matrix: the results go to (matrix-results-\d{8}-\d{6}-2\.json), saved after every cell\n`).FindStringSubmatch(stderr)
	require.NotNil(t, m, "the first line says where the results go: %q", stderr)
	assert.Contains(t, stderr, "results saved to "+m[1])
	r, err := matrix.LoadFile(m[1])
	require.NoError(t, err)
	assert.True(t, r.Complete)
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	for _, e := range entries {
		if e.Name() != m[1] && strings.HasPrefix(e.Name(), "matrix-results-") {
			b, _ := os.ReadFile(e.Name())
			assert.Equal(t, "another run's", string(b), e.Name())
		}
	}
}
