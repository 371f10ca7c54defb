package report

import (
	"github.com/llmload/llmload/matrix"

	"bytes"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/metrics"
)

// nextResults is the seed run measured again after a change: context 0
// faster with a lower TTFT, 16K slower with a higher one, 128K × 1 no longer queued, 64K × 16 now
// fits, the 248K row and the 128K prefill not run, on the simulator.
func nextResults(t testing.TB) *matrix.Results {
	t.Helper()
	r := seedResults(t)
	r.Server.Simulated, r.Server.Speed = true, 20
	r.Server.Engine = ""
	r.Server.URL = "http://127.0.0.1:41234/v1"
	r.Prefill = r.Prefill[:len(r.Prefill)-1]
	r.Prefill[0].PromptTokensPerSec *= 1.2
	r.Prefill[0].TTFT /= 1.2
	cells := r.Cells[:0]
	for _, c := range r.Cells {
		if c.ContextTokens == 248*tokensK {
			continue
		}
		if c.Measurement != nil {
			m := *c.Measurement
			c.Measurement = &m
			f, ttft := 1.01, 1.02
			switch c.ContextTokens {
			case 0:
				f, ttft = 1.12, 0.9
			case 16 * tokensK:
				f, ttft = 0.87, 1.25
			}
			m.OutputTokensPerSec *= f
			m.PerRequestTokensPerSec *= f
			m.TBT.P50 /= f
			m.TTFT.P50 *= ttft
		}
		switch {
		case c.ContextTokens == 128*tokensK && c.Concurrency == 1:
			c.Status, c.Reason = matrix.Valid, ""
		case c.ContextTokens == 64*tokensK && c.Concurrency == 16:
			c.Status, c.Reason = matrix.Valid, ""
			c.Measurement = &matrix.Measurement{OutputTokensPerSec: 131.3, PerRequestTokensPerSec: 8.1, TTFT: matrix.Quantiles{P50: 8_820},
				TBT: matrix.Quantiles{P50: 121.9}, AvgActive: 16, OutputTokens: 3_939, MeasuredS: 30}
		}
		cells = append(cells, c)
	}
	r.Cells = cells
	r.Complete = true
	return inWallTime(r) // the figures above are the simulated server's; results hold wall time
}

// inWallTime is r, whose figures are in the simulated server's time, in
// wall time: read back as a file of schema v1, which held them so.
func inWallTime(r *matrix.Results) *matrix.Results {
	r.Schema = "llmload.matrix/v1"
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	w, err := matrix.ReadResults(bytes.NewReader(b))
	if err != nil {
		panic(err)
	}
	return w
}

func TestCompare(t *testing.T) {
	cmp := compareTwo(seedResults(t), nextResults(t))
	require.Equal(t, comparisonSchema, cmp.Schema)

	tests := []struct {
		name                     string
		ctx, n                   int
		presence                 Presence
		total, ttft              Change
		ratio                    float64
		baseMeasured, nextMeasur bool
		note                     string
	}{
		{"faster", 0, 1, inBoth, changeBetter, changeBetter, 1.12, true, true, ""},
		{"slower", 16 * tokensK, 8, inBoth, changeWorse, changeWorse, 0.87, true, true, ""},
		{"within the threshold", 32 * tokensK, 4, inBoth, changeSame, changeSame, 1.01, true, true, ""},
		{"status change", 128 * tokensK, 1, inBoth, changeSame, changeSame, 1.01, true, true, "Requests queued → Valid"},
		{"measured in next only", 64 * tokensK, 16, inBoth, "", "", 0, false, true, "Over capacity → Valid"},
		{"in base only", 248 * tokensK, 1, onlyInBase, "", "", 0, false, false, "only in base"},
		{"over capacity in both", 0, 128, inBoth, "", "", 0, false, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cmp.Cell(tc.ctx, tc.n)
			require.NotNil(t, c)
			assert.Equal(t, tc.presence, c.Presence)
			assert.Equal(t, tc.baseMeasured, c.BaseMeasured)
			assert.Equal(t, tc.nextMeasur, c.NextMeasured)
			assert.Equal(t, tc.note, c.Note())
			if tc.ratio == 0 {
				assert.False(t, c.OutputTokensPerSec.compared())
				return
			}
			require.True(t, c.OutputTokensPerSec.compared())
			assert.InDelta(t, tc.ratio, c.OutputTokensPerSec.Ratio, 1e-9)
			assert.Equal(t, tc.total, c.OutputTokensPerSec.Change)
			assert.Equal(t, tc.total, c.PerRequestTokensPerSec.Change, "per-request tok/s moves with the total")
			assert.Equal(t, tc.ttft, c.TTFTp50.Change)
			// Time between tokens fell as tok/s rose: lower is better.
			assert.Equal(t, tc.total, c.TBTp50.Change)
		})
	}
	t.Run("prefill", func(t *testing.T) {
		require.Len(t, cmp.Prefill, 5)
		assert.InDelta(t, 1.2, cmp.Prefill[0].PromptTokensPerSec.Ratio, 1e-9)
		assert.Equal(t, changeBetter, cmp.Prefill[0].PromptTokensPerSec.Change)
		assert.Equal(t, changeBetter, cmp.Prefill[0].TTFT.Change, "a lower TTFT is better")
		last := cmp.Prefill[4]
		assert.Equal(t, onlyInBase, last.Presence)
		assert.False(t, last.PromptTokensPerSec.compared())
		assert.InDelta(t, 600.0, last.PromptTokensPerSec.Base, 1e-9)
	})
	t.Run("with itself", func(t *testing.T) {
		self := compareTwo(seedResults(t), seedResults(t))
		for _, c := range self.Cells {
			if c.OutputTokensPerSec.compared() {
				assert.Equal(t, changeSame, c.OutputTokensPerSec.Change)
				assert.InDelta(t, 1.0, c.OutputTokensPerSec.Ratio, 1e-12)
			}
			assert.False(t, c.StatusChanged)
		}
	})
	t.Run("nil runs", func(t *testing.T) {
		c := compareTwo(nil, simulatedResults())
		for _, x := range c.Cells {
			assert.Equal(t, onlyInNext, x.Presence)
		}
		assert.Empty(t, compareTwo(nil, nil).Cells)
	})
}

func TestNewRatio(t *testing.T) {
	tests := []struct {
		name          string
		base, next    float64
		lowerIsBetter bool
		want          *Ratio
	}{
		{"up", 100, 112, false, &Ratio{Base: 100, Next: 112, Ratio: 1.12, Change: changeBetter}},
		{"down", 100, 87, false, &Ratio{Base: 100, Next: 87, Ratio: 0.87, Change: changeWorse}},
		{"latency up", 100, 112, true, &Ratio{Base: 100, Next: 112, Ratio: 1.12, Change: changeWorse}},
		{"latency down", 100, 87, true, &Ratio{Base: 100, Next: 87, Ratio: 0.87, Change: changeBetter}},
		{"just within", 100, 104.9, false, &Ratio{Base: 100, Next: 104.9, Ratio: 1.049, Change: changeSame}},
		{"base only", 100, 0, false, &Ratio{Base: 100}},
		{"next only", 0, 50, true, &Ratio{Next: 50}},
		{"neither", 0, -1, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := newRatio(estimate{v: tc.base, cmp: tc.lowerIsBetter}, estimate{v: tc.next, cmp: tc.lowerIsBetter})
			if tc.want == nil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.InDelta(t, tc.want.Ratio, got.Ratio, 1e-9)
			got.Ratio = tc.want.Ratio
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestComparisonJSON(t *testing.T) {
	cmp := compareTwo(seedResults(t), nextResults(t))
	var b bytes.Buffer
	require.NoError(t, cmp.writeJSON(&b))
	var back Comparison
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	assert.Equal(t, cmp.Cells, back.Cells)
	assert.Equal(t, cmp.Prefill, back.Prefill)

	var doc map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	cell := doc["cells"].([]any)[0].(map[string]any)
	assert.Equal(t, "both", cell["presence"])
	assert.Equal(t, "valid", cell["base_status"])
	total := cell["total_tok_s"].(map[string]any)
	assert.Equal(t, "better", total["change"])
	assert.InDelta(t, 1.12, total["ratio"], 1e-9)
}

func TestComparisonGolden(t *testing.T) {
	cmp := compareTwo(seedResults(t), nextResults(t))
	for _, f := range []struct {
		ext   string
		write func(io.Writer) error
	}{
		{"txt", cmp.writeTable}, {"md", cmp.writeMarkdown}, {"csv", cmp.writeCSV}, {"json", cmp.writeJSON},
	} {
		t.Run(f.ext, func(t *testing.T) {
			golden(t, "compare."+f.ext, render(t, f.write))
		})
	}
}

// noisyCell is a measured cell of n requests whose time between tokens
// and TTFT have a median and a 90th percentile spread apart by spread (a
// share of the median), and whose figures are scaled by f.
func noisyCell(ctx, conc, n int, spread, f float64) matrix.Cell {
	m := &matrix.Measurement{OutputTokensPerSec: 400 * f, PerRequestTokensPerSec: 50 * f, Completed: n - conc,
		TTFT:         matrix.Quantiles{P50: 1000 / f, P90: 1000 / f * (1 + spread), P99: 1000 / f * (1 + 2*spread)},
		TBT:          matrix.Quantiles{P50: 20 / f, P90: 20 / f * (1 + spread), P99: 20 / f * (1 + 2*spread)},
		OutputTokens: 12_000, MeasuredS: 30}
	return matrix.Cell{ContextTokens: ctx, Concurrency: conc, Status: matrix.Valid, Requests: n, Measurement: m}
}

// TestCompareSeparatesChangeFromNoise compares cells whose figures differ
// by more than the 5% threshold: marked better or worse only when the
// difference lies outside both runs' intervals, which the spread and
// number of their requests give.
func TestCompareSeparatesChangeFromNoise(t *testing.T) {
	tests := []struct {
		name     string
		n        int
		spread   float64
		f        float64
		want     Change
		wantTTFT Change
	}{
		// Wide spreads over few requests: 30% apart is within noise.
		{"noisy and few", 8, 1.0, 1.3, changeNoise, changeNoise},
		// The same 30% over many steady requests is a change.
		{"steady and many", 400, 0.2, 1.3, changeBetter, changeBetter},
		{"steady and many, slower", 400, 0.2, 0.7, changeWorse, changeWorse},
		// Within the threshold stays the same whatever the noise.
		{"within 5%", 400, 0.01, 1.03, changeSame, changeSame},
		// Two requests cannot tell change from noise.
		{"too few to tell", 2, 1.0, 1.3, changeNoise, changeNoise},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := &matrix.Results{Schema: matrix.Schema, Cells: []matrix.Cell{noisyCell(0, 8, tc.n, tc.spread, 1)}}
			next := &matrix.Results{Schema: matrix.Schema, Cells: []matrix.Cell{noisyCell(0, 8, tc.n, tc.spread, tc.f)}}
			c := compareTwo(base, next).Cell(0, 8)
			require.NotNil(t, c)
			assert.Equal(t, tc.want, c.OutputTokensPerSec.Change, "total %+v", c.OutputTokensPerSec)
			assert.Equal(t, tc.want, c.PerRequestTokensPerSec.Change, "per request %+v", c.PerRequestTokensPerSec)
			assert.Equal(t, tc.wantTTFT, c.TTFTp50.Change, "TTFT %+v", c.TTFTp50)
			if tc.n >= minIntervalRequests && tc.spread > 0 {
				require.NotNil(t, c.OutputTokensPerSec.BaseInterval)
				assert.Less(t, c.OutputTokensPerSec.BaseInterval.Low, 400.0)
				assert.Greater(t, c.OutputTokensPerSec.BaseInterval.High, 400.0)
				assert.Less(t, c.TTFTp50.NextInterval.Low, c.TTFTp50.Next)
			} else {
				assert.Nil(t, c.OutputTokensPerSec.BaseInterval)
			}
		})
	}
}

// TestCompareFewRequests compares cells of one long request each: the
// rates are told from noise by the gaps between its tokens, the TTFT of
// one request cannot be; and results without request counts (made
// elsewhere) are compared by the threshold alone.
func TestCompareFewRequests(t *testing.T) {
	one := func(f float64) *matrix.Results {
		c := noisyCell(128*tokensK, 1, 1, 0, f)
		c.Measurement.ITL = matrix.Quantiles{P50: 20 / f, P90: 21 / f, P99: 25 / f}
		c.Measurement.OutputTokens = 1500
		return &matrix.Results{Schema: matrix.Schema, Cells: []matrix.Cell{c}}
	}
	c := compareTwo(one(1), one(1.3)).Cell(128*tokensK, 1)
	assert.Equal(t, changeBetter, c.OutputTokensPerSec.Change, "%+v", c.OutputTokensPerSec)
	assert.Equal(t, changeBetter, c.TBTp50.Change, "%+v", c.TBTp50)
	assert.Equal(t, changeNoise, c.TTFTp50.Change, "one request's TTFT: %+v", c.TTFTp50)

	elsewhere := func(f float64) *matrix.Results {
		c := noisyCell(0, 4, 0, 0, f)
		c.Requests = 0
		return &matrix.Results{Schema: matrix.Schema, Cells: []matrix.Cell{c}}
	}
	c = compareTwo(elsewhere(1), elsewhere(1.3)).Cell(0, 4)
	assert.Equal(t, changeBetter, c.OutputTokensPerSec.Change)
	assert.Equal(t, changeBetter, c.TTFTp50.Change)
	assert.Nil(t, c.OutputTokensPerSec.BaseInterval)
}

// TestCompareSameServerTwice compares two runs of the same simulated
// server: run-to-run differences are noise, and no prefill row or cell
// may be marked better or worse. A server 20% slower is marked worse in
// every prefill row and every cell. Under the race detector the
// in-process simulator falls behind its schedule, so the runs measure
// different servers: CI runs it without (see .ci/run).
func TestCompareSameServerTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator three times")
	}
	if raceEnabled {
		t.Skip("under the race detector the in-process simulator falls behind its schedule; .ci/run runs this test without it")
	}
	const speed = 10
	// run measures the simulator at speed × slower as a server at speed:
	// slower 1.2 is a server 20% slower in every figure.
	run := func(slower float64) *matrix.Results {
		p := loadgentest.SeedProfile()
		p.Speed, p.TruthBytes = speed/slower, -1
		srv := loadgentest.NewServer(p)
		defer srv.Close()
		spec := matrix.Spec{URL: srv.URL + "/v1", Model: p.Model, Contexts: []int{0, 4 * tokensK}, Concurrency: []int{1, 4}, Prefill: []int{4 * tokensK, 8 * tokensK},
			Duration: 8 * time.Second, MaxTokens: 512}
		r := &matrix.Runner{Spec: spec.AtSpeed(speed), Client: &loadgen.Client{HTTPClient: srv.Client()}, Server: capacity.Server{Simulated: true, Speed: speed}}
		res, err := r.Run(t.Context())
		require.NoError(t, err)
		return res
	}
	a, b, slow := run(1), run(1), run(1.2)
	for _, r := range []*matrix.Results{a, b, slow} {
		for _, p := range r.Prefill {
			t.Logf("prefill %s: %s ttft %.1f %v", formatTokens(p.ContextTokens), p.Status, p.TTFT, p.TTFTs)
		}
		for _, c := range r.Cells {
			if m := c.Measurement; m != nil {
				t.Logf("%s × %d: req %d done %d err %d total %.1f per %.1f active %.2f tokens %d in %.2f s warm %.1f ttft %+v tbt %+v lag %v cpu %.2f limited %v %s", formatTokens(c.ContextTokens), c.Concurrency, c.Requests, m.Completed, c.Errors, m.OutputTokensPerSec, m.PerRequestTokensPerSec, m.AvgActive, m.OutputTokens, m.MeasuredS, m.WarmupS, m.TTFT, m.TBT, m.Client.Lag.P99, m.Client.CPU, m.ClientLimited, m.Client.Reason)
			}
		}
	}
	same := compareTwo(a, b)
	require.Len(t, same.Prefill, 2)
	for _, p := range same.Prefill {
		for name, r := range map[string]*Ratio{"prompt tok/s": p.PromptTokensPerSec, "TTFT": p.TTFT} {
			require.True(t, r.compared(), "prefill %s %s", formatTokens(p.ContextTokens), name)
			require.NotNil(t, r.BaseInterval, "prefill %s %s has an interval", formatTokens(p.ContextTokens), name)
			assert.NotContains(t, []Change{changeBetter, changeWorse}, r.Change,
				"prefill %s %s: %.1f → %.1f (%v, %v)", formatTokens(p.ContextTokens), name, r.Base, r.Next, r.BaseInterval, r.NextInterval)
		}
	}
	for _, c := range same.Cells {
		for name, r := range map[string]*Ratio{"total": c.OutputTokensPerSec, "per request": c.PerRequestTokensPerSec, "TTFT": c.TTFTp50, "TBT": c.TBTp50} {
			if r.compared() {
				assert.NotContains(t, []Change{changeBetter, changeWorse}, r.Change,
					"%s × %d %s: %.1f → %.1f (%v, %v)", formatTokens(c.ContextTokens), c.Concurrency, name, r.Base, r.Next, r.BaseInterval, r.NextInterval)
			}
		}
	}

	slower := compareTwo(a, slow)
	for _, p := range slower.Prefill {
		for name, r := range map[string]*Ratio{"prompt tok/s": p.PromptTokensPerSec, "TTFT": p.TTFT} {
			assert.Equal(t, changeWorse, r.Change, "prefill %s %s: %.1f → %.1f (%v, %v)", formatTokens(p.ContextTokens), name, r.Base, r.Next, r.BaseInterval, r.NextInterval)
		}
	}
	checked := 0
	for _, c := range slower.Cells {
		require.True(t, c.OutputTokensPerSec.compared(), "%s × %d", formatTokens(c.ContextTokens), c.Concurrency)
		if limited(a, c) || limited(slow, c) {
			// The client's timers were late (a loaded machine): its
			// figures may be its own, and no change in them is told.
			t.Logf("%s × %d not checked: the client may have limited it", formatTokens(c.ContextTokens), c.Concurrency)
			continue
		}
		checked++
		assert.Equal(t, changeWorse, c.OutputTokensPerSec.Change, "%s × %d total: %.1f → %.1f (%v, %v)", formatTokens(c.ContextTokens), c.Concurrency,
			c.OutputTokensPerSec.Base, c.OutputTokensPerSec.Next, c.OutputTokensPerSec.BaseInterval, c.OutputTokensPerSec.NextInterval)
	}
	if checked == 0 {
		t.Skip("every cell was client-limited: this machine is too loaded to tell a slower server")
	}
}

// limited reports whether r's cell at c's place was client-limited.
func limited(r *matrix.Results, c CellChange) bool {
	rc := r.Cell(c.ContextTokens, c.Concurrency)
	return rc != nil && rc.Measurement != nil && rc.Measurement.ClientLimited
}

// sparseResults has n measured cells that share no context and no
// concurrency level: their grid would have n² places.
func sparseResults(n int) *matrix.Results {
	r := &matrix.Results{Schema: matrix.Schema, Spec: matrix.Spec{URL: "http://127.0.0.1:8000/v1", Model: "m"}, Complete: true}
	for i := range n {
		c := noisyCell(1000+7*i, 1+3*i, 20, 0.1, 1)
		r.Cells = append(r.Cells, c)
	}
	return r
}

// TestSparseCellsStayLinear compares and renders results of 2,000 cells
// that share no context or concurrency level: the work and the output
// grow with the cells, not with the 4,000,000 places of their grid (it
// took 22 s, 1.1 GB and wrote 344 MB of HTML).
func TestSparseCellsStayLinear(t *testing.T) {
	const n = 2000
	a, b := sparseResults(n), sparseResults(n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cmp := compareTwo(a, b)
	require.Len(t, cmp.Cells, n)
	writers := map[string]func(io.Writer) error{
		"compare table": cmp.writeTable, "compare markdown": cmp.writeMarkdown, "compare csv": cmp.writeCSV,
		"compare html": cmp.writeHTML, "results table": doc{a}.writeTable, "results markdown": doc{a}.writeMarkdown,
		"results csv": doc{a}.writeCSV, "results html": doc{a}.writeHTML,
	}
	for name, write := range writers {
		var out bytes.Buffer
		require.NoError(t, write(&out), name)
		assert.Less(t, out.Len(), 500*n, "%s: %d bytes for %d cells", name, out.Len(), n)
		if strings.Contains(name, "csv") {
			continue
		}
		assert.Contains(t, out.String(), "too sparse for a grid", name)
	}
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(300<<20), "bytes allocated")

	// A grid that is only partly filled is still drawn.
	dense := &matrix.Results{Schema: matrix.Schema, Cells: []matrix.Cell{noisyCell(0, 1, 20, 0.1, 1), noisyCell(tokensK, 2, 20, 0.1, 1)}}
	var out bytes.Buffer
	require.NoError(t, compareTwo(dense, dense).writeTable(&out))
	assert.NotContains(t, out.String(), "too sparse")
	assert.Contains(t, out.String(), "Sustained decode · total tok/s ratio")
}

// TestCompareClientLimited never marks a cell the client may have
// limited: its figures may be the client's, not the server's.
func TestCompareClientLimited(t *testing.T) {
	base := &matrix.Results{Schema: matrix.Schema, Cells: []matrix.Cell{noisyCell(0, 8, 400, 0.2, 1)}}
	next := &matrix.Results{Schema: matrix.Schema, Cells: []matrix.Cell{noisyCell(0, 8, 400, 0.2, 0.5)}}
	next.Cells[0].Measurement.ClientLimited = true
	c := compareTwo(base, next).Cell(0, 8)
	assert.Equal(t, changeNoise, c.OutputTokensPerSec.Change)
	assert.Equal(t, changeNoise, c.TTFTp50.Change)
	next.Cells[0].Measurement.ClientLimited = false
	assert.Equal(t, changeWorse, compareTwo(base, next).Cell(0, 8).OutputTokensPerSec.Change)
}

// TestCompareRuns compares sides of repeated runs: a side's figure is the
// median of its runs', and a change must stand out of the spread between
// them.
func TestCompareRuns(t *testing.T) {
	run := func(f float64) *matrix.Results {
		return &matrix.Results{Schema: matrix.Schema, Complete: true, Cells: []matrix.Cell{noisyCell(0, 8, 400, 0.05, f)}}
	}
	base := []*matrix.Results{run(1), run(1.3), run(1.1)}

	// One run against one: 1.2 is beyond the run's own tight interval.
	c := compareTwo(base[0], run(1.2)).Cell(0, 8)
	assert.Equal(t, changeBetter, c.OutputTokensPerSec.Change)

	// Against the three: their spread (1 to 1.3) holds 1.2.
	cmp := Compare(base, []*matrix.Results{run(1.2), run(1.25)})
	c = cmp.Cell(0, 8)
	assert.Equal(t, changeNoise, c.OutputTokensPerSec.Change, "%+v", c.OutputTokensPerSec)
	assert.InDelta(t, 440, c.OutputTokensPerSec.Base, 1e-9, "the median of 400, 520 and 440")
	assert.InDelta(t, 490, c.OutputTokensPerSec.Next, 1e-9, "the median of 480 and 500")
	require.NotNil(t, c.OutputTokensPerSec.BaseInterval)
	assert.LessOrEqual(t, c.OutputTokensPerSec.BaseInterval.Low, 400.0)
	assert.GreaterOrEqual(t, c.OutputTokensPerSec.BaseInterval.High, 520.0)
	assert.Equal(t, 3, cmp.Base.Runs)
	assert.Equal(t, 2, cmp.Next.Runs)

	// Twice as fast stands out of any of it.
	c = Compare(base, []*matrix.Results{run(2), run(2.1)}).Cell(0, 8)
	assert.Equal(t, changeBetter, c.OutputTokensPerSec.Change)
	assert.Equal(t, changeBetter, c.TTFTp50.Change)

	// Two runs of one request each: their spread tells the noise the
	// requests alone could not.
	few := func(f float64) *matrix.Results {
		return &matrix.Results{Schema: matrix.Schema, Cells: []matrix.Cell{noisyCell(0, 1, 1, 0, f)}}
	}
	c = Compare([]*matrix.Results{few(1), few(1.02)}, []*matrix.Results{few(1.5), few(1.52)}).Cell(0, 1)
	assert.Equal(t, changeBetter, c.TTFTp50.Change, "%+v", c.TTFTp50)
}

// BenchmarkCompareSparse compares two results files of 2,000 cells that
// share no context or concurrency level and writes the comparison's HTML
// page: the work and the page grow with the cells, not with their grid.
func BenchmarkCompareSparse(b *testing.B) {
	x, y := sparseResults(2000), sparseResults(2000)
	var size int
	for b.Loop() {
		var out bytes.Buffer
		if err := compareTwo(x, y).writeHTML(&out); err != nil {
			b.Fatal(err)
		}
		size = out.Len()
	}
	b.ReportMetric(float64(size), "html-bytes")
}

// TestComparePrefillOverCapacity: a prefill row beyond the server's
// context, Over capacity in both runs, reads as Over capacity in the
// comparison's reports, not Failed.
func TestComparePrefillOverCapacity(t *testing.T) {
	run := func() *matrix.Results {
		return &matrix.Results{Spec: matrix.Spec{Contexts: []int{0}, Concurrency: []int{1}, Prefill: []int{tokensK, 4 * tokensK}},
			Prefill: []matrix.Prefill{
				{ContextTokens: tokensK, Status: matrix.Valid, PromptTokens: 1030, PromptTokensPerSec: 3000, TTFT: 340},
				{ContextTokens: 4 * tokensK, Status: matrix.OverCapacity, Reason: "predicted: one request needs 4113 tokens > max_model_len 2048"},
			},
			Cells: []matrix.Cell{{ContextTokens: 0, Concurrency: 1, Status: matrix.Valid, Measurement: &matrix.Measurement{OutputTokensPerSec: 300, PerRequestTokensPerSec: 300}}}}
	}
	cmp := compareTwo(run(), run())
	require.Len(t, cmp.Prefill, 2)
	assert.Equal(t, matrix.OverCapacity, cmp.Prefill[1].BaseStatus)
	assert.Equal(t, matrix.OverCapacity, cmp.Prefill[1].NextStatus)
	assert.Equal(t, matrix.Valid, cmp.Prefill[0].NextStatus)

	var table, md, csv bytes.Buffer
	require.NoError(t, cmp.writeTable(&table))
	require.NoError(t, cmp.writeMarkdown(&md))
	require.NoError(t, cmp.writeCSV(&csv))
	assert.Regexp(t, `(?m)^4K\s+Over capacity\s+Over capacity\s+—$`, table.String())
	assert.Contains(t, md.String(), "| 4K | Over capacity | Over capacity | — |")
	assert.Contains(t, csv.String(), "prefill,4096,1,both,over_capacity,over_capacity")
	for _, out := range []string{table.String(), md.String(), csv.String()} {
		assert.NotContains(t, strings.ToLower(out), "failed")
	}
}

// Runs that read the GPUs' energy compare their output tokens per joule,
// cell by cell, in every format; runs without it show no such column.
func TestCompareEnergy(t *testing.T) {
	base, next := seedResults(t), nextResults(t)
	withEnergy := func(r *matrix.Results, tpj float64) {
		for i := range r.Cells {
			if m := r.Cells[i].Measurement; hasRates(&r.Cells[i]) {
				m.Energy = &metrics.Energy{GPUs: 1, Joules: 1000, Seconds: 30, MeanWatts: 33.3, OutputTokens: 1000 * int(tpj), TokensPerJoule: tpj, JoulesPerToken: 1 / tpj}
			}
		}
	}
	var plain bytes.Buffer
	require.NoError(t, compareTwo(base, next).Write(&plain, CSV))
	assert.NotContains(t, plain.String(), "tokens_per_joule", "no energy, no column")

	withEnergy(base, 2)
	withEnergy(next, 2.5)
	cmp := compareTwo(base, next)
	c := cmp.Cell(0, 1)
	require.NotNil(t, c.TokensPerJoule)
	assert.Equal(t, 2.0, c.TokensPerJoule.Base)
	assert.Equal(t, 2.5, c.TokensPerJoule.Next)
	assert.Equal(t, 1.25, c.TokensPerJoule.Ratio)
	assert.Equal(t, changeBetter, c.TokensPerJoule.Change, "more tokens a joule is better")
	assert.Nil(t, cmp.Cell(0, 128).TokensPerJoule, "over capacity in both: nothing to compare")
	for f, want := range map[Format]string{
		Table: "tok/J 1.25×", Markdown: "| Tokens per joule |", HTML: "Tokens per joule: 2.00 → 2.50",
		CSV: "base_tokens_per_joule,next_tokens_per_joule,tokens_per_joule_ratio", JSON: `"tokens_per_joule"`,
	} {
		var b bytes.Buffer
		require.NoError(t, cmp.Write(&b, f))
		assert.Contains(t, b.String(), want, "%s", f)
	}
}
