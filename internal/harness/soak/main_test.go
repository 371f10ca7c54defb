package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/metrics"
)

func TestMain(m *testing.M) {
	// soak starts the simulator by running its own binary with -serve.
	// Under go test its binary is this test binary, which then serves.
	if len(os.Args) > 1 && os.Args[1] == "-serve" {
		main()
	}
	goleak.VerifyTestMain(m)
}

// jsonReport is soak's -json output, line by line.
type jsonReport struct {
	start   Header
	samples []Sample
	final   Final
}

func parseJSONReport(t *testing.T, out []byte) jsonReport {
	t.Helper()
	var r jsonReport
	var finals int
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var typ struct{ Type string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &typ), sc.Text())
		switch typ.Type {
		case "start":
			require.NoError(t, json.Unmarshal(sc.Bytes(), &r.start))
		case "sample":
			var s Sample
			require.NoError(t, json.Unmarshal(sc.Bytes(), &s))
			r.samples = append(r.samples, s)
		case "final":
			require.NoError(t, json.Unmarshal(sc.Bytes(), &r.final))
			finals++
		default:
			t.Fatalf("unexpected line %s", sc.Text())
		}
	}
	require.Equal(t, 1, finals, "one final line")
	return r
}

// A short soak against the simulator in a child process: tokens flow, no
// request fails, every report has its fields, and the child is gone after.
func TestSoakChildSimulator(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{
		"-streams", "50", "-duration", "2s", "-interval", "500ms", "-ramp", "200ms",
		"-max-tokens", "20", // 0.2 s a request: streams are re-sent during the run
		"-json",
	}, &out, &errOut)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	r := parseJSONReport(t, out.Bytes())

	assert.Equal(t, 50, r.start.Config.Streams)
	assert.Equal(t, "stream", r.start.Config.Transport)
	require.Positive(t, r.start.SimulatorPID)
	assert.NotEqual(t, os.Getpid(), r.start.SimulatorPID)

	// A sample every 500ms for 2s; fewer if the machine is so busy that
	// some come late.
	require.NotEmpty(t, r.samples)
	assert.LessOrEqual(t, len(r.samples), 4)
	var prev secs
	flowed := false
	for i, s := range r.samples {
		assert.Greater(t, s.Elapsed, prev, "sample %d", i)
		prev = s.Elapsed
		assert.Positive(t, s.Client.RSS)
		assert.Positive(t, s.Client.HeapInuse)
		assert.Positive(t, s.Client.Stacks)
		assert.Greater(t, s.Client.Goroutines, 50, "a worker per stream at least")
		assert.Less(t, s.Client.Goroutines, 2*50, "StreamTransport adds no goroutine per connection")
		assert.Empty(t, s.Client.Err)
		require.NotNil(t, s.Simulator)
		assert.Equal(t, r.start.SimulatorPID, s.Simulator.PID)
		assert.Positive(t, s.Simulator.RSS)
		assert.Empty(t, s.Simulator.Err)
		require.NotNil(t, s.Engine)
		assert.Zero(t, s.Failed)
		assert.Empty(t, s.Errors)
		flowed = flowed || s.TokensPerSec > 0 && s.Engine.TokensPerChunk > 0
	}
	assert.True(t, flowed, "tokens flowed in some interval")
	last := r.samples[len(r.samples)-1]
	assert.GreaterOrEqual(t, time.Duration(last.Elapsed), 2*time.Second)
	// Requests of 0.2 s are sent again at once: a sample may fall between
	// one stream's two requests.
	assert.InDelta(t, 50, last.InFlight, 3, "every stream in flight, but one between its requests")
	assert.LessOrEqual(t, last.InFlight, 50)
	assert.Positive(t, last.CumTokensPerSec)
	assert.GreaterOrEqual(t, last.Launched, int64(50))
	assert.Positive(t, last.Engine.Running)
	assert.Greater(t, last.Simulator.Goroutines, 50, "a goroutine per connection at least")

	f := r.final
	assert.Equal(t, "duration", f.Stopped)
	assert.Zero(t, f.Failed)
	assert.Empty(t, f.Errors)
	assert.Positive(t, f.Canceled, "the streams in flight are cut at the end")
	assert.LessOrEqual(t, f.Canceled, 50)
	assert.Equal(t, f.Launched, f.Requests)
	assert.Equal(t, last.Tokens, f.Tokens)
	assert.Positive(t, f.Tokens)
	assert.InDelta(t, 5000, f.NominalTokensPerSec, 1e-9)
	assert.Empty(t, f.SimulatorExit, "the simulator exits cleanly")
	require.NotNil(t, f.Engine)
	assert.Equal(t, last.Engine.Tokens, f.Engine.Tokens)
	require.NotNil(t, f.Simulator)
	for _, ps := range []ProcSummary{f.Client, *f.Simulator} {
		require.Len(t, ps.RSSAt, 3)
		for i, fr := range checkpointFractions {
			assert.Equal(t, fr, ps.RSSAt[i].Fraction)
			assert.Positive(t, ps.RSSAt[i].RSS)
		}
		assert.Nil(t, ps.Flat, "2 s is too short to judge")
		assert.Contains(t, ps.Verdict, "not judged")
		assert.Positive(t, ps.RSSPerStream)
	}

	p, err := os.FindProcess(r.start.SimulatorPID)
	if err == nil {
		assert.Error(t, p.Signal(syscall.Signal(0)), "the simulator has exited")
	}
}

// Against a server given with -url, the text report has no simulator
// columns, and the streams still flow, on either transport.
func TestSoakURL(t *testing.T) {
	for _, tr := range []string{"stream", "http"} {
		t.Run(tr, func(t *testing.T) { testSoakURL(t, tr) })
	}
}

func testSoakURL(t *testing.T, transport string) {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{
		"-url", srv.URL + "/v1", "-streams", "10", "-duration", "1s", "-interval", "500ms", "-ramp", "0", "-max-tokens", "1000",
		"-transport", transport,
	}, &out, &errOut)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	text := out.String()
	assert.Contains(t, text, "soak: 10 streams for 1s against "+srv.URL+"/v1")
	assert.Contains(t, text, transport+" transport")
	assert.NotContains(t, text, "simulator")
	assert.Contains(t, text, "(stopped: duration)")
	assert.Contains(t, text, " 0 failed (none), ")
	assert.Contains(t, text, "client RSS not judged")
	lines := strings.Count(text, "s | ") // "   500ms |    70M ..."
	assert.True(t, lines >= 1 && lines <= 2, "one sample line or two:\n%s", text)
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-streams", "0"},
		{"-duration", "-1s"},
		{"-speed", "0"},
		{"-transport", "h2"},
		{"extra"},
		{"-nope"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(t.Context(), args, &out, &errOut), "%q", args)
		assert.NotEmpty(t, errOut.String())
	}
	var out, errOut bytes.Buffer
	run(t.Context(), []string{"-h"}, &out, &errOut)
	assert.Contains(t, errOut.String(), "-streams")
	assert.NotContains(t, errOut.String(), "-serve", "-serve is soak's own")
}

func TestCheckLimits(t *testing.T) {
	require.NoError(t, checkLimits(10))
	err := checkLimits(1 << 30)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fewer -streams")
}

func TestJudgeFlat(t *testing.T) {
	const mb = 1 << 20
	series := func(rss ...int64) []point {
		pts := make([]point, len(rss))
		for i, r := range rss {
			pts[i] = point{at: time.Duration(i+1) * time.Minute, rss: r * mb}
		}
		return pts
	}
	tests := []struct {
		name    string
		pts     []point
		warmup  time.Duration
		flat    *bool
		growth  float64
		verdict string

		liveGrowth float64
	}{
		{name: "flat", pts: series(500, 900, 910, 905, 950), warmup: 2 * time.Minute,
			flat: ptr(true), growth: 50.0 / 900, verdict: "flat: RSS +5.6% from 2m0s to 5m0s (900 MB to 950 MB, peak 950 MB); RSS limit +10%"},
		{name: "grows", pts: series(500, 900, 950, 1000, 1100), warmup: 2 * time.Minute,
			flat: ptr(false), growth: 200.0 / 900, verdict: "NOT flat: RSS +22.2%"},
		{name: "shrinks", pts: series(900, 800, 700), warmup: time.Minute,
			flat: ptr(true), growth: -200.0 / 900, verdict: "flat: RSS -22.2%"},
		{name: "too short", pts: series(500, 900, 990), warmup: 150 * time.Second,
			growth: 0, verdict: "not judged: RSS +0.0% from 3m0s to 3m0s"},
		{name: "unknown readings ignored", pts: series(0, 900, 0, 920), warmup: 0,
			flat: ptr(true), growth: 20.0 / 900, verdict: "flat: RSS +2.2% from 2m0s to 4m0s"},
		{name: "live heap", pts: []point{{time.Minute, 500 * mb, 100 * mb}, {2 * time.Minute, 520 * mb, 130 * mb}}, warmup: 0,
			flat: ptr(true), growth: 0.04, liveGrowth: 0.3, verdict: "flat: RSS +4.0% from 1m0s to 2m0s (500 MB to 520 MB, peak 520 MB), live heap +30.0% (100 MB to 130 MB); RSS limit +10%"},
		{name: "nothing after warm-up", pts: series(500, 600), warmup: time.Hour,
			verdict: "not judged: no reading after warm-up"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := judgeFlat(tc.pts, tc.warmup)
			assert.Equal(t, tc.flat, f.flat)
			assert.InDelta(t, tc.growth, f.growth, 1e-9)
			assert.InDelta(t, tc.liveGrowth, f.liveGrowth, 1e-9)
			assert.Contains(t, f.verdict, tc.verdict)
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestErrorsByKindName: failures are counted by metrics.ErrorKind and
// written by the kinds' names, in the JSON report and in the text.
func TestErrorsByKindName(t *testing.T) {
	f := Final{Errors: map[metrics.ErrorKind]int{metrics.KindStall: 2, metrics.KindConnect: 1}}
	b, err := json.Marshal(f)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"errors":{"connect":1,"stall":2}`)
	var back Final
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, f.Errors, back.Errors)
	assert.Equal(t, "connect=1 stall=2", fmtErrors(f.Errors))
	assert.Equal(t, "none", fmtErrors(nil))
}
