package safefile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/fifotest"
	"github.com/llmload/llmload/internal/safefile"
)

// An input that is a named pipe, a directory or missing is refused at
// once; a symbolic link to a regular file is read through.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	pipe := fifotest.New(t, dir, "pipe.json")
	err := fifotest.Within(t, pipe, func() error { _, err := safefile.Open(pipe); return err })
	nr, ok := errors.AsType[*safefile.NotRegularError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, pipe, nr.Path)
	assert.ErrorContains(t, err, "is a named pipe, not a regular file")

	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	err = fifotest.Within(t, pipe, func() error { _, err := safefile.OpenIn(root, "pipe.json"); return err })
	assert.ErrorContains(t, err, "pipe.json is a named pipe, not a regular file")

	_, err = safefile.Open(dir)
	assert.ErrorContains(t, err, "is a directory, not a regular file")
	_, err = safefile.Open(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	file := filepath.Join(dir, "f.json")
	require.NoError(t, os.WriteFile(file, []byte("{}"), 0o644))
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink(file, link))
	f, err := safefile.Open(link)
	require.NoError(t, err)
	b, err := io.ReadAll(f)
	f.Close()
	require.NoError(t, err)
	assert.Equal(t, "{}", string(b))
}

// Create refuses a symbolic link, a named pipe (at once) and, unless
// asked to replace it, an existing file, each left as it was.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious.txt")
	require.NoError(t, os.WriteFile(target, []byte("keep me"), 0o644))
	link := filepath.Join(dir, "link.jsonl")
	require.NoError(t, os.Symlink(target, link))
	pipe := fifotest.New(t, dir, "pipe.jsonl")

	for _, replace := range []bool{false, true} {
		_, err := safefile.Create(link, replace)
		assert.ErrorContains(t, err, "is a symbolic link, not a regular file")
		err = fifotest.Within(t, pipe, func() error { _, err := safefile.Create(pipe, replace); return err })
		assert.ErrorContains(t, err, "is a named pipe, not a regular file")
		err = fifotest.Within(t, pipe, func() error { _, err := safefile.Append(pipe); return err })
		assert.ErrorContains(t, err, "is a named pipe, not a regular file")
	}
	_, err := safefile.Create(target, false)
	_, ok := errors.AsType[*safefile.ExistsError](err)
	assert.True(t, ok, "%v", err)
	b, _ := os.ReadFile(target)
	assert.Equal(t, "keep me", string(b))

	f, err := safefile.Create(target, true)
	require.NoError(t, err)
	_, err = f.WriteString("new")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	b, _ = os.ReadFile(target)
	assert.Equal(t, "new", string(b), "replaced when asked, emptied first")

	f, err = safefile.Append(target)
	require.NoError(t, err)
	_, err = f.WriteString("+more")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	b, _ = os.ReadFile(target)
	assert.Equal(t, "new+more", string(b))
}

// Write replaces a file whole or not at all: an error part way leaves the
// earlier file as it was and no temporary file behind.
func TestWriteWholeOrNotAtAll(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	require.NoError(t, os.WriteFile(path, []byte("the earlier report"), 0o640))
	err := safefile.Write(path, func(w io.Writer) error {
		io.WriteString(w, "half a rep")
		return errors.New("disk full")
	})
	assert.EqualError(t, err, "disk full")
	b, _ := os.ReadFile(path)
	assert.Equal(t, "the earlier report", string(b))
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1, "no temporary file left")

	require.NoError(t, safefile.Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }))
	b, _ = os.ReadFile(path)
	assert.Equal(t, "new", string(b))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "the file's permissions are kept")

	pipe := fifotest.New(t, dir, "pipe.html")
	err = safefile.Write(pipe, func(io.Writer) error { return nil })
	assert.ErrorContains(t, err, "is a named pipe, not a regular file")
	fi, err = os.Lstat(pipe)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeNamedPipe, "the pipe is left as it is")
}
