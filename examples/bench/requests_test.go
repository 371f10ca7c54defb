package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/sweep"
)

// requestLine is the part of a -requests-out line the tests read.
type requestLine struct {
	Run          string     `json:"run"`
	Model        string     `json:"model"`
	Window       string     `json:"window"`
	Outcome      string     `json:"outcome"`
	Error        string     `json:"error"`
	Due          time.Time  `json:"due"`
	Start        time.Time  `json:"start"`
	Sent         time.Time  `json:"sent"`
	First        time.Time  `json:"first"`
	End          time.Time  `json:"end"`
	TTFT         float64    `json:"ttft_ms"`
	OutputTokens int        `json:"output_tokens"`
	Server       *struct{}  `json:"server"`
	Split        *splitLine `json:"split"`
}

type splitLine struct {
	Queue   float64 `json:"queue_ms"`
	Prefill float64 `json:"prefill_ms"`
	Rest    float64 `json:"rest_ms"`
}

// readRequests parses every line of a -requests-out file, failing the test
// on one that is not a JSON object.
func readRequests(t *testing.T, path string) []requestLine {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var lines []requestLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l requestLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), "line %d: %s", len(lines)+1, sc.Text())
		lines = append(lines, l)
	}
	require.NoError(t, sc.Err())
	return lines
}

// The export has a line for every request the report counts, in the same
// outcome, warm-up apart: an open loop with a warm-up and a window that
// cuts requests, so every kind of line is there.
func TestRequestsOutMatchesReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	code, out, errOut := bench(t, append(quick, "-profile", "poisson", "-rate", "60", "-duration", "1s", "-warmup", "400ms",
		"-output-len", "300", "-format", "json", "-quiet", "-requests-out", path)...)
	require.Equal(t, 0, code, errOut)
	res, err := sweep.ReadResults(strings.NewReader(out))
	require.NoError(t, err)
	s := res.Runs[0].Summary

	lines := readRequests(t, path)
	require.Len(t, lines, s.Requests, "a line a request")
	count := map[string]int{}
	for _, l := range lines {
		assert.Equal(t, res.Runs[0].Label, l.Run)
		assert.Equal(t, "bench", l.Model)
		count[l.Window]++
		if l.Window != "before" {
			count[l.Outcome]++
			if l.Outcome == "completed" && l.Window == "after" {
				count["outside"]++
			}
		}
		// A request cancelled at the window's end before it was written
		// has no sent time (a starved machine cuts some so).
		if !l.Sent.IsZero() {
			assert.False(t, l.Sent.Before(l.Start), "sent before it started")
		} else {
			assert.NotEqual(t, "completed", l.Outcome, "a completed request was sent")
		}
		assert.False(t, l.Start.Before(l.Due), "started before it was due")
		if l.Outcome == "completed" {
			assert.Positive(t, l.OutputTokens)
			// ttft_ms is read on the monotonic clock, the times are the
			// wall clock's, which the system may slew by up to 0.05%
			// while it is corrected: 1 µs of rounding, and that.
			assert.InDelta(t, float64(l.First.Sub(l.Sent))/1e6, l.TTFT, 0.001+l.TTFT*5e-4)
		}
	}
	assert.Equal(t, s.WarmupRequests, count["before"], "warm-up")
	assert.Positive(t, s.WarmupRequests)
	assert.Equal(t, s.Completed+s.CompletedOutside, count["completed"], "completed")
	assert.Equal(t, s.CompletedOutside, count["outside"], "completed after the window")
	assert.Equal(t, s.Failed, count["failed"], "failed")
	assert.Equal(t, s.Canceled, count["canceled"], "canceled")
	assert.Positive(t, s.Canceled, "the window's end cut some requests")
}

func TestRequestsOutUnwritable(t *testing.T) {
	code, _, errOut := bench(t, append(quick, "-requests-out", filepath.Join(t.TempDir(), "no", "such", "dir.jsonl"))...)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "-requests-out")
}

// TestServerTimingsByEngine: requests ask for the server's own timings by
// default of a server identified as vLLM (the simulator, given by -url,
// answers as vLLM does), so every request's line holds the split;
// -server-timings=false turns it off.
func TestServerTimingsByEngine(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	for _, tc := range []struct {
		flags []string
		split bool
	}{{nil, true}, {[]string{"-server-timings=false"}, false}, {[]string{"-server-timings"}, true}} {
		path := filepath.Join(t.TempDir(), "requests.jsonl")
		args := append([]string{"-url", srv.URL + "/v1", "-model", loadgentest.DefaultModel, "-input-len", "100", "-output-len", "4",
			"-requests", "6", "-concurrency", "2", "-warmup", "0", "-quiet", "-requests-out", path}, tc.flags...)
		code, _, errOut := bench(t, args...)
		require.Equal(t, 0, code, errOut)
		lines := readRequests(t, path)
		require.Len(t, lines, 6)
		for _, l := range lines {
			assert.Equal(t, tc.split, l.Split != nil, "%v: the server's timings in every line", tc.flags)
		}
	}
}
