package metrics_test

import (
	"io/fs"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/metrics"
)

// TestRecordNil: recording a nil Timeline, or into a nil Recorder, is an
// error that is fs.ErrInvalid, not a panic, and counts nothing; observing
// a nil Timeline is ignored.
func TestRecordNil(t *testing.T) {
	var rec metrics.Recorder
	err := rec.Record(nil)
	require.ErrorIs(t, err, fs.ErrInvalid)
	assert.Contains(t, err.Error(), "nil *Timeline")
	assert.NotPanics(t, func() { rec.Observe(nil, time.Now(), 3) })
	assert.Zero(t, rec.Snapshot().Recorded)
	assert.Zero(t, rec.Recording(metrics.ScopeAll).Summary.OutputTokens)

	err = (*metrics.Recorder)(nil).Record(&metrics.Timeline{})
	require.ErrorIs(t, err, fs.ErrInvalid)
	assert.Contains(t, err.Error(), "nil *Recorder")

	now := time.Now()
	tl := &metrics.Timeline{Start: now, Sent: now}
	rec.Observe(tl, now.Add(time.Millisecond), 2)
	tl.End, tl.FinishReason, tl.Done = now.Add(2*time.Millisecond), "stop", true
	require.NoError(t, rec.Record(tl))
	assert.EqualValues(t, 1, rec.Snapshot().Recorded)
}
