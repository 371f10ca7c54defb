package dcgm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/metrics"
)

// TestErrorsHideThePassword: an exporter's URL with a password in its
// user information (http://user:secret@node:9400/metrics) is read with
// it, and no error of the meter shows it — an exporter that refuses, is
// unreachable, is not a URL, or says what is not metrics, nor the
// energy's error that quotes the last reading — nor ParseURLs' of a list
// that holds what is not a URL.
func TestErrorsHideThePassword(t *testing.T) {
	const password = "s3cret-gpu-pw"
	var failing atomic.Bool
	var got atomic.Value
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, p, _ := r.BasicAuth()
		got.Store(p)
		switch {
		case r.URL.Path == "/garbage":
			_, _ = w.Write([]byte("<html>" + password + "{\n"))
		case failing.Load():
			http.Error(w, "no", http.StatusUnauthorized)
		default:
			_, _ = w.Write([]byte("# TYPE " + powerName + " gauge\n" + powerName + `{gpu="0",UUID="GPU-1"} 100` + "\n"))
		}
	}))
	defer exporter.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	withPassword := func(base, path string) string {
		return strings.Replace(base, "://", "://alice:"+password+"@", 1) + path
	}
	check := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		assert.NotContains(t, err.Error(), password)
		assert.Contains(t, err.Error(), "alice:xxxxx@", "the user is shown, the password replaced")
	}
	for name, u := range map[string]string{
		"refused":     withPassword(exporter.URL, "/refused"),
		"unreachable": withPassword(closed.URL, "/metrics"),
		"not a URL":   "http://alice:" + password + "@127.0.0.1:port/metrics",
		"not metrics": withPassword(exporter.URL, "/garbage"),
	} {
		t.Run(name, func(t *testing.T) {
			failing.Store(name == "refused")
			check(t, New(nil, []string{u}, time.Second).Read(t.Context()))
		})
	}

	t.Run("energy", func(t *testing.T) {
		failing.Store(false)
		m := New(nil, []string{withPassword(exporter.URL, "/metrics")}, time.Hour)
		require.NoError(t, m.Read(t.Context()))
		assert.Equal(t, password, got.Load(), "the password is sent")
		start := time.Now()
		failing.Store(true)
		time.Sleep(10 * time.Millisecond)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		_, err := m.Energy(ctx, metrics.Window{Start: start, End: time.Now()}, 100, 0)
		check(t, err)
	})

	_, err := ParseURLs("http://node:9400/metrics, alice:" + password + "@node:9400/metrics")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), password)
}
