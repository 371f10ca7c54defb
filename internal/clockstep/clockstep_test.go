package clockstep

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWall(t *testing.T) {
	at := time.Now()
	s, ok := Wall(at, -78*time.Second)
	require.True(t, ok)
	assert.Equal(t, time.Duration(0), s.Sub(at), "the monotonic clock did not move")
	assert.Equal(t, int64(-78*time.Second), s.UnixNano()-at.UnixNano(), "the wall clock did")
	_, ok = Wall(at.Round(0), time.Second)
	assert.False(t, ok, "a time without a monotonic reading cannot be stepped apart from it")
}
