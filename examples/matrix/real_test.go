package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/tokencount"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/report"
)

// TestRealServerMatrix runs the matrix against a real server and checks
// what must hold on any engine. It runs only when LLMLOAD_REAL_URL gives
// the server's API base URL (such as http://127.0.0.1:11434/v1), with
// LLMLOAD_REAL_MODEL its model and LLMLOAD_REAL_SLOTS the number of
// requests it runs at once (Ollama's OLLAMA_NUM_PARALLEL, llama.cpp's
// --parallel), which engines do not all publish: for example Ollama with
// OLLAMA_NUM_PARALLEL=4 serving a small model.
//
// With short requests (128 tokens) and both APIs: every cell and prefill
// row that fits reports the prompt size the server counted within 5% of its
// label; rows beyond the server's context are never measured (predicted
// over capacity from its published context length, or, when a proxy hides
// it, found truncated by the server); cells up to the slot count are Valid
// and beyond it Requests queued; no cell warms up for more than 20 s.
func TestRealServerMatrix(t *testing.T) {
	base := os.Getenv("LLMLOAD_REAL_URL")
	if base == "" {
		t.Skip("set LLMLOAD_REAL_URL, LLMLOAD_REAL_MODEL and LLMLOAD_REAL_SLOTS to run against a real server")
	}
	model := os.Getenv("LLMLOAD_REAL_MODEL")
	slots, _ := strconv.Atoi(os.Getenv("LLMLOAD_REAL_SLOTS"))
	d, err := capacity.DiscoverModel(t.Context(), nil, base, model)
	require.NoError(t, err)
	ctxLen := d.Limits.MaxModelLen
	require.Positive(t, ctxLen, "the server publishes no context length; this test needs one")
	t.Logf("%s %s: context %d, %d slots", d.Engine, d.Version, ctxLen, slots)

	quarter, half := ctxLen/4, ctxLen/2
	beyond := 2 * ctxLen
	concurrency := []int{1}
	if slots > 1 {
		concurrency = append(concurrency, slots)
	}
	if slots > 0 {
		concurrency = append(concurrency, 2*slots)
	}
	list := func(v ...int) string {
		s := make([]string, len(v))
		for i, n := range v {
			s[i] = strconv.Itoa(n)
		}
		return strings.Join(s, ",")
	}
	for _, api := range []string{"chat", "completions"} {
		t.Run(api, func(t *testing.T) {
			res := runReal(t, base, model, "-api", api, "-contexts", list(0, quarter, half, beyond),
				"-concurrency", list(concurrency...), "-prefill", list(quarter, half, beyond))
			checkReal(t, res, ctxLen, slots)
		})
	}

	// Behind a gateway that passes only the OpenAI API, the server's own
	// endpoints are out of reach: its context length is unknown, the rows
	// beyond it are sent, and the server's truncation must be seen.
	t.Run("limits hidden", func(t *testing.T) {
		u, err := url.Parse(strings.TrimSuffix(base, "/v1"))
		require.NoError(t, err)
		proxy := httputil.NewSingleHostReverseProxy(u)
		gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasPrefix(r.URL.Path, "/v1/") {
				http.NotFound(w, r)
				return
			}
			proxy.ServeHTTP(w, r)
		}))
		defer gateway.Close()
		res := runReal(t, gateway.URL+"/v1", model, "-contexts", list(quarter, beyond), "-concurrency", "1", "-prefill", list(half, beyond))
		assert.Zero(t, res.Server.Limits.MaxModelLen, "hidden")
		checkReal(t, res, ctxLen, slots)
		for _, c := range res.Cells {
			if c.ContextTokens == beyond {
				assert.Contains(t, c.Reason, "truncat", "found by the server's count, not predicted")
			}
		}
	})
}

// runReal runs the matrix command with short requests and returns its
// results.
func runReal(t *testing.T, url, model string, args ...string) *matrix.Results {
	t.Helper()
	file := filepath.Join(t.TempDir(), "r.json")
	var out, errOut bytes.Buffer
	args = append([]string{"-url", url, "-model", model, "-max-tokens", "128", "-duration", "5s",
		"-results", file, "-format", "json"}, args...)
	code := run(t.Context(), args, &out, &errOut)
	t.Log(errOut.String())
	require.Equal(t, 0, code)
	res, err := matrix.ReadResults(&out)
	require.NoError(t, err)
	var table bytes.Buffer
	require.NoError(t, report.Write(&table, report.Table, res))
	t.Log(table.String())
	return res
}

// checkReal asserts what must hold of a real server's results.
func checkReal(t *testing.T, res *matrix.Results, ctxLen, slots int) {
	t.Helper()
	fits := func(context int) bool { return context+128+capacity.DefaultTemplateOverhead <= ctxLen }
	near := func(label, counted int) string {
		return fmt.Sprintf("%d counted for %d (%+.1f%%)", counted, label, 100*float64(counted-label)/float64(label))
	}
	for _, p := range res.Prefill {
		if p.ContextTokens+1+capacity.DefaultTemplateOverhead > ctxLen {
			assert.Equal(t, matrix.OverCapacity, p.Status, "prefill %d beyond the context: %s", p.ContextTokens, p.Reason)
			continue
		}
		assert.Equal(t, matrix.Valid, p.Status, "prefill %d: %s", p.ContextTokens, p.Reason)
		assert.InEpsilon(t, p.ContextTokens, p.PromptTokens, 0.05, "prefill %s", near(p.ContextTokens, p.PromptTokens))
	}
	for _, p := range res.Prefill {
		t.Logf("prefill %-5s %-15s prompt_tokens %5d", tokencount.Format(p.ContextTokens), p.Status, p.PromptTokens)
	}
	for _, c := range res.Cells {
		warm := 0.0
		if c.Measurement != nil {
			warm = c.Measurement.WarmupS
		}
		t.Logf("cell %-5s × %-3d %-15s prompt_tokens %5d  warm-up %4.1f s  %s", tokencount.Format(c.ContextTokens), c.Concurrency, c.Status, c.PromptTokens, warm, c.Reason)
	}
	for _, c := range res.Cells {
		label := fmt.Sprintf("%s × %d", tokencount.Format(c.ContextTokens), c.Concurrency)
		if !fits(c.ContextTokens) {
			assert.Equal(t, matrix.OverCapacity, c.Status, "%s beyond the context: %s", label, c.Reason)
			continue
		}
		require.NotNil(t, c.Measurement, "%s: %s %s", label, c.Status, c.Reason)
		if c.ContextTokens > 0 {
			assert.InEpsilon(t, c.ContextTokens, c.PromptTokens, 0.05, "%s: %s", label, near(c.ContextTokens, c.PromptTokens))
		}
		assert.LessOrEqual(t, c.Measurement.WarmupS, 20.0, "%s warmed up for %.1f s: %s", label, c.Measurement.WarmupS, c.Measurement.WarmupEnded)
		switch {
		case slots == 0:
		case c.Concurrency <= slots:
			assert.Equal(t, matrix.Valid, c.Status, "%s: %s", label, c.Reason)
		default:
			assert.Equal(t, matrix.RequestsQueued, c.Status, "%s: %s", label, c.Reason)
		}
	}
}
