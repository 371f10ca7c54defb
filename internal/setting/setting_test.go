package setting_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/internal/setting"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestResolve(t *testing.T) {
	assert.Equal(t, 3, setting.Resolve(0, 3), "zero: the default")
	assert.Equal(t, 0, setting.Resolve(-1, 3), "negative: none")
	assert.Equal(t, 7, setting.Resolve(7, 3), "set: itself")
	assert.Equal(t, time.Second, setting.Resolve(time.Duration(0), time.Second))
	assert.Equal(t, time.Duration(0), setting.Resolve(-time.Millisecond, time.Second))
	assert.Equal(t, 2*time.Second, setting.Resolve(2*time.Second, time.Second))
}
