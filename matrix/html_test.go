package matrix

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// browserNames are the headless browsers the HTML test looks for on PATH.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// findBrowser returns a headless Chromium's path, or skips the test.
func findBrowser(t *testing.T) string {
	t.Helper()
	for _, name := range browserNames {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skipf("no headless Chromium on PATH (looked for %s); install Debian's chromium package (.ci/run does) to run the HTML browser test",
		strings.Join(browserNames, ", "))
	return ""
}

// runBrowser runs headless Chromium with args after the usual isolation
// flags, bounded by a 60-second timeout, and returns its standard output.
func runBrowser(t *testing.T, browser string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, browser, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	killBrowserGroup(cmd)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("chromium did not finish within 60 s; stderr:\n%s", stderr.String())
	}
	require.NoError(t, err, "chromium failed; stderr:\n%s", stderr.String())
	return stdout.Bytes()
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
		{"seed", seed.writeHTML},
		{"simulated", sim.writeHTML},
		{"comparison", Compare(seed, nextResults(t)).writeHTML},
		{"empty", (&Results{Schema: Schema}).writeHTML},
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
	out := string(render(t, simulatedResults().writeHTML))
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
	g := seed.report().grid

	t.Run("seed DOM", func(t *testing.T) {
		path := writeHTMLFile(t, seed.writeHTML)
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
		path := writeHTMLFile(t, simulatedResults().writeHTML)
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
		path := writeHTMLFile(t, Compare(seed, nextResults(t)).writeHTML)
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
	out := string(render(t, simulatedResults().writeHTML))
	assert.Contains(t, out, "16K (16,800 counted)")
	assert.Contains(t, out, "the server counted N prompt tokens for this context")
	md := string(render(t, simulatedResults().writeMarkdown))
	assert.Contains(t, md, "16K (16,800 counted)")
	csv := string(render(t, simulatedResults().writeCSV))
	assert.Contains(t, csv, ",measured_s,prompt_tokens\n")
	assert.Contains(t, csv, "decode,16384,4,requests_queued,150.8,44.7,3310,22.4,3.10,1,4524,30.0,16800\n")
	seedCSV := string(render(t, seedResults(t).writeCSV))
	assert.NotContains(t, seedCSV, "prompt_tokens", "sizes as labelled: the seed's columns")
}
