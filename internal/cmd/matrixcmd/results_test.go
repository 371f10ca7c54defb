package matrixcmd_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/cmd/matrixcmd"
	"github.com/llmload/llmload/matrix"
)

// Runs that start in the same second each claim a results file of their
// own; a run that saved nothing leaves no empty file behind, and one
// that saved keeps its file.
func TestClaimNewResults(t *testing.T) {
	t.Chdir(t.TempDir())
	now := time.Date(2026, 12, 7, 21, 30, 5, 0, time.UTC)
	first, unlockFirst, err := matrixcmd.ClaimNewResults(now)
	require.NoError(t, err)
	second, unlockSecond, err := matrixcmd.ClaimNewResults(now)
	require.NoError(t, err)
	assert.Equal(t, "matrix-results-20261207-213005.json", first)
	assert.Equal(t, "matrix-results-20261207-213005-2.json", second)

	require.NoError(t, matrix.SaveFile(second, &matrix.Results{Schema: matrix.Schema}))
	unlockFirst()
	unlockSecond()
	assert.NoFileExists(t, first, "nothing saved, nothing left")
	assert.FileExists(t, second)

	third, unlock, err := matrixcmd.ClaimNewResults(now)
	require.NoError(t, err)
	defer unlock()
	assert.Equal(t, first, third, "a name freed is taken again")
	_, err = os.Stat(second)
	assert.NoError(t, err)
}

// A results file in a directory that does not exist is refused for
// that, not as another run's.
func TestClaimResultsNoDirectory(t *testing.T) {
	_, err := matrixcmd.ClaimResults(t.TempDir()+"/no/such/r.json", "", false)
	assert.ErrorContains(t, err, "no such file or directory")
	assert.NotContains(t, err.Error(), "another run's")
}
