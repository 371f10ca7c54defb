package loadgen_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
)

// TestRunReportsReadMode: a run says how its bodies were read, so a
// setting that does nothing where it runs shows: Poll over http reads on
// the shared pollers (on Linux), Poll over https on a goroutine per
// stream, and net/http's transport is named as such.
func TestRunReportsReadMode(t *testing.T) {
	h := loadgentest.NewHandler(loadgentest.FastProfile())
	t.Cleanup(h.Close)
	plain := httptest.NewServer(h)
	t.Cleanup(plain.Close)
	secure := httptest.NewTLSServer(h)
	t.Cleanup(secure.Close)
	insecure := &tls.Config{InsecureSkipVerify: true}

	polled := "shared pollers"
	if runtime.GOOS != "linux" {
		polled = "a goroutine per stream"
	}
	for _, tc := range []struct {
		name, url string
		rt        http.RoundTripper
		want      string
	}{
		{"poll over http", plain.URL, &loadgen.StreamTransport{Poll: true}, polled},
		{"poll over https", secure.URL, &loadgen.StreamTransport{Poll: true, TLSClientConfig: insecure}, "a goroutine per stream"},
		{"stream transport", plain.URL, &loadgen.StreamTransport{}, "a goroutine per stream"},
		{"net/http", plain.URL, &http.Transport{TLSClientConfig: insecure}, "net/http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &loadgen.Client{BaseURL: tc.url + "/v1", HTTPClient: &http.Client{Transport: tc.rt}}
			defer c.CloseIdleConnections()
			g := &loadgen.Generator{Client: c, Source: loadgen.Repeat(completion(5)), Load: loadgen.Closed{Streams: 2}, Requests: 4,
				Duration: time.Minute}
			run, err := g.Run(t.Context())
			require.NoError(t, err)
			assert.Equal(t, 4, run.Summary.Completed)
			assert.Equal(t, tc.want, run.ReadMode)
		})
	}
}
