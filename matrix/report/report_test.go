package report

import (
	"github.com/llmload/llmload/matrix"

	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmload/llmload/internal/thousands"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden compares got with testdata/golden/name, or rewrites the file
// with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./matrix -run %s -update to create it", t.Name())
	assert.Equal(t, string(want), string(got), "differs from %s; if the change is intended, rerun with -update", path)
}

// render runs one of the Write methods into a buffer.
func render(t *testing.T, write func(io.Writer) error) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, write(&b))
	return b.Bytes()
}

func TestReportGolden(t *testing.T) {
	fixtures := []struct {
		name string
		r    *matrix.Results
	}{
		{"seed", seedResults(t)},
		{"simulated", simulatedResults()},
		{"empty", &matrix.Results{Schema: matrix.Schema, Complete: true}},
	}
	for _, f := range fixtures {
		formats := []struct {
			ext   string
			write func(io.Writer) error
		}{
			{"txt", doc{f.r}.writeTable},
			{"md", doc{f.r}.writeMarkdown},
			{"csv", doc{f.r}.writeCSV},
		}
		for _, format := range formats {
			t.Run(f.name+"."+format.ext, func(t *testing.T) {
				golden(t, f.name+"."+format.ext, render(t, format.write))
			})
		}
	}
}

func TestWriteCSVReproducesTheSeed(t *testing.T) {
	want, err := os.ReadFile(seedCSV)
	require.NoError(t, err)
	t.Run("from the CSV", func(t *testing.T) {
		got := render(t, doc{readMeasurementsCSV(t, seedCSV)}.writeCSV)
		assert.Equal(t, string(want), string(got))
	})
	t.Run("with the seed's reasons and server", func(t *testing.T) {
		got := render(t, doc{seedResults(t)}.writeCSV)
		assert.Equal(t, string(want), string(got))
	})
	t.Run("in any cell order", func(t *testing.T) {
		r := readMeasurementsCSV(t, seedCSV)
		for i, j := 0, len(r.Cells)-1; i < j; i, j = i+1, j-1 {
			r.Cells[i], r.Cells[j] = r.Cells[j], r.Cells[i]
		}
		r.Spec.Contexts, r.Spec.Concurrency = nil, nil
		got := render(t, doc{r}.writeCSV)
		assert.Equal(t, string(want), string(got))
	})
}

func TestWriteTableMatchesTheSeedPage(t *testing.T) {
	var b strings.Builder
	require.NoError(t, doc{seedResults(t)}.writeTable(&b))
	out := b.String()
	// Every figure of the seed page's prefill table and decode grid.
	for _, s := range []string{
		"Qwen3.5-4B-AWQ-4bit", "vllm",
		"2,343", "3,477 ms", "1,955", "990.0", "600.0", "213,395 ms",
		"81.5", "81 ms TTFT", "1,054.7", "1,015 ms TTFT", "1,279.8", "1,901 ms TTFT",
		"224.9", "12,178 ms TTFT", "30.4", "3,432 ms TTFT", "55.5", "7,946 ms TTFT",
		"Requests queued", "Over capacity",
	} {
		assert.Contains(t, out, s)
	}
	assert.NotContains(t, out, "simulated")
	assert.NotContains(t, out, "\x1b", "no color codes")
	// 22 cells predicted over capacity, two more run and starved at 248K.
	grid := out[strings.Index(out, "Sustained decode"):strings.Index(out, "Requests queued:")]
	assert.Equal(t, 24, strings.Count(grid, "Over capacity"))
	assert.Equal(t, 2, strings.Count(grid, "Requests queued"))
}

func TestWriteTableSimulated(t *testing.T) {
	var b strings.Builder
	require.NoError(t, doc{simulatedResults()}.writeTable(&b))
	out := b.String()
	assert.Contains(t, out, "simulated by llmload at 20× speed; times are the simulated server's own")
	assert.Contains(t, out, "incomplete: 7 of 9 cells decided")
	assert.Contains(t, out, "Not run")
	assert.Contains(t, out, "66.3*")
	assert.Contains(t, out, "275.5†")
	assert.Contains(t, out, "12 of 20 requests failed (server_status ×9, truncated ×3)")
	assert.NotContains(t, out, "\x1b", "control characters from the server are removed")
}

func TestWriteMarkdownEscapes(t *testing.T) {
	var b strings.Builder
	require.NoError(t, doc{simulatedResults()}.writeMarkdown(&b))
	out := b.String()
	assert.Contains(t, out, `sim-4b &lt;seed&gt; &amp; "friends"`)
	assert.NotContains(t, out, "<script>")
	assert.Contains(t, out, `more than half of the requests failed \| &lt;script&gt;`)
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "|") {
			assert.True(t, strings.HasSuffix(line, "|"), "table row %q", line)
		}
	}
}

func TestNumGroup(t *testing.T) {
	tests := []struct {
		v    float64
		dec  int
		want string
	}{
		{0, 1, "0.0"},
		{81.5, 1, "81.5"},
		{999.96, 1, "1,000.0"},
		{1054.66, 1, "1,054.7"},
		{12178.4, 0, "12,178"},
		{1234567.891, 2, "1,234,567.89"},
		{-1234.5, 1, "-1,234.5"},
		{-0.01, 1, "0.0"},
		{100, 0, "100"},
		{100000, 0, "100,000"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			assert.Equal(t, tc.want, thousands.Float(tc.v, tc.dec))
		})
	}
}

func TestFmtPrefillRate(t *testing.T) {
	for v, want := range map[float64]string{2343: "2,343", 990: "990.0", 600: "600.0", 999.94: "999.9", 999.96: "1,000"} {
		assert.Equal(t, want, fmtPrefillRate(v), "%v", v)
	}
}

func TestCleanText(t *testing.T) {
	assert.Equal(t, "red error and more", cleanText("\x1b[31mred\x1b[0m error\nand\tmore"))
}

// TestHeaderSaysHowBodiesWereRead: the report's header names the ways the
// cells' bodies were read, each once, so a Poll that did nothing (over
// https) shows.
func TestHeaderSaysHowBodiesWereRead(t *testing.T) {
	r := simulatedResults()
	var b strings.Builder
	require.NoError(t, doc{r}.writeTable(&b))
	assert.NotContains(t, b.String(), "bodies read by", "no cell says")
	for i, c := range r.Cells {
		if c.Measurement != nil {
			r.Cells[i].Measurement.ReadMode = "a goroutine per stream"
		}
	}
	b.Reset()
	require.NoError(t, doc{r}.writeTable(&b))
	assert.Equal(t, 1, strings.Count(b.String(), "bodies read by a goroutine per stream"), b.String())
}
