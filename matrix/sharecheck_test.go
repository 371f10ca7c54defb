package matrix

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSpecConcurrencyAShard: a sharded run may ask for MaxConcurrency a
// shard, its streams split as evenly as possible, and no more; any number
// of shards is checked without building the split.
func TestSpecConcurrencyAShard(t *testing.T) {
	spec := Spec{URL: "http://127.0.0.1:8000/v1", Concurrency: []int{2 * MaxConcurrency}}
	require.Error(t, spec.Validate(), "one process")
	assert.NoError(t, spec.validateSharded(2))
	spec.Concurrency = []int{2*MaxConcurrency + 1}
	err := spec.validateSharded(2)
	se, isSpec := errors.AsType[*SpecError](err)
	require.True(t, isSpec, "%v", err)
	assert.Equal(t, "Concurrency", se.Field)
	assert.Contains(t, err.Error(), "holds 32769, 16385 a shard over 2 shards, above 16384")
	assert.NoError(t, spec.validateSharded(3))
	assert.Equal(t, spec.Validate(), spec.validateSharded(0), "no shards is one process")
	assert.NoError(t, spec.validateSharded(math.MaxInt), "9223372036854775807 shards: checked, not split")
}
