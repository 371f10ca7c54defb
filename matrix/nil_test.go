package matrix_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/report"
)

// TestNilIsRefused: writing a nil report (nil *Results or a nil
// *Comparison) or to a nil writer, reading from a nil reader and saving
// nil results are errors that are fs.ErrInvalid, not panics, and write
// nothing.
func TestNilIsRefused(t *testing.T) {
	formats := []report.Format{report.Table, report.Markdown, report.CSV, report.JSON, report.HTML, report.SeriesCSV, "yaml"}
	for _, f := range formats {
		for name, write := range map[string]func(io.Writer) error{
			"nil *Results":    func(w io.Writer) error { return report.Write(w, f, nil) },
			"nil *Comparison": func(w io.Writer) error { return (*report.Comparison)(nil).Write(w, f) },
		} {
			var b bytes.Buffer
			err := write(&b)
			require.ErrorIs(t, err, fs.ErrInvalid, "%s of %s", f, name)
			assert.Zero(t, b.Len(), "%s of %s", f, name)
		}
		require.ErrorIs(t, report.Write(nil, f, &matrix.Results{}), fs.ErrInvalid, "%s to a nil writer", f)
	}
	_, err := matrix.ReadResults(nil)
	require.ErrorIs(t, err, fs.ErrInvalid)

	path := filepath.Join(t.TempDir(), "results.json")
	require.ErrorIs(t, matrix.SaveFile(path, nil), fs.ErrInvalid)
	_, err = os.Stat(path)
	assert.True(t, errors.Is(err, fs.ErrNotExist), "nothing saved: %v", err)

	var none *matrix.Results
	assert.Nil(t, none.Cell(0, 1))
	require.ErrorIs(t, none.Measured(), matrix.ErrNothingMeasured)
}
