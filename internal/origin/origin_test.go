package origin

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSame(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"http://h/v1", "http://H:80/other", true},
		{"https://h", "https://h:443/x", true},
		{"http://h", "https://h", false},
		{"http://h:8000", "http://h:8001", false},
		{"http://h", "http://h.evil", false},
		// A scheme llmload knows no default port of: a port given is not
		// the one left out.
		{"foo://h", "foo://h:80", false},
		{"foo://h:9", "FOO://h:9", true},
	} {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		assert.Equal(t, tc.same, Same(a, b), "%s and %s", tc.a, tc.b)
	}
	assert.Empty(t, Parse("::"))
	assert.Empty(t, Parse("/relative"))
	assert.Equal(t, "http://h:80", Parse("http://H/v1"))
}
