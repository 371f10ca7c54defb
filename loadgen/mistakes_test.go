package loadgen_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// The mistakes a user's program can make with a Generator, a Client or a
// Request, each refused with an error that names the field, before anything
// is sent, and never a panic.

// countingServer is a healthy streaming server that counts the requests it
// receives.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		sseHeaders(w)
		w.Write([]byte(tokenChunk("a") + tokenChunk("b") + finishChunk))
	})
	return srv, &n
}

// requireConfigError checks that err is a *ConfigError naming field, on one
// line, and returns it.
func requireConfigError(t *testing.T, err error, field string) *loadgen.ConfigError {
	t.Helper()
	require.Error(t, err)
	var ce *loadgen.ConfigError
	require.ErrorAs(t, err, &ce, "%v", err)
	assert.Equal(t, field, ce.Field, "%v", err)
	assert.Contains(t, err.Error(), field)
	assert.NotContains(t, err.Error(), "\n")
	assert.Equal(t, metrics.KindOther, loadgen.KindOf(err))
	return ce
}

func TestGeneratorMistakes(t *testing.T) {
	srv, sent := countingServer(t)
	client := func() *loadgen.Client { return &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()} }
	source := loadgen.Repeat(req())
	used := &metrics.Recorder{}
	used.SetWindow(metrics.Window{Start: time.Now(), End: time.Now().Add(time.Hour)})
	for _, tc := range []struct {
		name  string
		g     *loadgen.Generator
		field string
	}{
		{"no client", &loadgen.Generator{Source: source, Requests: 1}, "Generator.Client"},
		{"no source", &loadgen.Generator{Client: client(), Requests: 1}, "Generator.Source"},
		{"negative concurrency", &loadgen.Generator{Client: client(), Source: source, Requests: 1, Load: loadgen.Closed{Streams: -1}}, "Closed.Streams"},
		{"negative ramp", &loadgen.Generator{Client: client(), Source: source, Requests: 1, Load: loadgen.Closed{Ramp: -time.Second}}, "Closed.Ramp"},
		{"zero rate", &loadgen.Generator{Client: client(), Source: source, Requests: 1, Load: loadgen.Open{}}, "Open.Rate"},
		{"negative rate", &loadgen.Generator{Client: client(), Source: source, Requests: 1, Load: loadgen.Open{Rate: -1}}, "Open.Rate"},
		{"NaN rate", &loadgen.Generator{Client: client(), Source: source, Requests: 1, Load: loadgen.Open{Rate: math.NaN()}}, "Open.Rate"},
		{"infinite rate", &loadgen.Generator{Client: client(), Source: source, Requests: 1, Load: loadgen.Open{Rate: math.Inf(1)}}, "Open.Rate"},
		{"burstiness of poisson arrivals", &loadgen.Generator{Client: client(), Source: source, Requests: 1, Load: loadgen.Open{Rate: 1, Burstiness: 0.5}}, "Open.Burstiness"},
		{"gamma without burstiness", &loadgen.Generator{Client: client(), Source: source, Requests: 1, Load: loadgen.Open{Rate: 1, Arrival: loadgen.Gamma}}, "Open.Burstiness"},
		{"negative burstiness", &loadgen.Generator{Client: client(), Source: source, Requests: 1, Load: loadgen.Open{Rate: 1, Arrival: loadgen.Gamma, Burstiness: -2}}, "Open.Burstiness"},
		{"unknown arrival", &loadgen.Generator{Client: client(), Source: source, Requests: 1, Load: loadgen.Open{Rate: 1, Arrival: 9}}, "Open.Arrival"},
		{"negative in-flight cap", &loadgen.Generator{Client: client(), Source: source, Requests: 1, Load: loadgen.Open{Rate: 1, MaxInFlight: -1}}, "Open.MaxInFlight"},
		{"schedule without times", &loadgen.Generator{Client: client(), Source: source, Load: loadgen.Schedule{}}, "Schedule.Due"},
		{"schedule with a negative cap", &loadgen.Generator{Client: client(), Source: source, Load: loadgen.Schedule{Due: every(1, 0), MaxInFlight: -1}}, "Schedule.MaxInFlight"},
		{"neither duration nor requests", &loadgen.Generator{Client: client(), Source: source}, "Generator.Duration"},
		{"negative duration", &loadgen.Generator{Client: client(), Source: source, Duration: -time.Second}, "Generator.Duration"},
		{"negative requests", &loadgen.Generator{Client: client(), Source: source, Duration: time.Second, Requests: -1}, "Generator.Requests"},
		{"negative warm-up", &loadgen.Generator{Client: client(), Source: source, Requests: 1, Warmup: -time.Second}, "Generator.Warmup"},
		{"warm-up timeout without a condition", &loadgen.Generator{Client: client(), Source: source, Requests: 1, WarmupTimeout: time.Second}, "Generator.WarmupTimeout"},
		{"drain timeout without drain", &loadgen.Generator{Client: client(), Source: source, Duration: time.Second, DrainTimeout: time.Second}, "Generator.DrainTimeout"},
		{"drain without a window", &loadgen.Generator{Client: client(), Source: source, Requests: 1, Drain: true}, "Generator.Drain"},
		{"negative retries", &loadgen.Generator{Client: client(), Source: source, Requests: 1, Retries: -1}, "Generator.Retries"},
		{"a recorder that holds another recording", &loadgen.Generator{Client: client(), Source: source, Requests: 1, Recorder: used}, "Generator.Recorder"},
		{"an HTTP client timeout", &loadgen.Generator{Client: &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Timeout: 30 * time.Second}}, Source: source, Requests: 1}, "Client.HTTPClient.Timeout"},
		{"no base URL", &loadgen.Generator{Client: &loadgen.Client{}, Source: source, Requests: 1}, "Client.BaseURL"},
		{"a base URL that is not one", &loadgen.Generator{Client: &loadgen.Client{BaseURL: "http://[::1"}, Source: source, Requests: 1}, "Client.BaseURL"},
		{"a base URL of another scheme", &loadgen.Generator{Client: &loadgen.Client{BaseURL: "127.0.0.1:8000/v1"}, Source: source, Requests: 1}, "Client.BaseURL"},
		{"a base URL with a query", &loadgen.Generator{Client: &loadgen.Client{BaseURL: srv.URL + "/v1?key=1"}, Source: source, Requests: 1}, "Client.BaseURL"},
		{"a negative event size", &loadgen.Generator{Client: &loadgen.Client{BaseURL: srv.URL + "/v1", MaxEventSize: -1}, Source: source, Requests: 1}, "Client.MaxEventSize"},
		{"a nil generator", nil, "Generator"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, err := tc.g.Run(t.Context())
			requireConfigError(t, err, tc.field)
			require.NotNil(t, run, "Run returns a Run whatever the error")
			assert.Equal(t, loadgen.StopFailed, run.Stopped)
			assert.Equal(t, err, run.Err)
			assert.Zero(t, run.Launched)
			require.NotNil(t, run.Recorder)
			assert.Zero(t, run.Recorder.Recording(metrics.ScopeWindow).Summary.Requests)
			assert.Zero(t, sent.Load(), "nothing was sent")
		})
	}
}

func TestGeneratorMistakesAllNamed(t *testing.T) {
	g := &loadgen.Generator{Client: &loadgen.Client{BaseURL: "ftp://example.com"}, Load: loadgen.Open{Rate: -5}}
	run, err := g.Run(t.Context())
	require.NotNil(t, run)
	require.Error(t, err)
	msg := err.Error()
	assert.NotContains(t, msg, "\n", "one line")
	for _, field := range []string{"Client.BaseURL", "Generator.Source", "Open.Rate", "Generator.Duration"} {
		assert.Contains(t, msg, field)
	}
	assert.Equal(t, 1, strings.Count(msg, "loadgen: "), "one prefix: %s", msg)
	var ce *loadgen.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Client.BaseURL", ce.Field, "errors.As finds the first")
}

// TestSourceReturningNilEndsTheRun: a Source that returns nil ends the run
// with an error naming it, in the closed and the open loop, and never panics
// in a worker.
func TestSourceReturningNilEndsTheRun(t *testing.T) {
	_, c := simulated(t, time.Millisecond, 4)
	for _, tc := range []struct {
		name string
		g    func() *loadgen.Generator
	}{
		{"closed loop", func() *loadgen.Generator {
			return &loadgen.Generator{Load: loadgen.Closed{Streams: 2}, Duration: time.Minute}
		}},
		{"open loop", func() *loadgen.Generator {
			return &loadgen.Generator{Load: loadgen.Open{Rate: 200}, Duration: time.Minute}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.g()
			g.Client = c
			g.Source = func(w, seq int) *loadgen.Request {
				if seq == 3 {
					return nil
				}
				return completion(2)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			run, err := g.Run(ctx)
			ce := requireConfigError(t, err, "Generator.Source")
			assert.Contains(t, ce.Reason, "returned nil")
			require.NotNil(t, run)
			assert.Equal(t, loadgen.StopFailed, run.Stopped)
			assert.Equal(t, err, run.Err)
			assert.NoError(t, ctx.Err(), "ended by the error, not the deadline")
			assert.Positive(t, run.Summary.Completed+run.Summary.Canceled+run.Summary.WarmupRequests, "what was measured is kept")
		})
	}
}

// TestSourceReturningABadRequestEndsTheRun: a Request that cannot work ends
// the run with its error.
func TestSourceReturningABadRequestEndsTheRun(t *testing.T) {
	srv, sent := countingServer(t)
	g := &loadgen.Generator{Client: &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}, Requests: 4,
		Source: loadgen.Repeat(&loadgen.Request{Model: "m", Prompt: "hi", MaxTokens: -5})}
	run, err := g.Run(t.Context())
	requireConfigError(t, err, "Request.MaxTokens")
	require.NotNil(t, run)
	assert.Zero(t, sent.Load())
}

func TestRequestMistakes(t *testing.T) {
	srv, sent := countingServer(t)
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}
	nan := math.NaN()
	for _, tc := range []struct {
		name  string
		req   *loadgen.Request
		field string
	}{
		{"nil request", nil, "Request"},
		{"unknown API", &loadgen.Request{API: 7, Prompt: "hi"}, "Request.API"},
		{"unknown usage", &loadgen.Request{Usage: 9, Prompt: "hi"}, "Request.Usage"},
		{"negative max tokens", &loadgen.Request{Prompt: "hi", MaxTokens: -1}, "Request.MaxTokens"},
		{"negative min tokens", &loadgen.Request{Prompt: "hi", MinTokens: -1}, "Request.MinTokens"},
		{"min above max", &loadgen.Request{Prompt: "hi", MinTokens: 9, MaxTokens: 8}, "Request.MinTokens"},
		{"messages on completions", &loadgen.Request{API: loadgen.Completions, Messages: []loadgen.Message{{Role: "user", Content: "hi"}}}, "Request.Messages"},
		{"a prompt beside messages", &loadgen.Request{Prompt: "lost", Messages: []loadgen.Message{{Role: "user", Content: "hi"}}}, "Request.Prompt"},
		{"a temperature that is not a number", &loadgen.Request{Prompt: "hi", Temperature: &nan}, "Request.Temperature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := c.Do(t.Context(), tc.req)
			requireConfigError(t, err, tc.field)
			assert.Equal(t, metrics.KindOther, resp.Kind)
			assert.Equal(t, err, resp.Err)
			_, err = tc.req.Body()
			requireConfigError(t, err, tc.field)
			assert.Zero(t, sent.Load(), "nothing was sent")
		})
	}
}

// TestRequestChangedAfterFirstUse: a Request is encoded once; a change is
// refused, naming the field, instead of being sent as it was.
func TestRequestChangedAfterFirstUse(t *testing.T) {
	srv, sent := countingServer(t)
	c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}
	temp := 0.5
	fresh := func() *loadgen.Request {
		t := temp
		return &loadgen.Request{
			Model: "m", Messages: []loadgen.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}},
			MaxTokens: 8, Temperature: &t, Extra: map[string]any{"top_k": 1, "stop": []string{"\n"}},
			Header: http.Header{"X-Team": {"perf"}},
		}
	}
	for _, tc := range []struct {
		field  string
		change func(r *loadgen.Request)
	}{
		{"Model", func(r *loadgen.Request) { r.Model = "other" }},
		{"Prompt", func(r *loadgen.Request) { r.Prompt = "hello" }},
		{"Messages", func(r *loadgen.Request) { r.Messages[1].Content = "hello" }},
		{"Messages", func(r *loadgen.Request) {
			r.Messages = append(r.Messages, loadgen.Message{Role: "user", Content: "more"})
		}},
		{"MaxTokens", func(r *loadgen.Request) { r.MaxTokens = 9 }},
		{"IgnoreEOS", func(r *loadgen.Request) { r.IgnoreEOS = true }},
		{"Temperature", func(r *loadgen.Request) { *r.Temperature = 1 }},
		{"Temperature", func(r *loadgen.Request) { r.Temperature = nil }},
		{"Usage", func(r *loadgen.Request) { r.Usage = loadgen.UsageNone }},
		{"Extra", func(r *loadgen.Request) { r.Extra["top_k"] = 2 }},
		{"Extra", func(r *loadgen.Request) { r.Extra["seed"] = 7 }},
		{"Extra", func(r *loadgen.Request) { r.Extra["stop"] = []string{"\n", "."} }},
		{"Header", func(r *loadgen.Request) { r.Header.Set("X-Team", "other") }},
		{"Header", func(r *loadgen.Request) { r.Header.Add("X-More", "1") }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			r := fresh()
			before := sent.Load()
			_, err := c.Do(t.Context(), r)
			require.NoError(t, err)
			_, err = c.Do(t.Context(), r)
			require.NoError(t, err, "unchanged, it is sent again")
			tc.change(r)
			_, err = c.Do(t.Context(), r)
			requireConfigError(t, err, "Request."+tc.field)
			assert.Equal(t, before+2, sent.Load(), "the changed request was not sent")
		})
	}
}

// TestRequestChangedMidRun: a Source's shared Request changed during a run
// ends the run with the change named, rather than measuring the old body.
func TestRequestChangedMidRun(t *testing.T) {
	_, c := simulated(t, time.Millisecond, 2)
	shared := completion(2)
	var calls atomic.Int64
	g := &loadgen.Generator{Client: c, Load: loadgen.Closed{Streams: 1}, Duration: time.Minute, Source: func(int, int) *loadgen.Request {
		if calls.Add(1) == 5 {
			shared.MaxTokens = 4
		}
		return shared
	}}
	run, err := g.Run(t.Context())
	requireConfigError(t, err, "Request.MaxTokens")
	assert.Equal(t, 4, run.Launched, "the requests before the change")
}

func TestClientMistakes(t *testing.T) {
	srv, sent := countingServer(t)
	t.Run("nil client", func(t *testing.T) {
		var c *loadgen.Client
		_, err := c.Do(t.Context(), req())
		requireConfigError(t, err, "Client")
		for _, err := range c.Stream(t.Context(), req()) {
			requireConfigError(t, err, "Client")
		}
	})
	t.Run("nil timeline", func(t *testing.T) {
		c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}
		requireConfigError(t, c.Measure(t.Context(), req(), nil, nil), "Client.Measure's Timeline")
	})
	t.Run("HTTP client timeout", func(t *testing.T) {
		c := &loadgen.Client{BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Timeout: time.Minute}}
		var tl metrics.Timeline
		err := c.Measure(t.Context(), req(), &tl, nil)
		ce := requireConfigError(t, err, "Client.HTTPClient.Timeout")
		assert.Contains(t, ce.Reason, "1m0s")
		assert.Contains(t, ce.Reason, "StallTimeout", "says what to use instead")
		assert.Equal(t, metrics.KindOther, tl.Kind)
		require.ErrorAs(t, c.Validate(), &ce)
	})
	t.Run("password in a bad base URL", func(t *testing.T) {
		c := &loadgen.Client{BaseURL: "ftp://user:hunter2@example.com/v1"}
		_, err := c.Do(t.Context(), req())
		requireConfigError(t, err, "Client.BaseURL")
		assert.NotContains(t, err.Error(), "hunter2")
	})
	assert.Zero(t, sent.Load(), "nothing was sent")
}

// TestGeneratorRunsOnceAtATime: a second Run while one is in progress is
// refused, and the first goes on.
func TestGeneratorRunsOnceAtATime(t *testing.T) {
	_, c := simulated(t, time.Millisecond, 2)
	g := &loadgen.Generator{Client: c, Source: loadgen.Repeat(completion(2)), Duration: time.Minute}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := g.Run(ctx)
		done <- err
	}()
	require.Eventually(t, func() bool { return g.Progress().Launched > 0 }, 10*time.Second, 5*time.Millisecond)
	run, err := g.Run(t.Context())
	requireConfigError(t, err, "Generator")
	require.NotNil(t, run)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	// Once it has ended, the Generator runs again.
	g.Duration = 0
	g.Requests = 2
	_, err = g.Run(t.Context())
	assert.NoError(t, err)
}

// TestRecorderWithoutWindowCountsTokens: measuring with a Recorder that was
// never given a window reports the tokens it saw, not 0 tok/s.
func TestRecorderWithoutWindowCountsTokens(t *testing.T) {
	_, c := simulated(t, time.Millisecond, 1)
	var rec metrics.Recorder
	for range 3 {
		var tl metrics.Timeline
		require.NoError(t, c.Measure(t.Context(), completion(20), &tl, &rec))
		rec.Record(&tl)
	}
	s := rec.Recording(metrics.ScopeWindow).Summary
	assert.Equal(t, 60, s.OutputTokens)
	assert.Equal(t, 3, s.Completed)
	assert.Positive(t, s.OutputTokensPerSec)
	assert.False(t, s.Window.IsZero(), "the window is the span of the requests")
}

// TestValidateBeforeRunning checks Validate itself, as a tool would call it
// before a long run.
func TestValidateBeforeRunning(t *testing.T) {
	c := &loadgen.Client{BaseURL: "http://user:pw@127.0.0.1:8000/v1"}
	closed := &loadgen.Generator{Client: c, Source: loadgen.Repeat(req()), Load: loadgen.Closed{Streams: 4, Ramp: time.Second}, Duration: time.Second}
	assert.NoError(t, closed.Validate())
	assert.NoError(t, c.Validate())
	assert.NoError(t, req().Validate())
	open := loadgen.Open{Rate: 10, Arrival: loadgen.Gamma, MaxInFlight: 16, Burstiness: 0.5, Seed: 1}
	g := &loadgen.Generator{Client: c, Source: closed.Source, Load: open, Duration: time.Second}
	assert.NoError(t, g.Validate())
	open.Arrival = loadgen.Constant
	g.Load = open
	ce, ok := errors.AsType[*loadgen.ConfigError](g.Validate())
	require.True(t, ok)
	assert.Equal(t, "Open.Burstiness", ce.Field)
	assert.Contains(t, ce.Reason, "Gamma", "says what to use instead")
}
