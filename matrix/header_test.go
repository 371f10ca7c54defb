package matrix_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
)

// TestHeadersReachEveryRequest runs the matrix through a gateway that
// refuses any request without its routing header: the load and the
// matrix's own requests beside it (discovery, /tokenize, /metrics) all
// carry the client's extra headers, so the limits are found and the cell
// is measured.
func TestHeadersReachEveryRequest(t *testing.T) {
	const speed = 10
	sim := loadgentest.NewServer(knownProfile(speed))
	defer sim.Close()
	target, err := url.Parse(sim.URL)
	require.NoError(t, err)

	var mu sync.Mutex
	refused := map[string]int{}
	carried := map[string]int{}
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.Header.Get("X-Route") != "pool-a" {
			refused[r.URL.Path]++
			mu.Unlock()
			http.Error(w, "no route", http.StatusForbidden)
			return
		}
		carried[r.URL.Path]++
		mu.Unlock()
		r.URL.Scheme, r.URL.Host = target.Scheme, target.Host
		r.RequestURI = ""
		resp, err := sim.Client().Transport.RoundTrip(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 4096)
		for {
			n, rerr := resp.Body.Read(buf)
			if n > 0 {
				_, _ = w.Write(buf[:n])
				w.(http.Flusher).Flush()
			}
			if rerr != nil {
				return
			}
		}
	}))
	defer gw.Close()

	spec := matrix.Spec{
		URL: gw.URL + "/v1", Model: "bench", API: loadgen.Chat,
		Contexts: []int{1024}, Concurrency: []int{2},
		Duration: 3 * time.Second, MaxTokens: 200,
		WarmupRule: &matrix.WarmupRule{Min: time.Second, Flow: time.Second, Timeout: 5 * time.Second},
	}
	var log bytes.Buffer
	r := &matrix.Runner{Spec: spec.AtSpeed(speed), Server: capacity.Server{Simulated: true, Speed: speed},
		Client: &loadgen.Client{HTTPClient: gw.Client(), Header: http.Header{"X-Route": {"pool-a"}}}, Log: &log}
	res, err := r.Run(t.Context())
	require.NoError(t, err, log.String())

	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, refused, "requests sent without the header")
	paths := make([]string, 0, len(carried))
	for p := range carried {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	t.Logf("paths with the header: %v", paths)
	assert.Contains(t, paths, "/v1/chat/completions")
	assert.Contains(t, paths, "/metrics", "the server's gauges were read through the gateway")
	assert.Contains(t, paths, "/tokenize", "prompts were sized through the gateway")
	assert.Equal(t, 32*1024, res.Server.Limits.MaxModelLen, "the limits were discovered through the gateway")
	c := res.Cell(1024, 2)
	require.NotNil(t, c)
	require.NotNil(t, c.Measurement, "%s: %s", c.Status, c.Reason)
}
