package sweep_test

import (
	"bytes"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/sweep"
)

// TestNilIsRefused: a nil target, results, writer, reader, Sweep or
// Search is an error that is fs.ErrInvalid, as a nil load already is an
// error, not a panic; nothing is written.
func TestNilIsRefused(t *testing.T) {
	res, err := sweep.Run(t.Context(), nil, loadgen.Closed{Streams: 1}, "one", sweep.Objective{})
	require.ErrorIs(t, err, fs.ErrInvalid)
	assert.Contains(t, err.Error(), "target is nil")
	assert.Equal(t, "one", res.Label)

	for _, format := range []string{"", "table", "json", "html", "series-csv", "yaml"} {
		var b bytes.Buffer
		err := (*sweep.Results)(nil).Write(&b, format)
		require.ErrorIs(t, err, fs.ErrInvalid, "format %q", format)
		assert.Zero(t, b.Len(), "format %q", format)
		err = (&sweep.Results{}).Write(nil, format)
		require.ErrorIs(t, err, fs.ErrInvalid, "format %q", format)
	}
	_, err = sweep.ReadResults(nil)
	require.ErrorIs(t, err, fs.ErrInvalid)

	got, err := (*sweep.Sweep)(nil).Run(t.Context())
	require.ErrorIs(t, err, fs.ErrInvalid)
	require.NotNil(t, got, "results, though empty, as on every error")
	assert.Empty(t, got.Runs)
	got, err = (*sweep.Search)(nil).Run(t.Context())
	require.ErrorIs(t, err, fs.ErrInvalid)
	require.NotNil(t, got)
}
