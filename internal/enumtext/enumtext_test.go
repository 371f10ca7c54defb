package enumtext_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/llmload/llmload/internal/enumtext"
)

type color uint8

var colorNames = []string{"", "red", "green"}

func TestNameAndParse(t *testing.T) {
	assert.Equal(t, "green", enumtext.Name(colorNames, color(2), "color"))
	assert.Equal(t, "", enumtext.Name(colorNames, color(0), "color"))
	assert.Equal(t, "color(7)", enumtext.Name(colorNames, color(7), "color"))

	c := color(1)
	assert.NoError(t, enumtext.Parse(&c, colorNames, []byte("green"), "paint: unknown color"))
	assert.Equal(t, color(2), c)
	assert.EqualError(t, enumtext.Parse(&c, colorNames, []byte("blue"), "paint: unknown color"), `paint: unknown color "blue"`)
	assert.Equal(t, color(2), c, "a name not in the table leaves the value as it was")
	assert.NoError(t, enumtext.Parse(&c, colorNames, nil, "paint: unknown color"))
	assert.Equal(t, color(0), c, "the empty name is the zero value's")
	for v := range color(len(colorNames)) {
		var back color
		assert.NoError(t, enumtext.Parse(&back, colorNames, []byte(enumtext.Name(colorNames, v, "color")), "x"))
		assert.Equal(t, v, back)
	}
}
