package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/internal/simtokens"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestServeStreamsAndShutsDown runs the command's server on a loopback port,
// checks what it says of itself, streams a request to it, and stops it with a
// stream still in flight: serve returns promptly and that stream ends with
// an error rather than hanging.
func TestServeStreamsAndShutsDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	served := make(chan error, 1)
	go func() {
		served <- serve(ctx, ln, config{Profile: "fast", Speed: 10, Model: "my-model", PromptTokensDetails: true})
	}()
	base := "http://" + ln.Addr().String() + "/v1"
	c := &loadgen.Client{BaseURL: base}
	defer c.CloseIdleConnections()

	resp, err := http.Get(base + "/models")
	require.NoError(t, err)
	var models struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&models))
	resp.Body.Close()
	require.Len(t, models.Data, 1)
	assert.Equal(t, "my-model", models.Data[0].ID)
	assert.Equal(t, loadgentest.FastProfile().MaxModelLen, models.Data[0].MaxModelLen)

	r := &loadgen.Request{Model: "my-model", Prompt: simtokens.Prompt(64, "simserver"), MaxTokens: 20, IgnoreEOS: true}
	got, err := c.Do(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, 20, got.OutputTokens())
	assert.Equal(t, 64+simtokens.MessageTokens+simtokens.ReplyTokens, got.PromptTokens, "the prompt and its chat template")
	assert.Zero(t, got.CachedTokens)
	again, err := c.Do(ctx, r)
	require.NoError(t, err)
	assert.Positive(t, again.CachedTokens, "-prompt-tokens-details reports the prefix-cache hit")

	// A long stream in flight when the server stops.
	long := make(chan error, 1)
	go func() {
		_, err := c.Do(context.Background(), &loadgen.Request{Model: "my-model", Prompt: "go on", MaxTokens: 30_000, IgnoreEOS: true})
		long <- err
	}()
	// It runs, and has tokens: more than the two requests before made.
	metrics := "http://" + ln.Addr().String() + "/metrics"
	require.Eventually(t, func() bool {
		return metric(t, metrics, "vllm:num_requests_running") == 1 && metric(t, metrics, "vllm:generation_tokens_total") > 40
	}, 10*time.Second, 10*time.Millisecond, "the long stream runs at the server")
	stop()
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return within 10 s of its context ending")
	}
	select {
	case err := <-long:
		var le *loadgen.Error
		require.True(t, errors.As(err, &le), "the cut stream fails with a typed error, got %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the stream in flight did not end within 10 s of the server stopping")
	}
}

// metric reads the value of the metric called name from the server's
// /metrics at url; -1 if it cannot.
func metric(t *testing.T, url, name string) float64 {
	resp, err := http.Get(url)
	if err != nil {
		t.Log(err)
		return -1
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Log(err)
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if key, value, ok := strings.Cut(strings.TrimSpace(line), " "); ok && strings.HasPrefix(key, name+"{") {
			if v, err := strconv.ParseFloat(value, 64); err == nil {
				return v
			}
		}
	}
	return -1
}

func TestServeRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		profile string
		speed   float64
		want    string
	}{
		{"nonesuch", 1, `no profile "nonesuch"`},
		{"seed", 0, "-speed must be positive"},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		err = serve(t.Context(), ln, config{Profile: tc.profile, Speed: tc.speed})
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
		_, dialErr := net.DialTimeout("tcp", ln.Addr().String(), time.Second)
		assert.Error(t, dialErr, "the listener is closed on error")
	}
}

// TestServeRecordsTruth: -truth-bytes makes the fast profile, which records
// nothing by default, keep each request's chunks and serve them at
// /debug/truth, one record a chunk the client saw.
func TestServeRecordsTruth(t *testing.T) {
	for _, tc := range []struct {
		truthBytes int64
		want       int // the status of /debug/truth?id=
	}{{0, http.StatusNotFound}, {1 << 20, http.StatusOK}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ctx, stop := context.WithCancel(t.Context())
		served := make(chan error, 1)
		go func() { served <- serve(ctx, ln, config{Profile: "fast", Speed: 10, TruthBytes: tc.truthBytes}) }()
		base := "http://" + ln.Addr().String()
		c := &loadgen.Client{BaseURL: base + "/v1"}
		got, err := c.Do(ctx, &loadgen.Request{Model: loadgentest.DefaultModel, Prompt: "p", MaxTokens: 12, IgnoreEOS: true})
		require.NoError(t, err)
		resp, err := http.Get(base + "/debug/truth?id=" + got.ID)
		require.NoError(t, err)
		var truth struct {
			Requests []loadgentest.RequestTruth `json:"requests"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&truth))
		resp.Body.Close()
		assert.Equal(t, tc.want, resp.StatusCode, "-truth-bytes %d", tc.truthBytes)
		if tc.want == http.StatusOK {
			require.Len(t, truth.Requests, 1)
			assert.Equal(t, 12, truth.Requests[0].OutputTokens)
			assert.Len(t, truth.Requests[0].Chunks, len(got.ChunkTimes), "a record a chunk")
		}
		c.CloseIdleConnections()
		stop()
		require.NoError(t, <-served)
	}
}
