package errlist_test

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/llmload/llmload/internal/errlist"
)

func TestList(t *testing.T) {
	var l errlist.List
	assert.NoError(t, l.Err())
	l.Add(nil)
	assert.NoError(t, l.Err(), "nil adds nothing")
	one := errors.New("matrix: Spec.Duration is 0")
	l.Add(one)
	assert.Same(t, one, l.Err(), "one error is itself")
	var more errlist.List
	more.Add(errors.New("matrix: Spec.URL is empty"))
	more.Add(io.EOF)
	l.Add(more)
	err := l.Err()
	assert.EqualError(t, err, "matrix: Spec.Duration is 0; Spec.URL is empty; EOF", "the package named once; a list added is flattened")
	assert.ErrorIs(t, err, io.EOF)
	assert.ErrorIs(t, err, one)
	assert.Len(t, l, 3)

	var plain errlist.List
	plain.Add(errors.New("no prefix here: at all"))
	plain.Add(errors.New("no prefix here: again"))
	assert.EqualError(t, plain.Err(), "no prefix here: at all; no prefix here: again", "a first part with spaces is not a package's prefix")
}
