package matrix_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/shard"
)

// Runner.Validate refuses what Run refuses before sending anything, with
// the same error, sends nothing itself, and counts a Fleet's shards.
func TestRunnerValidateIsRunsCheck(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer srv.Close()
	bad := &matrix.Runner{Spec: matrix.Spec{URL: srv.URL + "/v1", Concurrency: []int{0, 40000}}}
	verr := bad.Validate()
	res, rerr := bad.Run(t.Context())
	assert.Nil(t, res)
	if assert.Error(t, verr) {
		assert.Equal(t, rerr.Error(), verr.Error())
		se, ok := errors.AsType[*loadgen.ConfigError](verr)
		assert.True(t, ok)
		assert.Equal(t, "Spec.Concurrency", se.Field)
	}
	sharded := &matrix.Runner{Spec: matrix.Spec{URL: srv.URL + "/v1", Concurrency: []int{40000}}, Fleet: &shard.Leader{Followers: 2}}
	assert.NoError(t, sharded.Validate(), "40000 over 3 shards is 13334 a shard")
	sharded.Fleet = &shard.Leader{Followers: 1}
	assert.ErrorContains(t, sharded.Validate(), "20000 a shard over 2 shards")
	assert.NoError(t, (&matrix.Runner{Spec: matrix.Spec{URL: srv.URL + "/v1"}}).Validate(), "the defaults are valid")
	assert.ErrorContains(t, (&matrix.Runner{Spec: matrix.Spec{URL: srv.URL + "/v1"}, GPUHourlyCost: 2}).Validate(), "GPUHourlyCost")
	assert.Zero(t, hits.Load(), "nothing sent")
}
