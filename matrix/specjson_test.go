package matrix

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSpecDurationsInJSON: a spec's durations are time.Duration in Go and
// text in JSON ("30s"), written and read back as they were, and text in
// any other form is refused.
func TestSpecDurationsInJSON(t *testing.T) {
	spec := Spec{URL: "http://x/v1", Duration: 30 * time.Second, Series: 500 * time.Millisecond,
		WarmupRule: &WarmupRule{Min: 2 * time.Second, Flow: 3 * time.Second, Timeout: time.Minute, PerContextK: time.Second}}
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"duration":"30s"`)
	assert.Contains(t, string(b), `"series":"500ms"`)
	assert.Contains(t, string(b), `"warmup":{"min":"2s","flow":"3s","timeout":"1m0s","per_context_k":"1s"}`)
	var back Spec
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, spec, back)
	assert.Error(t, json.Unmarshal([]byte(`{"duration":30}`), &back))
	assert.Error(t, json.Unmarshal([]byte(`{"warmup":{"min":"soon"}}`), &back))
}

// TestSpecJSONHasEveryField: the JSON form of a spec holds every field of
// Spec, by name and in order, so a field added to one is not lost by the
// other.
func TestSpecJSONHasEveryField(t *testing.T) {
	names := func(v any) []string {
		var n []string
		for f := range reflect.TypeOf(v).Fields() {
			n = append(n, f.Name)
		}
		return n
	}
	assert.Equal(t, names(Spec{}), names(specJSON{}))
	assert.Equal(t, names(WarmupRule{}), names(warmupRuleJSON{}))
}
