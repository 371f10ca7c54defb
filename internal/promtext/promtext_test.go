package promtext

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGet reads a server's /metrics: families by name with their series
// summed; a status other than 200, text that is not an exposition and a
// server slower than the deadline are errors that name the shown URL.
func TestGet(t *testing.T) {
	body := "# TYPE vllm:num_requests_running gauge\n" +
		"vllm:num_requests_running{model=\"a\"} 3\nvllm:num_requests_running{model=\"b\"} 4\n" +
		"# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total 2\nuntyped_thing 1.5\n"
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) })
	mux.HandleFunc("/broken", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusInternalServerError) })
	mux.HandleFunc("/garbage", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{not metrics")) })
	mux.HandleFunc("/slow", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()

	f, err := Get(ctx, srv.Client(), srv.URL+"/metrics", "the server", time.Second)
	require.NoError(t, err)
	assert.Equal(t, 7.0, Sum(f["vllm:num_requests_running"]))
	assert.Equal(t, 2.0, Sum(f["vllm:num_preemptions_total"]))
	assert.Equal(t, 1.5, Sum(f["untyped_thing"]))
	assert.Zero(t, Sum(f["absent"]))

	_, err = Get(ctx, srv.Client(), srv.URL+"/broken", "the server", time.Second)
	assert.ErrorContains(t, err, "GET the server: 500")
	_, err = Get(ctx, srv.Client(), srv.URL+"/garbage", "the server", time.Second)
	assert.ErrorContains(t, err, "parse /metrics")
	start := time.Now()
	_, err = Get(ctx, srv.Client(), srv.URL+"/slow", "the server", 100*time.Millisecond)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.False(t, strings.Contains(err.Error(), srv.URL), "the URL is shown as given: %v", err)
}
