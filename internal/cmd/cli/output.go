package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/llmload/llmload/internal/safefile"
)

// WriteOutput calls write with stdout when path is empty, else writes
// the file at path (-o) whole or not at all, as [safefile.Write] does: an
// error part way leaves the earlier file as it was.
func WriteOutput(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "" {
		return write(stdout)
	}
	if err := safefile.Write(path, write); err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	return nil
}

// CheckOutput refuses, before anything runs, the path given to the
// output flag name (-o, -requests-out): one in no directory, one that
// names anything but a regular file, and, unless replace, an existing
// file. An empty path is no output.
func CheckOutput(name, path string, replace bool) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return fmt.Errorf("-%s %s: %s is not a directory that exists", name, path, filepath.Dir(path))
	}
	err := safefile.CheckOutput(path, replace)
	if _, ok := errors.AsType[*safefile.ExistsError](err); ok {
		return fmt.Errorf("-%s %w: give another file, or replace it with -overwrite", name, err)
	}
	if err != nil {
		return fmt.Errorf("-%s: %w", name, err)
	}
	return nil
}

// A FileFlag is a flag that names a file, and the path it was given.
type FileFlag struct{ Name, Path string }

// Distinct refuses, before anything runs, an output that is the same
// file as another output or as one of others (the files a command reads,
// or writes itself): writing it would destroy what is read. The error
// names both flags. Flags given no path are left out.
func Distinct(outputs []FileFlag, others ...FileFlag) error {
	for i, out := range outputs {
		if out.Path == "" {
			continue
		}
		for _, other := range slices.Concat(outputs[i+1:], others) {
			if other.Path != "" && SameFile(out.Path, other.Path) {
				return fmt.Errorf("-%s %s is the file given to -%s: writing it would destroy that; give another file", out.Name, out.Path, other.Name)
			}
		}
	}
	return nil
}

// SameFile reports whether two paths name the same file: by
// [os.SameFile] where both exist, else by their cleaned absolute paths.
func SameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(fa, fb)
	}
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	if errA != nil || errB != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return absA == absB
}
