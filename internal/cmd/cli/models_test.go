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
	for _, bad := range []string{"a=0", "a=-1", "a,a", ",", "a=1001"} {
		_, err := ParseModels(bad)
		assert.Error(t, err, bad)
	}
}

// TestParseModelsNames: a model name is the server's and may hold '=';
// only a trailing "=N", N a whole number, is a weight.
func TestParseModelsNames(t *testing.T) {
	for _, tc := range []struct {
		in      string
		names   []string // nil: one name, every request names it as given
		weights []int
	}{
		{in: ""},
		{in: "m"},
		{in: "a=b"},
		{in: "org/m=v2"},
		{in: "m=v2=x"},
		{in: "a=", names: nil},
		{in: "m=3", names: []string{"m"}, weights: []int{3}},
		{in: "org/m=v2=3", names: []string{"org/m=v2"}, weights: []int{3}},
		{in: "a=b,c", names: []string{"a=b", "c"}, weights: []int{1, 1}},
		{in: "org/m=v2=3, c=1", names: []string{"org/m=v2", "c"}, weights: []int{3, 1}},
		{in: "k=v=w,k=v", names: []string{"k=v=w", "k=v"}, weights: []int{1, 1}},
	} {
		m, err := ParseModels(tc.in)
		require.NoError(t, err, tc.in)
		if tc.names == nil {
			assert.Nil(t, m, tc.in)
			continue
		}
		require.NotNil(t, m, tc.in)
		assert.Equal(t, tc.names, m.Names, tc.in)
		assert.Equal(t, tc.weights, m.Weights, tc.in)
		again, err := ParseModels(m.String())
		require.NoError(t, err, m.String())
		assert.Equal(t, m, again, "String reads back: %s", m)
	}
	for _, bad := range []string{"m=0", "m=-1", "org/m=v2=0", "a=b,a=b", "a=b=1,a=b", "=3", "a=b,", "m=99999999999999999999"} {
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
