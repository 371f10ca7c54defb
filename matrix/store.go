package matrix

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	var buf bytes.Buffer
	if err := r.writeJSON(&buf); err != nil {
		return err
	}
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("matrix: save results: %s is a %s, not a regular file: it is left as it is; give another path", path, fileKind(fi.Mode()))
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("matrix: save results: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("matrix: save results: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("matrix: save results: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("matrix: save results: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("matrix: save results: %w", err)
	}
	return nil
}

// LoadFile reads results saved by SaveFile.
func LoadFile(path string) (*Results, error) {
	b, err := os.ReadFile(path) // json.Decoder would hold it all anyway
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	r, err := ReadResults(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// fileKind names the kind of a file that is not a regular one.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "symbolic link"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m.IsDir():
		return "directory"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
