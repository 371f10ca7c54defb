package matrix_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/matrix"
)

// TestNilIsRefused: writing a nil report (nil, a nil *Results or a nil
// *Comparison) or to a nil writer, reading from a nil reader and saving
// nil results are errors that are fs.ErrInvalid, not panics, and write
// nothing.
func TestNilIsRefused(t *testing.T) {
	formats := []matrix.Format{matrix.FormatTable, matrix.FormatMarkdown, matrix.FormatCSV, matrix.FormatJSON, matrix.FormatHTML, matrix.FormatSeriesCSV, "yaml"}
	for _, f := range formats {
		for name, rep := range map[string]matrix.Report{"nil": nil, "nil *Results": (*matrix.Results)(nil), "nil *Comparison": (*matrix.Comparison)(nil)} {
			var b bytes.Buffer
			err := f.Write(&b, rep)
			require.ErrorIs(t, err, fs.ErrInvalid, "%s of %s", f, name)
			assert.Zero(t, b.Len(), "%s of %s", f, name)
		}
		require.ErrorIs(t, f.Write(nil, &matrix.Results{}), fs.ErrInvalid, "%s to a nil writer", f)
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
