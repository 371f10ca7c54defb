package sweep_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/metrics"
)

// An embeddings run reports requests and input tokens a second and
// latency, in every format, and nothing of tokens it has not: no TTFT,
// TPOT or output throughput.
func TestEmbeddingsResultsSayInputAndLatency(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.Profile{PoolStep: 0.002, PoolPerToken: 1e-5, TruthBytes: -1})
	defer srv.Close()
	target := embedTarget(srv, 0, 0, 20)
	a, err := sweep.Run(t.Context(), target, loadgen.Closed{Streams: 2}, "closed", sweep.Objective{})
	require.NoError(t, err)
	b, err := sweep.Run(t.Context(), target, loadgen.Open{Rate: 200, Arrival: loadgen.Constant}, "open", sweep.Objective{})
	require.NoError(t, err)
	for _, r := range []sweep.Result{a, b} {
		assert.Equal(t, 20, r.Summary.Completed)
		assert.Equal(t, 20*embedReq, r.Summary.InputTokens, "the usage's tokens, exactly")
		assert.InEpsilon(t, float64(r.Summary.InputTokens)/r.Summary.Window.Duration().Seconds(), r.InputTokensPerSec, 1e-9)
		assert.Positive(t, r.Summary.Latency.P50)
		assert.Greater(t, r.Summary.Latency.P50, 2*time.Millisecond, "at least a step")
	}
	server := capacity.Server{URL: "simulator", Simulated: true}

	var one bytes.Buffer
	require.NoError(t, (&sweep.Results{Server: server, API: loadgen.Embeddings, Runs: []sweep.Result{a}}).Write(&one, "table"))
	assert.Contains(t, one.String(), "Input token throughput (tok/s):")
	assert.Contains(t, one.String(), "Total input tokens:                      2560")
	assert.Contains(t, one.String(), "Median E2E (ms):")
	assert.NotContains(t, one.String(), "TTFT")
	assert.NotContains(t, one.String(), "Output token throughput")

	var rows bytes.Buffer
	require.NoError(t, (&sweep.Results{Server: server, API: loadgen.Embeddings, Runs: []sweep.Result{a, b}}).Write(&rows, "table"))
	assert.Contains(t, rows.String(), "in tok/s")
	assert.NotContains(t, rows.String(), "TTFT")

	var page bytes.Buffer
	require.NoError(t, (&sweep.Results{Server: server, API: loadgen.Embeddings, Runs: []sweep.Result{a, b}}).Write(&page, "html"))
	assert.Contains(t, page.String(), "input tok/s")
	assert.NotContains(t, page.String(), "Time to first token")

	var doc bytes.Buffer
	require.NoError(t, (&sweep.Results{Schema: sweep.Schema, Server: server, API: loadgen.Embeddings, Runs: []sweep.Result{a}}).Write(&doc, "json"))
	var back struct {
		Runs []struct {
			InputTokS float64 `json:"input_tok_s"`
			Summary   struct {
				InputTokens int `json:"input_tokens"`
			} `json:"summary"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal(doc.Bytes(), &back))
	assert.Equal(t, 20*embedReq, back.Runs[0].Summary.InputTokens)
	assert.InEpsilon(t, a.InputTokensPerSec, back.Runs[0].InputTokS, 1e-9)
}

// An embeddings run's GPU energy has no output tokens to divide it by:
// every format shows "—" for tokens per joule, joules per token and the
// cost of a million tokens, not 0.
func TestEmbeddingsEnergyHasNoPerToken(t *testing.T) {
	srv := loadgentest.NewServer(loadgentest.Profile{PoolStep: 0.002, PoolPerToken: 1e-5, TruthBytes: -1})
	defer srv.Close()
	a, err := sweep.Run(t.Context(), embedTarget(srv, 0, 0, 10), loadgen.Closed{Streams: 2}, "closed", sweep.Objective{})
	require.NoError(t, err)
	a.Energy = &metrics.Energy{GPUs: 1, Samples: 3, Joules: 120, Seconds: 1, MeanWatts: 120, HourlyCost: 2}
	b := a
	b.Label = "again"
	res := &sweep.Results{Server: capacity.Server{URL: "simulator", Simulated: true}, API: loadgen.Embeddings}
	for _, runs := range [][]sweep.Result{{a}, {a, b}} {
		res.Runs = runs
		for _, f := range []string{"table", "html"} {
			var out bytes.Buffer
			require.NoError(t, res.Write(&out, f))
			assert.Contains(t, out.String(), "120.0", "%s: the energy", f)
			assert.NotRegexp(t, `(per joule|per output token|output tokens):? +0\b`, out.String(), f)
		}
	}
	var one bytes.Buffer
	res.Runs = []sweep.Result{a}
	require.NoError(t, res.Write(&one, "table"))
	assert.Regexp(t, `Output tokens per joule: +—`, one.String())
	assert.Regexp(t, `Dollars per million output tokens: +— \(at \$2 a GPU an hour\)`, one.String())
	var page bytes.Buffer
	require.NoError(t, res.Write(&page, "html"))
	assert.Contains(t, page.String(), "<td>120.0</td><td>120.0</td><td>—</td><td>—</td><td>—</td>")
	var rows bytes.Buffer
	res.Runs = []sweep.Result{a, b}
	require.NoError(t, res.Write(&rows, "table"))
	assert.Contains(t, rows.String(), "GPU J")
	assert.NotContains(t, rows.String(), "tok/J", "no output token to divide by")
}

// A table of runs of which some measured energy, and some its cost, gives
// every run a cell in every column, "—" where it has no figure.
func TestTableCellsWithSomeEnergy(t *testing.T) {
	withCost := sweep.Result{Label: "costed", Requests: 10, OutputTokensPerSec: 500}
	withCost.Summary.Completed, withCost.Summary.Canceled = 7, 3 // three cut at the window's end
	withCost.Energy = &metrics.Energy{GPUs: 1, Samples: 3, Joules: 100, Seconds: 1, MeanWatts: 100, OutputTokens: 500,
		TokensPerJoule: 5, JoulesPerToken: 0.2, HourlyCost: 2, DollarsPerMillionTokens: 1.11}
	noCost := withCost
	noCost.Label = "uncosted"
	noCost.Energy = &metrics.Energy{GPUs: 1, Samples: 3, Joules: 100, Seconds: 1, MeanWatts: 100, OutputTokens: 500, TokensPerJoule: 5, JoulesPerToken: 0.2}
	none := withCost
	none.Label = "unmeasured"
	none.Energy = nil
	res := &sweep.Results{Server: capacity.Server{URL: "simulator", Simulated: true}, API: loadgen.Chat,
		Runs: []sweep.Result{withCost, noCost, none}}
	var out bytes.Buffer
	require.NoError(t, res.Write(&out, "table"))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var head []string
	cells := map[string][]string{}
	for _, l := range lines {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "run":
			head = regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(l), -1) // a head's cells may hold one space
		case len(f) > 0 && head != nil && cells[f[0]] == nil:
			cells[f[0]] = f
		}
	}
	require.NotNil(t, head, out.String())
	assert.Equal(t, "$/M tok", head[len(head)-1], "the last column: %q", head)
	for _, label := range []string{"costed", "uncosted", "unmeasured"} {
		row := cells[label]
		require.NotNil(t, row, "%s: %s", label, out.String())
		assert.Len(t, row, len(head), "%s: a cell in every column: %q against %q", label, row, head)
	}
	assert.Equal(t, []string{"run", "requests", "completed", "failed"}, head[:4])
	assert.Equal(t, []string{"10", "7", "0"}, cells["costed"][1:4], "the requests of the window, and how they ended")
	assert.Equal(t, "1.11", cells["costed"][len(cells["costed"])-1])
	assert.Equal(t, "—", cells["uncosted"][len(cells["uncosted"])-1])
	assert.Equal(t, []string{"—", "—", "—", "—", "—"}, cells["unmeasured"][len(cells["unmeasured"])-5:])
}

// A run's block gives the throughput's divisor where it is not the
// window's length: tokens ÷ that time is the printed throughput. (The run,
// built by hand without a Load, is written without one.)
func TestBlockSaysWhatThroughputIsOver(t *testing.T) {
	start := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	r := sweep.Result{Label: "c8", Requests: 10, RequestRate: 1, OutputTokensPerSec: 1000}
	r.Summary.Window = metrics.Window{Start: start, End: start.Add(10 * time.Second)}
	r.Summary.Completed, r.Summary.OutputTokens, r.Summary.MeasuredFor = 10, 9500, 9500*time.Millisecond
	res := &sweep.Results{Server: capacity.Server{URL: "simulator", Simulated: true}, API: loadgen.Chat, Runs: []sweep.Result{r}}
	var out bytes.Buffer
	require.NoError(t, res.Write(&out, "table"))
	assert.Regexp(t, `Benchmark duration \(s\): +10\.00\n`, out.String())
	assert.Regexp(t, `Measured to the last token \(s\): +9\.50\n`, out.String())
	assert.Regexp(t, `Total generated tokens: +9500\n`, out.String())
	assert.Regexp(t, `Output token throughput \(tok/s\): +1000\.00\n`, out.String())

	res.Runs[0].Summary.MeasuredFor = 10 * time.Second
	out.Reset()
	require.NoError(t, res.Write(&out, "table"))
	assert.NotContains(t, out.String(), "Measured to the last token", "the window's length is the divisor")
}
