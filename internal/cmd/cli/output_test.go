package cli_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/cmd/cli"
	"github.com/llmload/llmload/internal/harness/fifotest"
	"github.com/llmload/llmload/loadgen"
)

// -o replaces the file at its path whole or not at all: a write that
// fails part way leaves the earlier report, and no temporary file.
func TestWriteOutputWholeOrNotAtAll(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.txt")
	require.NoError(t, os.WriteFile(path, []byte("the earlier report"), 0o644))
	err := cli.WriteOutput(path, nil, func(w io.Writer) error {
		io.WriteString(w, "half a rep")
		return errors.New("no space left on device")
	})
	assert.EqualError(t, err, "-o: no space left on device")
	b, _ := os.ReadFile(path)
	assert.Equal(t, "the earlier report", string(b))
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1, "no temporary file left")

	require.NoError(t, cli.WriteOutput(path, nil, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }))
	b, _ = os.ReadFile(path)
	assert.Equal(t, "new", string(b))

	var stdout bytes.Buffer
	require.NoError(t, cli.WriteOutput("", &stdout, func(w io.Writer) error { _, err := io.WriteString(w, "out"); return err }))
	assert.Equal(t, "out", stdout.String())
}

// Distinct finds an output that is an input by the file, or by the
// cleaned absolute path where there is no file yet, and names both flags.
func TestDistinct(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.WriteFile("in.json", []byte("{}"), 0o644))
	require.NoError(t, os.Symlink("in.json", "link.json"))
	for _, tc := range []struct {
		out, in string
		same    bool
	}{
		{"in.json", "in.json", true},
		{filepath.Join(dir, "in.json"), "./in.json", true},
		{"link.json", "in.json", true},
		{"new.json", "x/../new.json", true},
		{"new.json", filepath.Join(dir, "new.json"), true},
		{"new.json", "in.json", false},
		{"", "", false},
	} {
		err := cli.Distinct([]cli.FileFlag{{Name: "o", Path: tc.out}}, cli.FileFlag{Name: "dataset", Path: "other.json"}, cli.FileFlag{Name: "body-extra", Path: tc.in})
		if tc.same {
			assert.EqualError(t, err, "-o "+tc.out+" is the file given to -body-extra: writing it would destroy that; give another file", "%s, %s", tc.out, tc.in)
		} else {
			assert.NoError(t, err, "%s, %s", tc.out, tc.in)
		}
	}
	err := cli.Distinct([]cli.FileFlag{{Name: "o", Path: "a.json"}, {Name: "requests-out", Path: "./a.json"}})
	assert.ErrorContains(t, err, "-o a.json is the file given to -requests-out")
}

// A named pipe given to -body-extra, -tools or -response-format is
// refused at once, naming the flag, instead of blocking in open(2).
func TestBodyFlagsNamedPipe(t *testing.T) {
	dir := t.TempDir()
	for _, flag := range []string{"body-extra", "tools", "response-format"} {
		pipe := fifotest.New(t, dir, flag)
		f := cli.BodyFlags{}
		switch flag {
		case "body-extra":
			f.BodyExtra = pipe
		case "tools":
			f.Tools = pipe
		default:
			f.ResponseFormat = pipe
		}
		err := fifotest.Within(t, pipe, func() error { _, err := f.Extra(loadgen.Chat); return err })
		assert.EqualError(t, err, "-"+flag+": "+pipe+" is a named pipe, not a regular file: it is left as it is; give a regular file")
	}
}
