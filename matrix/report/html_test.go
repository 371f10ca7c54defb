package report

import (
	"github.com/llmload/llmload/matrix"

	"bytes"
	"encoding/csv"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/headless"
	"github.com/llmload/llmload/internal/seriesview"
	"github.com/llmload/llmload/metrics"
)

// findBrowser returns a headless Chromium's path, or skips the test.
func findBrowser(t *testing.T) string {
	t.Helper()
	p := headless.Find()
	if p == "" {
		t.Skipf("no headless Chromium on PATH (looked for %s); install Debian's chromium package (.ci/run does) to run the HTML browser test",
			strings.Join(headless.Names, ", "))
	}
	return p
}

// runBrowser runs headless Chromium with args and returns its standard
// output.
func runBrowser(t *testing.T, browser string, args ...string) []byte {
	t.Helper()
	out, err := headless.Run(t.Context(), browser, t.TempDir(), args...)
	require.NoError(t, err)
	return out
}

// writeHTMLFile writes a page into a temporary file and returns its path.
func writeHTMLFile(t *testing.T, write func(w io.Writer) error) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, write(f))
	require.NoError(t, f.Close())
	return path
}

// htmlPages are the pages the HTML tests render.
func htmlPages(t *testing.T) []struct {
	name  string
	write func(io.Writer) error
} {
	seed, sim := seedResults(t), simulatedResults()
	return []struct {
		name  string
		write func(io.Writer) error
	}{
		{"seed", doc{seed}.writeHTML},
		{"simulated", doc{sim}.writeHTML},
		{"comparison", compareTwo(seed, nextResults(t)).writeHTML},
		{"empty", doc{&matrix.Results{Schema: matrix.Schema}}.writeHTML},
	}
}

// remoteRef finds a reference that would make a browser fetch something:
// a src or href with a scheme or a protocol-relative URL, a stylesheet
// link, a CSS import or url(), a script.
var remoteRef = regexp.MustCompile(`(?i)(\b(src|href|action|poster|srcset)\s*=\s*["']?\s*([a-z][a-z0-9+.-]*:|//))|<link\b|@import|url\(|<script\b|<iframe\b|<img\b`)

func TestWriteHTMLIsSelfContained(t *testing.T) {
	for _, page := range htmlPages(t) {
		t.Run(page.name, func(t *testing.T) {
			out := string(render(t, page.write))
			assert.True(t, strings.HasPrefix(out, "<!DOCTYPE html>"))
			assert.Empty(t, remoteRef.FindAllString(out, -1), "the page must not fetch anything")
			assert.NotContains(t, out, "http://fonts")
			assert.NotContains(t, out, "ZgotmplZ", "html/template rejected a value")
		})
	}
}

func TestWriteHTMLEscapes(t *testing.T) {
	out := string(render(t, doc{simulatedResults()}.writeHTML))
	assert.NotContains(t, out, "<script>")
	assert.NotContains(t, out, "<html>upstream")
	assert.Contains(t, out, "sim-4b &lt;seed&gt; &amp; &#34;friends&#34;")
	assert.Contains(t, out, "&lt;script&gt;alert(1)&lt;/script&gt;")
	assert.NotContains(t, out, "\x1b", "escape sequences from the server are removed")
}

// domCells extracts each heat-map cell's data-status and main text from a
// DOM that Chromium dumped.
var domCell = regexp.MustCompile(`<td class="cell ([a-z ]+)"(?: data-status="([a-z_]+)")?[^>]*><div class="main">([^<]*)</div>(?:<div class="sub">([^<]*)</div>)?`)

func TestWriteHTMLInChromium(t *testing.T) {
	browser := findBrowser(t)
	seed := seedResults(t)
	g := doc{seed}.report().grid

	t.Run("seed DOM", func(t *testing.T) {
		path := writeHTMLFile(t, doc{seed}.writeHTML)
		dom := string(runBrowser(t, browser, "--dump-dom", "file://"+path))
		require.Contains(t, dom, "</html>")
		cells := domCell.FindAllStringSubmatch(dom, -1)
		require.Len(t, cells, len(g.contexts)*len(g.concurrency), "one heat-map cell per grid cell")
		i := 0
		statuses := map[string]int{}
		for _, ctx := range g.contexts {
			for _, n := range g.concurrency {
				c, got := g.at(ctx, n), cells[i]
				i++
				statuses[got[2]]++
				want := gridLines(c)
				assert.Equal(t, want[0], got[3], "%s main text", cellLabel(c))
				if hasRates(c) {
					assert.Equal(t, fmtTTFT(c.Measurement.TTFT.P50)+" TTFT", got[4], "%s TTFT", cellLabel(c))
				}
			}
		}
		assert.Equal(t, map[string]int{"valid": 22, "requests_queued": 2, "over_capacity": 24}, statuses)
		assert.Contains(t, dom, `data-status="over" data-count="24"`, "the legend counts the over-capacity cells")
		assert.Contains(t, dom, "Qwen3.5-4B-AWQ-4bit")
		assert.Contains(t, dom, "213,395 ms", "the prefill table")
		assert.Contains(t, dom, "<svg class=\"plot\"", "the charts")
	})

	t.Run("simulated DOM", func(t *testing.T) {
		path := writeHTMLFile(t, doc{simulatedResults()}.writeHTML)
		dom := string(runBrowser(t, browser, "--dump-dom", "file://"+path))
		assert.Contains(t, dom, "simulated by llmload at 20× speed")
		assert.Contains(t, dom, "sim-4b &lt;seed&gt; &amp; \"friends\"", "the model name is text, not markup")
		assert.NotContains(t, dom, "<seed>")
		assert.NotContains(t, dom, "<script>")
		assert.Len(t, domCell.FindAllString(dom, -1), 9)
		assert.Contains(t, dom, `data-status="failed"`)
		assert.Equal(t, 2, strings.Count(dom, ">Not run<"))
	})

	t.Run("comparison DOM", func(t *testing.T) {
		path := writeHTMLFile(t, compareTwo(seed, nextResults(t)).writeHTML)
		dom := string(runBrowser(t, browser, "--dump-dom", "file://"+path))
		assert.Equal(t, 7, strings.Count(dom, `<td class="cell better"`), "context 0's seven measured cells are faster")
		assert.Equal(t, 5, strings.Count(dom, `<td class="cell worse"`), "16K's five measured cells are slower")
		assert.Contains(t, dom, ">1.12× ▲<")
		assert.Contains(t, dom, ">0.87× ▼<")
		assert.Contains(t, dom, "Requests queued → Valid")
	})

	for _, page := range htmlPages(t)[:3] {
		t.Run(page.name+" screenshot", func(t *testing.T) {
			dir := t.TempDir()
			path := writeHTMLFile(t, page.write)
			shot := filepath.Join(dir, "out.png")
			runBrowser(t, browser, "--screenshot="+shot, "--window-size=1400,1000", "file://"+path)
			f, err := os.Open(shot)
			require.NoError(t, err, "chromium wrote no screenshot")
			defer f.Close()
			img, err := png.Decode(f)
			require.NoError(t, err)
			b := img.Bounds()
			assert.Equal(t, 1400, b.Dx())
			assert.Equal(t, 1000, b.Dy())
			colors := map[[3]uint32]bool{}
			for y := b.Min.Y; y < b.Max.Y; y += 7 {
				for x := b.Min.X; x < b.Max.X; x += 7 {
					r, g, b, _ := img.At(x, y).RGBA()
					colors[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
				}
			}
			assert.Greater(t, len(colors), 50, "the screenshot shows a rendered page, not a blank one")
		})
	}
}

// TestWriteHTMLShowsCountedSizes: a row whose prompt the server counted
// more than 1% off its label shows the counted size, as every report does.
func TestWriteHTMLShowsCountedSizes(t *testing.T) {
	out := string(render(t, doc{simulatedResults()}.writeHTML))
	assert.Contains(t, out, "16K (16,800 counted)")
	assert.Contains(t, out, "the server counted N prompt tokens for this context")
	md := string(render(t, doc{simulatedResults()}.writeMarkdown))
	assert.Contains(t, md, "16K (16,800 counted)")
	csv := string(render(t, doc{simulatedResults()}.writeCSV))
	assert.Contains(t, csv, ",measured_s,prompt_tokens\n")
	assert.Contains(t, csv, "decode,16384,4,requests_queued,150.8,44.7,3310,22.4,3.10,1,4524,30.0,16800\n")
	seedCSV := string(render(t, doc{seedResults(t)}.writeCSV))
	assert.NotContains(t, seedCSV, "prompt_tokens", "sizes as labelled: the seed's columns")
}

// withSeries gives every measured cell of r a time series, recorded as a
// run of n streams would be: each stream sends a request, waits 200 ms
// for its first token (800 ms after the tenth second), then decodes 100
// tokens 10 ms apart, over 20 s of wall time with the window from the
// fifth second; and a server that runs them all. It returns r.
func withSeries(r *matrix.Results) *matrix.Results {
	t0 := time.Date(2026, 5, 2, 18, 5, 0, 0, time.UTC)
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Measurement == nil {
			continue
		}
		rec := &metrics.Recorder{Every: time.Second}
		rec.SetWindow(metrics.Window{Start: t0.Add(5 * time.Second), End: t0.Add(20 * time.Second)})
		for stream := range c.Concurrency {
			at := t0.Add(time.Duration(stream) * 37 * time.Millisecond)
			for at.Before(t0.Add(20 * time.Second)) {
				ttft := 200 * time.Millisecond
				if at.After(t0.Add(10 * time.Second)) {
					ttft = 800 * time.Millisecond
				}
				tl := metrics.Timeline{Start: at, Sent: at}
				for k := range 100 {
					rec.Observe(&tl, at.Add(ttft+time.Duration(k)*10*time.Millisecond), 1)
				}
				tl.End, tl.Done = tl.Last, true
				rec.Record(&tl)
				at = tl.End
			}
		}
		s := rec.Series()
		// The server's /metrics read every 500 ms for 20 s: running at the
		// cell's concurrency, none waiting, the KV cache half full, a
		// preemption every 5 s; as the runner puts them in the series.
		n := seriesview.Len(s)
		s.ServerRunning, s.ServerWaiting, s.ServerKVUsage = make([]float64, n), make([]float64, n), make([]float64, n)
		s.ServerPreemptions = make([]float64, n)
		for i := range n {
			s.ServerRunning[i], s.ServerKVUsage[i] = float64(c.Concurrency), 0.5
		}
		for _, k := range []int{10, 20, 30} {
			if i := int(t0.Add(time.Duration(k)*500*time.Millisecond).Sub(s.Start) / s.Every); i >= 0 && i < n {
				s.ServerPreemptions[i]++
			}
		}
		c.Measurement.Series = s
	}
	return r
}

func TestSeriesCSV(t *testing.T) {
	r := withSeries(simulatedResults())
	out, err := csv.NewReader(bytes.NewReader(render(t, doc{r}.writeSeriesCSV))).ReadAll()
	require.NoError(t, err)
	require.Equal(t, seriesHead, out[0])
	rows, measured, cells := 0, 0, map[string]int{}
	for _, c := range r.Cells {
		if c.Measurement != nil {
			rows += seriesview.Len(c.Measurement.Series)
			measured++
		}
	}
	require.Len(t, out, rows+1, "a row a bucket")
	col := map[string]int{}
	for i, h := range out[0] {
		col[h] = i
	}
	for _, row := range out[1:] {
		cells[row[0]+"×"+row[1]]++
	}
	assert.Len(t, cells, measured, "every measured cell")
	// The report speaks in the simulated server's time (20× speed): a
	// bucket of 1 s of wall time is 20 s, its tok/s a twentieth.
	first := out[1]
	assert.Equal(t, "20", first[col["bucket_s"]])
	second := out[2]
	assert.Equal(t, "20", second[col["t_s"]])
	tokS, err := strconv.ParseFloat(out[5][col["tok_s"]], 64)
	require.NoError(t, err)
	assert.InDelta(t, 100.0/20*0.99/1.19, tokS, 0.5, "one stream's tok/s in the server's time")
	assert.Equal(t, "1", out[1+7][col["in_window"]], "the window opens at the fifth second")
	assert.Equal(t, "0", out[1][col["in_window"]])
	assert.Equal(t, "0.5", first[col["server_kv_usage"]])
	_, err = strconv.ParseFloat(second[col["ttft_p50_ms"]], 64)
	assert.NoError(t, err)

	var b bytes.Buffer
	assert.ErrorContains(t, compareTwo(r, r).Write(&b, SeriesCSV), "no time series of its own")
}

// TestWriteHTMLChartsEachCellOverTime: in Chromium, the page shows each
// measured cell's series as line charts, their figures on hover.
func TestWriteHTMLChartsEachCellOverTime(t *testing.T) {
	browser := findBrowser(t)
	r := withSeries(simulatedResults())
	path := writeHTMLFile(t, doc{r}.writeHTML)
	dom := string(runBrowser(t, browser, "--dump-dom", "file://"+path))
	require.Contains(t, dom, `id="series"`)
	want, buckets := map[string]bool{}, map[string]int{}
	for i := range r.Cells {
		if c := &r.Cells[i]; c.Measurement != nil {
			want[cellLabel(c)] = true
			buckets[cellLabel(c)] = seriesview.Len(c.Measurement.Series)
		}
	}
	got := map[string]bool{}
	blocks := strings.Split(dom, `<div class="seriescell" data-cell="`)[1:]
	for _, b := range blocks {
		label, _, _ := strings.Cut(b, `"`)
		got[label] = true
		assert.Equal(t, 3, strings.Count(b, `<svg class="plot"`), "%s: three charts", label)
		assert.GreaterOrEqual(t, strings.Count(b, "<polyline"), 5, "%s: lines of tok/s, latencies and requests", label)
		assert.Equal(t, 3*buckets[label], strings.Count(b, `<rect class="band"`), "%s: a hover band a bucket in each chart", label)
		assert.Contains(t, b, "tok/s · ", "%s: the figures on hover", label)
		assert.Contains(t, b, ">window<", "%s: the window's start marked", label)
	}
	assert.Equal(t, want, got, "a block of charts for every measured cell")
	assert.Contains(t, dom, "20 s–40 s: ", "hover text in the server's time")
}
