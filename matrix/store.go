package matrix

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// SaveFile writes r to path as JSON, atomically: it writes a temporary file
// beside it and renames it into place, so a crash or an interruption never
// leaves a half-written file.
func SaveFile(path string, r *Results) error {
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		return err
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
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	defer f.Close()
	r, err := ReadResults(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
