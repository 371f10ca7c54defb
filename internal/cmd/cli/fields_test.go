package cli_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/llmload/llmload/internal/cmd/cli"
	"github.com/llmload/llmload/internal/errlist"
	"github.com/llmload/llmload/loadgen"
)

// A table of fields rewrites a library's ConfigErrors to name the flags,
// an indexed field by its flag, every error of a list, and leaves the
// others as they are; errors.As still finds the ConfigError.
func TestFieldsError(t *testing.T) {
	f := cli.Fields{"Benchmark.Concurrency": "-concurrency", "Benchmark.Objective": "-slo-quantile"}
	level := &loadgen.ConfigError{Field: "Benchmark.Concurrency[1]", Reason: "is 0: give 1 to 16384 streams"}
	err := f.Error(level)
	assert.EqualError(t, err, "-concurrency 0: give 1 to 16384 streams")
	ce, ok := errors.AsType[*loadgen.ConfigError](err)
	assert.True(t, ok)
	assert.Same(t, level, ce)

	var list errlist.List
	list.Add(&loadgen.ConfigError{Field: "Benchmark.Objective", Reason: "has the quantile 2: give a share from 0 to 1"})
	list.Add(level)
	other := &loadgen.ConfigError{Field: "Benchmark.Sweep", Reason: "is 0"}
	list.Add(other)
	assert.EqualError(t, f.Error(list), "-slo-quantile: has the quantile 2: give a share from 0 to 1; -concurrency 0: give 1 to 16384 streams; loadgen: Benchmark.Sweep is 0")

	assert.Same(t, other, f.Error(other), "a field in no entry")
	plain := errors.New("loadgen: Benchmark.Concurrency is 0")
	assert.Equal(t, plain, f.Error(plain))
	assert.NoError(t, f.Error(nil))
	assert.EqualError(t, cli.Fields{"Benchmark.Concurrency[1]": "-first"}.Error(level), "-first 0: give 1 to 16384 streams")
}

// A matrix spec's ConfigError is said as its flag and its reason, through
// the same table; errors.As still finds the ConfigError.
func TestFieldsSpecError(t *testing.T) {
	f := cli.Fields{"Spec.Concurrency": "-concurrency"}
	se := &loadgen.ConfigError{Field: "Spec.Concurrency", Reason: "holds 0, below 1: a concurrency is 1 request or more"}
	err := f.Error(se)
	assert.EqualError(t, err, "-concurrency holds 0, below 1: a concurrency is 1 request or more")
	got, ok := errors.AsType[*loadgen.ConfigError](err)
	assert.True(t, ok)
	assert.Same(t, se, got)
	other := &loadgen.ConfigError{Field: "Spec.Model", Reason: "is odd"}
	assert.Same(t, other, f.Error(other), "a field in no entry")
}
