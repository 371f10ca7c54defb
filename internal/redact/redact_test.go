package redact_test

import (
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/redact"
)

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8000/v1":                  "http://127.0.0.1:8000/v1",
		"http://alice:s3cr3t-pw@127.0.0.1:8000/v1":  "http://alice:xxxxx@127.0.0.1:8000/v1",
		"http://alice@127.0.0.1:8000/v1":            "http://alice@127.0.0.1:8000/v1",
		"http://alice:p%40ss@[::1]:8000/v1?x=1":     "http://alice:xxxxx@[::1]:8000/v1?x=1",
		"http://alice:s3cr3t-pw@[::1/v1":            "http://alice:xxxxx@[::1/v1",
		"http://alice:s3cr3t-pw@host:port:bad/v1/x": "http://alice:xxxxx@host:port:bad/v1/x",
		"not a url": "not a url",
	} {
		assert.Equal(t, want, redact.URL(in), in)
	}
}

func TestRedactor(t *testing.T) {
	// The password is "p@ss word"; url.URL writes it escaped.
	raw := "http://alice:p%40ss%20word@127.0.0.1:8000/v1"
	r := redact.New(raw, "sk-test-0123456789")
	u, err := url.Parse(raw)
	assert.NoError(t, err)
	for _, s := range []string{
		"GET " + raw + "/models: refused",
		"GET " + u.String() + "/metrics: refused",
		"GET http://alice:p@ss word@127.0.0.1:8000/v1: refused",
		`server said "bad password p@ss word" and "key sk-test-0123456789"`,
	} {
		got := r.Redact(s)
		assert.NotContains(t, got, "p@ss", s)
		assert.NotContains(t, got, "ss%20word", s)
		assert.NotContains(t, got, "sk-test-0123456789", s)
		assert.Contains(t, got, "xxxxx", s)
	}
	assert.Equal(t, "http://alice:xxxxx@127.0.0.1:8000/v1", r.Redact(u.String()))

	cause := errors.New("dial refused")
	err = r.Error(fmt.Errorf("GET %s: %w", raw, cause))
	assert.NotContains(t, err.Error(), "p@ss")
	assert.ErrorIs(t, err, cause, "the chain is kept")
	assert.NoError(t, r.Error(nil))

	var none *redact.Redactor
	assert.Equal(t, "as is", none.Redact("as is"))
	assert.Nil(t, redact.New("http://127.0.0.1/v1"), "nothing to redact")
	short := redact.New("http://bob:pw@host/v1")
	assert.Equal(t, "http://bob:xxxxx@host/v1 pw stays in words", short.Redact("http://bob:pw@host/v1 pw stays in words"))
}

// TestRestoreURL: a URL saved redacted is used again with the password
// the user gives, or as it is when it had none; another URL, or no URL
// for one that had a password, is refused, never showing the password.
func TestRestoreURL(t *testing.T) {
	const withPass = "http://dave:s3cret@host:8000/v1"
	saved := redact.URL(withPass)
	for _, tc := range []struct {
		name, saved, given, want string
		err                      error
	}{
		{"the password given again", saved, withPass, withPass, nil},
		{"a URL without a password", "http://host:8000/v1", "", "http://host:8000/v1", nil},
		{"the same URL given", "http://host:8000/v1", "http://host:8000/v1", "http://host:8000/v1", nil},
		{"the redacted URL given as it was saved", saved, saved, saved, nil},
		{"no URL for one with a password", saved, "", "", redact.ErrPasswordNeeded},
		{"another host", saved, "http://dave:s3cret@other:8000/v1", "", redact.ErrOtherURL},
		{"another user", saved, "http://eve:s3cret@host:8000/v1", "", redact.ErrOtherURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := redact.Restore(tc.saved, tc.given)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				assert.NotContains(t, err.Error(), "s3cret")
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestRedactorShortSecrets: a secret under redact.MinLen bytes is
// replaced where it stands as a whole value and nowhere inside another
// word, so that the message stays readable and does not spell the secret
// out by its gaps; one under 4 bytes is left alone; a long one is
// replaced wherever it is, and only whole.
func TestRedactorShortSecrets(t *testing.T) {
	const msg = "the server refused the request: 401 Unauthorized (see the key's docs)"
	for _, key := range []string{"e", "t", "01", "the"} {
		assert.Equal(t, msg, redact.New("", key).Redact(msg), "a %d-byte key garbles nothing", len(key))
	}
	r := redact.New("http://bob:pass5@host/v1", "k3y42")
	for in, want := range map[string]string{
		"Authorization: Bearer k3y42":                "Authorization: Bearer xxxxx",
		`invalid api key "k3y42".`:                   `invalid api key "xxxxx".`,
		"key=k3y42&x=1":                              "key=xxxxx&x=1",
		"k3y42":                                      "xxxxx",
		"k3y423 and xk3y42 and k3y42-b stay":         "k3y423 and xk3y42 and k3y42-b stay",
		"GET http://bob:pass5@host/v1: refused":      "GET http://bob:xxxxx@host/v1: refused",
		"wrong password pass5, not pass56 or pass5x": "wrong password xxxxx, not pass56 or pass5x",
		"password: «pass5»":                          "password: «xxxxx»",
	} {
		assert.Equal(t, want, r.Redact(in), in)
	}
	long := redact.New("", "sk-0123456789abcdef")
	assert.Equal(t, "keyxxxxxtail, xxxxx", long.Redact("keysk-0123456789abcdeftail, sk-0123456789abcdef"))
	assert.Equal(t, "sk-0123456789abcde is not it", long.Redact("sk-0123456789abcde is not it"), "a part of a secret is not replaced")
}
