package matrixcmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/llmload/llmload/internal/cli"
	"github.com/llmload/llmload/matrix"
)

// ClaimResults makes the results file at path (-results) this run's
// before anything is sent: it must be a regular file or nothing; an
// existing one must be the file being resumed (-resume), or overwrite
// (-overwrite) given; and it is locked against another run for as long
// as this one runs (the function returned unlocks it).
func ClaimResults(path, resume string, overwrite bool) (func(), error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("-results %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("-results %s is not a regular file (%s): it is left as it is; give another path", path, fi.Mode().Type())
	case resume != "" && cli.SameFile(path, resume):
	case !overwrite:
		return nil, fmt.Errorf("-results %s holds another run's results (saved %s): give another file, finish that run with -resume %s, or replace it with -overwrite",
			path, fi.ModTime().Format(time.DateTime), path)
	}
	unlock, err := lockFile(lockPath(path))
	if err != nil {
		return nil, fmt.Errorf("-results %s is another run's, which is still running (%v): give another file", path, err)
	}
	return unlock, nil
}

// lockPath is the lock file of a results file: beside it, hidden.
func lockPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".lock")
}

// CheckResume refuses flags of the spec given that disagree with the run
// r being resumed (set holds the flags given): -resume finishes that run
// as it was planned.
func CheckResume(given matrix.Spec, r *matrix.Results, set map[string]bool) error {
	saved := r.Spec.WithDefaults()
	given = given.WithDefaults()
	for _, f := range []struct {
		flag string
		same bool
		was  any
	}{
		{"concurrency", slices.Equal(given.Concurrency, saved.Concurrency), saved.Concurrency},
		{"contexts", slices.Equal(given.Contexts, saved.Contexts), saved.Contexts},
		{"prefill", slices.Equal(given.Prefill, saved.Prefill), saved.Prefill},
		{"duration", given.Duration == saved.Duration, time.Duration(saved.Duration)},
		{"max-tokens", given.MaxTokens == saved.MaxTokens, saved.MaxTokens},
		{"model", given.Model == "" || given.Model == saved.Model, saved.Model},
	} {
		if set[f.flag] && !f.same {
			return fmt.Errorf("-resume finishes the run as it was planned (-%s %v); drop -%s, or start a new run", f.flag, f.was, f.flag)
		}
	}
	return nil
}
