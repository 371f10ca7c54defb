package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/fifotest"
	"github.com/llmload/llmload/loadgen/sweep"
)

// tiny is a run of a few requests against the simulator, at once.
var tiny = append(append([]string{}, quick...), "-requests", "12", "-warmup", "0", "-quiet")

// limitFileSize makes writing past n bytes of a file fail, as a full
// disk does, until the test ends: the kernel's RLIMIT_FSIZE (Go ignores
// the SIGXFSZ it sends, so the write returns EFBIG).
func limitFileSize(t *testing.T, n uint64) {
	t.Helper()
	var was syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &was))
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: was.Max}))
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_FSIZE, &was) })
}

// A -requests-out file that cannot be written loses nothing of the
// report: it is printed whole, and the failure said after it, with
// status 1.
func TestRequestsOutFailureKeepsTheReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	limitFileSize(t, 2000) // a few lines
	code, out, errOut := bench(t, append(tiny, "-format", "json", "-requests-out", path)...)
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "-requests-out: ")
	assert.Contains(t, errOut, "file too large")
	assert.Contains(t, errOut, "the report is whole")
	res, err := sweep.ReadResults(strings.NewReader(out))
	require.NoError(t, err, "the report is printed: %q", out)
	require.Len(t, res.Runs, 1)
	assert.Equal(t, 12, res.Runs[0].Summary.Completed)
}

// -o replaces an earlier report whole or not at all: a write that fails
// part way (a full disk) leaves the earlier report as it was, and no
// temporary file.
func TestOutputReplacedWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	earlier := strings.Repeat("the earlier report\n", 10)
	require.NoError(t, os.WriteFile(path, []byte(earlier), 0o644))
	limitFileSize(t, 1000) // a JSON report is tens of KB
	code, _, errOut := bench(t, append(tiny, "-format", "json", "-o", path)...)
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "-o: ")
	assert.Contains(t, errOut, "file too large")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, earlier, string(b), "the earlier report is left whole")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left")
}

// An output given the path of an input (-dataset, -trace, -body-extra,
// -tools, -response-format) or of the other output would destroy it: it
// is refused before anything runs, naming both flags, however the path
// is spelt.
func TestOutputIsNotAnInput(t *testing.T) {
	dir := t.TempDir()
	dataset, err := os.ReadFile("../../loadgen/workload/testdata/sharegpt.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d.json"), dataset, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "extra.json"), []byte(`{"top_k": 5}`), 0o644))
	tools, err := os.ReadFile("testdata/tools.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tools.json"), tools, 0o644))
	t.Chdir(dir)
	abs := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct {
		args       []string
		out, input string
	}{
		{[]string{"-dataset", "d.json", "-requests-out", "d.json"}, "-requests-out", "-dataset"},
		{[]string{"-dataset", "d.json", "-o", abs("d.json")}, "-o", "-dataset"},
		{[]string{"-dataset", "./d.json", "-o", "sub/../d.json"}, "-o", "-dataset"},
		{[]string{"-body-extra", "extra.json", "-requests-out", abs("extra.json")}, "-requests-out", "-body-extra"},
		{[]string{"-body-extra", abs("extra.json"), "-o", "extra.json"}, "-o", "-body-extra"},
		{[]string{"-tools", "tools.json", "-o", "tools.json"}, "-o", "-tools"},
		{[]string{"-o", "new.json", "-requests-out", abs("new.json")}, "-o", "-requests-out"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			start := time.Now()
			code, out, errOut := bench(t, append(tiny, tc.args...)...)
			assert.Equal(t, 2, code, errOut)
			assert.Contains(t, errOut, tc.out+" ")
			assert.Contains(t, errOut, "is the file given to "+tc.input)
			assert.Empty(t, out)
			assert.Less(t, time.Since(start), 5*time.Second, "refused before anything runs")
		})
	}
	b, _ := os.ReadFile("d.json")
	assert.Equal(t, dataset, b, "the dataset is untouched")
	b, _ = os.ReadFile("extra.json")
	assert.Equal(t, `{"top_k": 5}`, string(b))
	b, _ = os.ReadFile("tools.json")
	assert.Equal(t, tools, b)
	assert.NoFileExists(t, "new.json")
}

// -requests-out never follows a symbolic link, and replaces an existing
// file only with -overwrite.
func TestRequestsOutNeverClobbers(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious.txt")
	require.NoError(t, os.WriteFile(target, []byte("keep me"), 0o644))
	link := filepath.Join(dir, "link.jsonl")
	require.NoError(t, os.Symlink(target, link))
	existing := filepath.Join(dir, "earlier.jsonl")
	require.NoError(t, os.WriteFile(existing, []byte("an earlier run's requests\n"), 0o644))

	code, _, errOut := bench(t, append(tiny, "-requests-out", link)...)
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "-requests-out: "+link+" is a symbolic link, not a regular file")
	code, _, errOut = bench(t, append(tiny, "-requests-out", link, "-overwrite")...)
	assert.Equal(t, 2, code, "-overwrite replaces a file, never what a link points to: %s", errOut)
	b, _ := os.ReadFile(target)
	assert.Equal(t, "keep me", string(b), "the link's target is untouched")

	code, _, errOut = bench(t, append(tiny, "-requests-out", existing)...)
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "-requests-out "+existing+" already exists")
	assert.Contains(t, errOut, "replace it with -overwrite")
	b, _ = os.ReadFile(existing)
	assert.Equal(t, "an earlier run's requests\n", string(b))

	code, _, errOut = bench(t, append(tiny, "-requests-out", existing, "-overwrite")...)
	require.Equal(t, 0, code, errOut)
	assert.Len(t, readRequests(t, existing), 12, "replaced with this run's requests")
}

// A named pipe given as a file to read or write is refused at once, with
// status 2: opening it would wait for its other end for ever, where
// SIGTERM cannot end the wait.
func TestNamedPipesRefused(t *testing.T) {
	dir := t.TempDir()
	for _, flag := range []string{"-requests-out", "-o", "-body-extra", "-tools", "-response-format", "-dataset", "-trace"} {
		t.Run(flag, func(t *testing.T) {
			pipe := fifotest.New(t, dir, strings.TrimPrefix(flag, "-")+".pipe")
			args := append(tiny, flag, pipe)
			if flag == "-trace" {
				args = []string{"-trace", pipe, "-quiet"}
			}
			type result struct {
				code   int
				stderr string
			}
			r := fifotest.Within(t, pipe, func() result { code, _, errOut := bench(t, args...); return result{code, errOut} })
			assert.Equal(t, 2, r.code, r.stderr)
			assert.Contains(t, r.stderr, pipe+" is a named pipe, not a regular file")
			if flag != "-dataset" && flag != "-trace" {
				assert.Contains(t, r.stderr, flag+":")
			}
		})
	}
}

// An output in a directory that does not exist is refused before the
// run, which would otherwise be measured for nothing.
func TestOutputDirectoryMissing(t *testing.T) {
	for _, flag := range []string{"-o", "-requests-out"} {
		path := filepath.Join(t.TempDir(), "no", "such", "report.json")
		start := time.Now()
		code, out, errOut := bench(t, append(tiny, "-duration", "30s", "-requests", "0", flag, path)...)
		assert.Equal(t, 2, code, errOut)
		assert.Contains(t, errOut, flag+" "+path+": "+filepath.Dir(path)+" is not a directory that exists")
		assert.Empty(t, out)
		assert.Less(t, time.Since(start), 5*time.Second, "refused before the run")
	}
}
