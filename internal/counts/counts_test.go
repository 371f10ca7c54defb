package counts_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/internal/counts"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAdd(t *testing.T) {
	assert.Nil(t, counts.Add[string](nil, nil), "nothing to add: no map")
	assert.Nil(t, counts.Add(nil, map[string]int{"timeout": 0}), "a zero count adds no key")
	got := counts.Add(nil, map[string]int{"timeout": 2})
	assert.Equal(t, map[string]int{"timeout": 2}, got)
	got = counts.Add(got, map[string]int{"timeout": 1, "status": 3})
	assert.Equal(t, map[string]int{"timeout": 3, "status": 3}, got)
}
