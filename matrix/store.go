package matrix

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"

	"github.com/llmload/llmload/internal/safefile"
)

// SaveFile writes r to path as JSON, atomically: it writes a temporary file
// beside it and renames it into place, so a crash or an interruption never
// leaves a half-written file. A path that names anything but a regular
// file (a symbolic link, a named pipe) is refused and left as it is. Nil
// results are refused, with an error that is [fs.ErrInvalid], and nothing
// is written.
func SaveFile(path string, r *Results) error {
	if r == nil {
		return fmt.Errorf("matrix: save results: the results are nil: %w", fs.ErrInvalid)
	}
	if err := safefile.Write(path, r.writeJSON); err != nil {
		return fmt.Errorf("matrix: save results: %w", err)
	}
	return nil
}

// LoadFile reads results saved by SaveFile. A path that names anything
// but a regular file (a named pipe) is refused at once.
func LoadFile(path string) (*Results, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(f) // json.Decoder would hold it all anyway
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	r, err := ReadResults(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
