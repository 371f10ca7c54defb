package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/cmd/matrixcmd"
	"github.com/llmload/llmload/internal/harness/headless"
	"github.com/llmload/llmload/internal/harness/logbuffer"
	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/internal/tokencount"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/report"
)

var seedRun = flag.Bool("seed-run", false, "run the whole default matrix and compare it with the seed page (about a minute)")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) {
		if binDir != "" {
			os.RemoveAll(binDir)
		}
	}))
}

// small is a quick matrix against the simulator: 2 contexts × 2 levels.
func small(results string, extra ...string) []string {
	return append([]string{"-contexts", "0,4K", "-concurrency", "1,2", "-prefill", "4K", "-duration", "6s",
		"-max-tokens", "4096", "-speed", "20", "-results", results, "-quiet"}, extra...)
}

func TestSmallRunJSONContract(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code := run(t.Context(), small(filepath.Join(dir, "r.json"), "-format", "json"), &out, &errOut)
	require.Equal(t, 0, code, errOut.String())

	// The JSON contract, read as other tools read it: untyped.
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	assert.Equal(t, matrix.Schema, doc["schema"])
	prefill := doc["prefill"].([]any)
	require.Len(t, prefill, 1)
	for _, k := range []string{"context_tokens", "prompt_tokens", "ttft_ms", "prompt_tok_s"} {
		assert.IsType(t, float64(0), prefill[0].(map[string]any)[k], k)
	}
	cells := doc["cells"].([]any)
	require.Len(t, cells, 4)
	for _, ci := range cells {
		c := ci.(map[string]any)
		// Valid on a quiet machine; a loaded one may leave a stream waiting.
		assert.Contains(t, []any{"valid", "requests_queued"}, c["status"], "%v × %v: %v", c["context_tokens"], c["concurrency"], c["reason"])
		for _, k := range []string{"context_tokens", "concurrency", "total_tok_s", "per_request_tok_s", "avg_active", "completed", "output_tokens", "measured_s", "errors"} {
			assert.IsType(t, float64(0), c[k], k)
		}
		for _, k := range []string{"ttft_ms", "tbt_ms"} {
			q := c[k].(map[string]any)
			for _, p := range []string{"p50", "p90", "p99"} {
				assert.IsType(t, float64(0), q[p], "%s.%s", k, p)
			}
		}
		assert.Contains(t, c, "predicted")
		// One clock: the file holds wall time, a 6 s window of the
		// simulated server's time at 20× speed is 0.3 s, and the cell's
		// figures and its recording agree.
		// A starved machine closes the window late, never early: the
		// bound above is loose, and still far from the 6 s a file in the
		// server's time would hold.
		assert.GreaterOrEqual(t, c["measured_s"], 0.3-0.015, "in wall time")
		assert.Less(t, c["measured_s"], 1.5, "in wall time, not the server's 6 s")
		summary := c["recording"].(map[string]any)["summary"].(map[string]any)
		assert.InEpsilon(t, c["total_tok_s"], summary["total_tok_s"], 1e-9, "the cell's total and its recording's")
		ttft := summary["ttft"].(map[string]any)["p50"].(float64) / 1e6 // the recording's durations are in nanoseconds
		assert.InEpsilon(t, c["ttft_ms"].(map[string]any)["p50"], ttft, 1e-6, "the cell's TTFT and its recording's")
	}
	assert.Equal(t, "300ms", doc["spec"].(map[string]any)["duration"], "the spec too is in wall time")
	// The results file holds the same run.
	saved, err := matrix.LoadFile(filepath.Join(dir, "r.json"))
	require.NoError(t, err)
	assert.True(t, saved.Complete)
	assert.Equal(t, "simulator", saved.Spec.URL)
	assert.True(t, saved.Server.Simulated)
	assert.EqualValues(t, 20, saved.Server.Speed)
}

func TestFormatsAndCompare(t *testing.T) {
	longtest.Skip(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run(t.Context(), small(a), &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "Sustained decode")
	assert.Contains(t, out.String(), "simulated by llmload at 20× speed")
	out.Reset()
	require.Equal(t, 0, run(t.Context(), small(b, "-format", "csv"), &out, &errOut), errOut.String())
	rows, err := csv.NewReader(&out).ReadAll()
	require.NoError(t, err)
	assert.Equal(t, "phase", rows[0][0])
	assert.Len(t, rows, 1+1+4, "header, one prefill row, four cells")

	out.Reset()
	require.Equal(t, 0, run(t.Context(), []string{"-compare", "-format", "json", a, b}, &out, &errOut), errOut.String())
	var cmp map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &cmp))
	assert.NotEmpty(t, cmp)

	// Repeated runs of each side.
	out.Reset()
	require.Equal(t, 0, run(t.Context(), []string{"-compare", a + "," + b, b + "," + a}, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "· 2 runs")
	_, grid, _ := strings.Cut(out.String(), "Sustained decode")
	assert.NotEmpty(t, grid)
	assert.NotContains(t, grid, "▲", "the same runs on both sides: no change")
	assert.NotContains(t, grid, "▼", "the same runs on both sides: no change")

	html := filepath.Join(dir, "r.html")
	require.Equal(t, 0, run(t.Context(), []string{"-compare", "-format", "html", "-o", html, a, b}, &out, &errOut), errOut.String())
	page, err := os.ReadFile(html)
	require.NoError(t, err)
	assert.Contains(t, string(page), "<html")

	assert.Equal(t, 2, run(t.Context(), []string{"-format", "pdf"}, &out, &errOut))
	assert.Equal(t, 2, run(t.Context(), []string{"-compare", a}, &out, &errOut))
}

// TestAPIKeyNeverWritten runs against a server with an API key and checks
// that the key appears in no output, log, results file or report.
func TestAPIKeyNeverWritten(t *testing.T) {
	const key = "sk-llmload-secret-9f8e7d6c"
	t.Setenv("LLMLOAD_TEST_KEY", key)
	p := loadgentest.SeedProfile()
	p.Speed = 20
	srv := loadgentest.NewServer(p)
	defer srv.Close()
	dir := t.TempDir()
	results := filepath.Join(dir, "r.json")
	var out, errOut bytes.Buffer
	args := []string{"-url", srv.URL + "/v1", "-model", "bench", "-api-key-env", "LLMLOAD_TEST_KEY",
		"-contexts", "0", "-concurrency", "1", "-prefill", "", "-duration", "4s", "-max-tokens", "64", "-results", results}
	require.Equal(t, 0, run(t.Context(), append(args, "-format", "html", "-o", filepath.Join(dir, "r.html")), &out, &errOut), errOut.String())
	// Every other format, rendered from the saved run.
	for _, format := range []string{"markdown", "json", "csv"} {
		require.Equal(t, 0, run(t.Context(), []string{"-render", results, "-format", format, "-o", filepath.Join(dir, "report."+format)}, &out, &errOut), errOut.String())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.NotContains(t, string(b), key, f)
		assert.NotContains(t, string(b), "secret-9f8e", f)
	}
	assert.NotContains(t, out.String(), key)
	assert.NotContains(t, errOut.String(), key)
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// buildMatrix builds this command, once per test binary.
func buildMatrix(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "llmload-matrix-")
		if buildErr == nil {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, "matrix"), ".")
			cmd.Stderr = os.Stderr
			buildErr = cmd.Run()
		}
	})
	require.NoError(t, buildErr)
	return filepath.Join(binDir, "matrix")
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// TestInterruptAndResume runs the command as a real process, interrupts
// it with a real SIGINT in the middle of a cell, checks the results file,
// and finishes the run with -resume.
func TestInterruptAndResume(t *testing.T) {
	longtest.Skip(t)
	if testing.Short() {
		t.Skip("builds and runs the command")
	}
	bin := buildMatrix(t)
	dir := t.TempDir()
	results := filepath.Join(dir, "r.json")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	live := ln.Addr().String()
	ln.Close()
	args := []string{"-contexts", "0", "-concurrency", "1,2,4,8", "-prefill", "", "-duration", "30s", "-max-tokens", "2048",
		"-speed", "20", "-results", results, "-format", "json", "-metrics-listen", live}
	cmd := exec.Command(bin, args...)
	var stderr logbuffer.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	finished := func() int {
		r, err := matrix.LoadFile(results)
		if err != nil {
			return 0
		}
		n := 0
		for _, c := range r.Cells {
			if c.Status != matrix.StatusUnknown && (c.Measurement == nil || !c.Measurement.Partial) {
				n++
			}
		}
		return n
	}
	if !waitFor(t, 60*time.Second, func() bool { return finished() >= 1 }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no cell finished: %s", stderr.String())
	}
	// Into the next cell's window: it opened, and the cell's 2 streams
	// have 200 tokens more since.
	tokens := func() (float64, bool) {
		v, ok := scrapeCells(t, "http://"+live+"/metrics")[[2]string{"0 × 2", ""}]
		return v[1], ok
	}
	var base float64
	opened := func() (ok bool) {
		if strings.Count(stderr.String(), "the window opens") < 2 {
			return false
		}
		base, ok = tokens()
		return ok
	}
	if !waitFor(t, 60*time.Second, opened) ||
		!waitFor(t, 60*time.Second, func() bool { n, ok := tokens(); return ok && n-base >= 200 }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the second cell's window did not open, or had no tokens: %s", stderr.String())
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode(), stderr.String())
	assert.Contains(t, stderr.String(), "-resume")

	r, err := matrix.LoadFile(results)
	require.NoError(t, err, "the interrupted run left valid JSON")
	assert.False(t, r.Complete)
	done, partial := 0, 0
	for _, c := range r.Cells {
		switch {
		case c.Measurement != nil && c.Measurement.Partial:
			partial++
			assert.Positive(t, c.Measurement.OutputTokens, "the partial cell keeps what it measured")
		case c.Status != matrix.StatusUnknown:
			done++
		}
	}
	assert.GreaterOrEqual(t, done, 1)
	assert.Equal(t, 1, partial, "the cell in progress is kept, marked partial")
	first := *r.Cells[0].Measurement

	cmd = exec.Command(bin, "-resume", results, "-quiet", "-format", "json")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	r, err = matrix.LoadFile(results)
	require.NoError(t, err)
	assert.True(t, r.Complete)
	for _, c := range r.Cells {
		assert.Equal(t, matrix.Valid, c.Status, "%d × %d", c.ContextTokens, c.Concurrency)
		assert.False(t, c.Measurement.Partial)
	}
	assert.Equal(t, first.OutputTokens, r.Cells[0].Measurement.OutputTokens, "finished cells are not redone")
}

func TestSecondInterruptExitsAtOnce(t *testing.T) {
	longtest.Skip(t)
	if testing.Short() {
		t.Skip("builds and runs the command")
	}
	// A build whose every save takes 5 s, so the first interrupt's
	// clean-up is slow.
	bin := filepath.Join(t.TempDir(), "matrix")
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X github.com/llmload/llmload/internal/cmd/matrixcmd.saveDelay=5s", ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())
	results := filepath.Join(t.TempDir(), "r.json")
	cmd := exec.Command(bin, "-contexts", "0", "-concurrency", "1", "-prefill", "", "-duration", "600s", "-speed", "1", "-results", results, "-quiet")
	var stderr logbuffer.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	// The plan is saved: the run is under way, and its clean-up saves.
	waitFor(t, 30*time.Second, func() bool { _, err := os.Stat(results); return err == nil })
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	// The first interrupt is taken: the clean-up, and its slow save, began.
	require.True(t, waitFor(t, 10*time.Second, func() bool { return strings.Contains(stderr.String(), "again to quit at once") }), stderr.String())
	sent := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, 130, exit.ExitCode())
		assert.Less(t, time.Since(sent), 2*time.Second, "the second interrupt exits at once")
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("did not exit after two interrupts")
	}
}

// TestSeedMatrix runs the default matrix, the README's main job, and
// compares its report with the seed page: the same Over capacity cells,
// and every Valid cell up to 64K within 10% of the seed's total tok/s, in
// the simulated server's time, as the CSV report says it (the results file
// holds wall time, 20× as many tok/s). It takes about a minute and wants a
// quiet machine, so it runs only with -seed-run (CI runs it, without the
// race detector).
func TestSeedMatrix(t *testing.T) {
	if !*seedRun {
		t.Skip("run with -seed-run")
	}
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	start := time.Now()
	code := run(context.Background(), []string{"-results", filepath.Join(dir, "r.json"), "-format", "csv"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	t.Logf("the default matrix took %v", time.Since(start))
	assert.Less(t, time.Since(start), 3*time.Minute)
	report, err := csv.NewReader(&out).ReadAll()
	require.NoError(t, err)
	got := map[[2]string][]string{}
	for _, row := range report[1:] {
		got[[2]string{row[1], row[2]}] = row
	}
	res, err := matrix.LoadFile(filepath.Join(dir, "r.json"))
	require.NoError(t, err)
	assert.EqualValues(t, DefaultSpeed, res.Server.Speed)

	f, err := os.Open(filepath.Join("testdata", "seed-measurements.csv"))
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	cells := 0
	for _, row := range rows[1:] {
		if row[0] != "decode" {
			continue
		}
		ctx, _ := strconv.Atoi(row[1])
		n, _ := strconv.Atoi(row[2])
		label := tokencount.Format(ctx) + " × " + row[2]
		c := res.Cell(ctx, n)
		require.NotNil(t, c, label)
		r, ok := got[[2]string{row[1], row[2]}]
		require.True(t, ok, "%s is in the report", label)
		cells++
		if row[3] == "over_capacity" {
			assert.Equal(t, "over_capacity", r[3], "%s is over capacity on the seed page", label)
			continue
		}
		assert.NotEqual(t, "over_capacity", r[3], "%s ran on the seed page", label)
		if row[3] == "valid" && ctx <= 64*1024 {
			seed, _ := strconv.ParseFloat(row[4], 64)
			total, err := strconv.ParseFloat(r[4], 64)
			require.NoError(t, err, "%s: %q", label, r[4])
			assert.InEpsilon(t, seed, total, 0.10, "%s: %.1f tok/s, the seed %.1f (%s)", label, total, seed, strings.TrimSpace(c.Reason))
			require.NotNil(t, c.Measurement)
			assert.InDelta(t, total*DefaultSpeed, c.Measurement.OutputTokensPerSec, 0.05*DefaultSpeed, "%s: the file holds wall time (the report rounds to 0.1 tok/s)", label)
		}
	}
	assert.Equal(t, 48, cells)
	checkSeries(t, res)
}

// checkSeries checks the time series of a default matrix's results: each
// measured cell has one; as JSON, they add at most 2 MB to the file; and
// the HTML report, opened in Chromium, shows each cell's charts.
func checkSeries(t *testing.T, res *matrix.Results) {
	var with, without bytes.Buffer
	require.NoError(t, report.Write(&with, report.JSON, res))
	bare := *res
	bare.Cells = slices.Clone(res.Cells)
	measured := map[string]bool{}
	buckets := 0
	for i := range bare.Cells {
		c := &bare.Cells[i]
		if c.Measurement == nil {
			continue
		}
		label := tokencount.Format(c.ContextTokens) + " × " + strconv.Itoa(c.Concurrency)
		require.NotNil(t, c.Measurement.Series, "%s has a time series", label)
		measured[label] = true
		buckets += len(c.Measurement.Series.TokensPerSec)
		m := *c.Measurement
		m.Series = nil
		c.Measurement = &m
	}
	require.NoError(t, report.Write(&without, report.JSON, &bare))
	t.Logf("JSON of %d cells (%d measured, %d buckets of series): %d bytes with the series, %d without: %d more",
		len(res.Cells), len(measured), buckets, with.Len(), without.Len(), with.Len()-without.Len())
	assert.Less(t, with.Len()-without.Len(), 2<<20, "the series add at most 2 MB")

	browser := headless.Find()
	if browser == "" {
		t.Skipf("no headless Chromium on PATH (looked for %s): the HTML report is not opened", strings.Join(headless.Names, ", "))
	}
	page := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(page)
	require.NoError(t, err)
	require.NoError(t, report.Write(f, report.HTML, res))
	require.NoError(t, f.Close())
	dom, err := headless.Run(t.Context(), browser, t.TempDir(), "--dump-dom", "file://"+page)
	require.NoError(t, err)
	charted := map[string]bool{}
	for _, b := range strings.Split(string(dom), `<div class="seriescell" data-cell="`)[1:] {
		label, _, _ := strings.Cut(b, `"`)
		charted[label] = true
		assert.Equal(t, 3, strings.Count(b, `<svg class="plot"`), "%s: three charts", label)
		assert.Contains(t, b, "<polyline", "%s: its lines", label)
		assert.Contains(t, b, "<title>", "%s: its figures on hover", label)
	}
	assert.Equal(t, measured, charted, "the report charts every measured cell over time")
}

// TestWriteHints: before a run against a server that did not publish every
// limit, the command names the flag for each, with where the engine keeps
// it and what it means for the plan; a simulated run needs none.
func TestWriteHints(t *testing.T) {
	var b strings.Builder
	matrixcmd.WriteHints(&b, &matrix.Results{Server: capacity.Server{Engine: "vllm", Limits: capacity.Limits{KVTokens: 1000, MaxModelLen: 4096}}})
	assert.Equal(t, "vllm did not publish every limit; to make the plan exact, pass:\n"+
		"  -max-num-seqs N (the requests it runs at once, vLLM's --max-num-seqs, 256 by default; beyond it cells are predicted to queue)\n", b.String())

	b.Reset()
	matrixcmd.WriteHints(&b, &matrix.Results{Server: capacity.Server{Engine: "ollama"}})
	assert.Contains(t, b.String(), "  -kv-tokens N (or -max-num-seqs: ollama holds a context per slot)\n")
	assert.Contains(t, b.String(), "  -max-model-len N (its context length, Ollama's OLLAMA_CONTEXT_LENGTH")

	b.Reset()
	matrixcmd.WriteHints(&b, &matrix.Results{Server: capacity.Server{Simulated: true}})
	assert.Empty(t, b.String())
}
