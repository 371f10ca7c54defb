package sleep_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/internal/sleep"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFor(t *testing.T) {
	start := time.Now()
	assert.True(t, sleep.For(t.Context(), 20*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond, "it waited")

	assert.True(t, sleep.For(t.Context(), 0), "nothing to wait for, the context live")
	assert.True(t, sleep.For(t.Context(), -time.Second))

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	start = time.Now()
	assert.False(t, sleep.For(ctx, time.Hour), "an ended context ends the wait")
	assert.Less(t, time.Since(start), time.Minute)
	assert.False(t, sleep.For(ctx, 0))
}

func TestUntil(t *testing.T) {
	at := time.Now().Add(20 * time.Millisecond)
	assert.True(t, sleep.Until(t.Context(), at))
	assert.False(t, time.Now().Before(at), "it waited until then")
	assert.True(t, sleep.Until(t.Context(), time.Now().Add(-time.Hour)), "a time gone by: no wait")

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	assert.False(t, sleep.Until(ctx, time.Now().Add(time.Hour)), "the context ended first")
}
