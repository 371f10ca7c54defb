package matrixcmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/llmload/llmload/internal/cmd/cli"
	"github.com/llmload/llmload/internal/safefile"
	"github.com/llmload/llmload/matrix"
)

// ClaimResults makes the results file at path (-results) this run's
// before anything is sent: it must be a regular file or nothing; an
// existing one must be the file being resumed (-resume), or overwrite
// (-overwrite) given; and it is locked against another run for as long
// as this one runs (the function returned unlocks it).
func ClaimResults(path, resume string, overwrite bool) (func(), error) {
	err := safefile.CheckOutput(path, overwrite || (resume != "" && cli.SameFile(path, resume)))
	if nr, ok := errors.AsType[*safefile.NotRegularError](err); ok {
		return nil, fmt.Errorf("-results %s is not a regular file (%s): it is left as it is; give another path", path, nr.Mode.Type())
	}
	if ex, ok := errors.AsType[*safefile.ExistsError](err); ok {
		return nil, fmt.Errorf("-results %s holds another run's results (saved %s): give another file, finish that run with -resume %s, or replace it with -overwrite",
			path, ex.ModTime.Format(time.DateTime), path)
	}
	if err != nil {
		return nil, fmt.Errorf("-results %s: %w", path, err)
	}
	unlock, err := lockFile(lockPath(path))
	if _, ok := errors.AsType[*safefile.NotRegularError](err); ok {
		return nil, fmt.Errorf("-results %s: its lock file %w", path, err)
	}
	if _, ok := errors.AsType[*fs.PathError](err); ok { // no directory, no permission
		return nil, fmt.Errorf("-results %s: %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("-results %s is another run's, which is still running (%v): give another file", path, err)
	}
	return unlock, nil
}

// maxNewResults bounds the names ClaimNewResults tries in one second.
const maxNewResults = 1000

// ClaimNewResults claims, as [ClaimResults] does, a new results file in
// the working directory for a run started at now, when no -results was
// given: matrix-results-YYYYMMDD-HHMMSS.json, or -2, -3, … before .json
// when other runs started in the same second. A name is taken by creating
// its file, empty, only where there is none (O_EXCL), so no two runs
// take the same one. The function returned removes the file while it is
// still empty (the run saved nothing), and unlocks it.
func ClaimNewResults(now time.Time) (string, func(), error) {
	base := "matrix-results-" + now.Format("20060102-150405")
	var err error
	for n := 1; n <= maxNewResults; n++ {
		path := base + ".json"
		if n > 1 {
			path = fmt.Sprintf("%s-%d.json", base, n)
		}
		var f *os.File
		f, err = safefile.Create(path, false)
		_, taken := errors.AsType[*safefile.ExistsError](err)
		_, other := errors.AsType[*safefile.NotRegularError](err)
		if taken || other {
			continue
		}
		if err != nil {
			break
		}
		f.Close()
		unlock, err := ClaimResults(path, "", true)
		if err != nil {
			os.Remove(path)
			return "", nil, err
		}
		return path, func() {
			if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
				os.Remove(path)
			}
			unlock()
		}, nil
	}
	return "", nil, fmt.Errorf("no new results file in the working directory: %w; give one with -results", err)
}

// lockPath is the lock file of a results file: beside it, hidden.
func lockPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".lock")
}

// CheckResume refuses flags of the spec given that disagree with the run
// r being resumed (set holds the flags given): -resume finishes that run
// as it was planned.
func CheckResume(given matrix.Spec, r *matrix.Results, set map[string]bool) error {
	saved := r.Spec.WithDefaults() // a file may omit a default; the flags give every one
	for _, f := range []struct {
		flag string
		same bool
		was  any
	}{
		{"concurrency", slices.Equal(given.Concurrency, saved.Concurrency), saved.Concurrency},
		{"contexts", slices.Equal(given.Contexts, saved.Contexts), saved.Contexts},
		{"prefill", slices.Equal(given.Prefill, saved.Prefill), saved.Prefill},
		{"duration", given.Duration == saved.Duration, saved.Duration},
		{"max-tokens", given.MaxTokens == saved.MaxTokens, saved.MaxTokens},
		{"model", given.Model == "" || given.Model == saved.Model, saved.Model},
	} {
		if set[f.flag] && !f.same {
			return fmt.Errorf("-resume finishes the run as it was planned (-%s %v); drop -%s, or start a new run", f.flag, f.was, f.flag)
		}
	}
	return nil
}
