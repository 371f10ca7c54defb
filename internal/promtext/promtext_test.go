package promtext

import (
	"context"
	"errors"
	"math"
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

// TestGetErrors: a status other than 200 is a *StatusError and text that
// is not an exposition a *ParseError, both naming the shown URL, for a
// caller to word its own; an answer over MaxBytes is refused, not parsed
// cut short.
func TestGetErrors(t *testing.T) {
	huge := strings.Repeat("# padding comment\n", MaxBytes/18+1) + "gauge_after 1\n"
	mux := http.NewServeMux()
	mux.HandleFunc("/missing", func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) })
	mux.HandleFunc("/garbage", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("x{ 1\n")) })
	mux.HandleFunc("/huge", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(huge)) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()

	_, err := Get(ctx, srv.Client(), srv.URL+"/missing", "the exporter", time.Second)
	se, ok := errors.AsType[*StatusError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, StatusError{Target: "the exporter", Status: "404 Not Found"}, *se)
	assert.EqualError(t, err, "GET the exporter: 404 Not Found")

	_, err = Get(ctx, srv.Client(), srv.URL+"/garbage", "the exporter", time.Second)
	pe, ok := errors.AsType[*ParseError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, "the exporter", pe.Target)
	assert.ErrorContains(t, err, "parse /metrics: ")

	_, err = Get(ctx, srv.Client(), srv.URL+"/huge", "the exporter", 10*time.Second)
	assert.ErrorContains(t, err, "GET the exporter: the answer is over 16 MiB")
}

// TestValueAndLabels reads one series: its value whatever its kind (NaN
// for a histogram's), and its labels by name.
func TestValueAndLabels(t *testing.T) {
	f, err := Parse(strings.NewReader("# TYPE g gauge\ng{gpu=\"0\",UUID=\"GPU-1\"} 2.5\n# TYPE c counter\nc 7\nu 3\n" +
		"# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 2\nh_count 1\n"))
	require.NoError(t, err)
	assert.Equal(t, 2.5, Value(f["g"].GetMetric()[0]))
	assert.Equal(t, 7.0, Value(f["c"].GetMetric()[0]))
	assert.Equal(t, 3.0, Value(f["u"].GetMetric()[0]))
	assert.True(t, math.IsNaN(Value(f["h"].GetMetric()[0])))
	assert.Zero(t, Sum(f["h"]), "a histogram adds nothing to a sum")
	assert.Equal(t, map[string]string{"gpu": "0", "UUID": "GPU-1"}, Labels(f["g"].GetMetric()[0]))
	assert.Empty(t, Labels(f["c"].GetMetric()[0]))
}
