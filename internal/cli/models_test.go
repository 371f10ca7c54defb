package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseModels(t *testing.T) {
	m, err := ParseModels("just-one")
	require.NoError(t, err)
	assert.Nil(t, m)
	m, err = ParseModels("a=3, b")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, m.Names)
	assert.Equal(t, []int{3, 1}, m.Weights)
	assert.Equal(t, "a=3,b=1", m.String())
	for _, bad := range []string{"a=0", "a=-1", "a=x", "a,a", ",", "a=1001"} {
		_, err := ParseModels(bad)
		assert.Error(t, err, bad)
	}
}

// TestModelCycle: every stretch of a cycle's length holds each model as
// often as its weight, interleaved, from any seed.
func TestModelCycle(t *testing.T) {
	m := &Models{Names: []string{"a", "b", "c"}, Weights: []int{5, 2, 1}}
	for seed := range uint64(8) {
		c := m.Cycle(seed)
		require.Len(t, c, 8)
		twice := append(append([]string{}, c...), c...)
		for start := range 8 {
			n := map[string]int{}
			for _, name := range twice[start : start+8] {
				n[name]++
			}
			assert.Equal(t, map[string]int{"a": 5, "b": 2, "c": 1}, n)
		}
	}
	// Smooth: the heaviest model never runs more than twice in a row,
	// where a plain weighted round robin sends it five times running.
	c := m.Cycle(0)
	run, longest := 0, 0
	for _, name := range append(c, c...) {
		if name == "a" {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	assert.Equal(t, 2, longest, "%v", c)
}
