package chart

import (
	"bytes"
	"html/template"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTemplateDrawsAChart: Template parses with html/template and draws a
// laid-out chart as inline SVG, its series' names escaped as text.
func TestTemplateDrawsAChart(t *testing.T) {
	c := New("Throughput", "by concurrency", "requests at once", "tok/s")
	x, y := c.XLevels([]int{1, 2, 4}), c.YLinear(100, func(v float64) string { return "" })
	c.Add("<b>16K</b>", 0, []Point{{X: 1, Y: 10, Title: "one"}, {X: 4, Y: 90, Title: "four"}}, x, y)
	tmpl := template.Must(template.New("page").Parse(Template))
	var b bytes.Buffer
	require.NoError(t, tmpl.ExecuteTemplate(&b, "chart", c))
	assert.Contains(t, b.String(), `<svg class="plot" viewBox="0 0 `)
	assert.Contains(t, b.String(), "<title>one</title>")
	assert.Contains(t, b.String(), "&lt;b&gt;16K&lt;/b&gt;")
	assert.NotContains(t, b.String(), "<b>16K</b>")
}

// TestTemplateMarkLabel: a mark's label (class "mark") is drawn after its
// line, and before it, ending there, where it would otherwise run off the
// chart.
func TestTemplateMarkLabel(t *testing.T) {
	tmpl := template.Must(template.New("page").Parse(Template))
	draw := func(at float64, label string) string {
		c := New("Latency", "", "requests a second", "ms")
		x := c.XLinear(10, func(v float64) string { return "" })
		c.Mark, c.MarkLabel = x(at), label
		var b bytes.Buffer
		require.NoError(t, tmpl.ExecuteTemplate(&b, "chart", c))
		return b.String()
	}
	const long = "highest rate meeting the objective: 8 req/s"
	assert.Contains(t, draw(2, long), `<text class="mark" x="176" y="30" dy="10" dx="4">highest rate`)
	assert.Contains(t, draw(8, long), `<text class="mark" x="512" y="30" dy="10" dx="-4" text-anchor="end">highest rate`)
	assert.Contains(t, draw(8, "window"), `<text class="mark" x="512" y="30" dy="10" dx="4">window`)
}
