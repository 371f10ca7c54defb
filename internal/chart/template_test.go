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
