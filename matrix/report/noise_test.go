package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/matrix"
)

// TestNoisyInEveryReport: a noisy cell is marked in the table, Markdown,
// CSV and HTML, with its reason, never shown as a clean Valid.
func TestNoisyInEveryReport(t *testing.T) {
	c := noisyCell(0, 4, 400, 0.2, 1)
	c.Measurement.Noisy = "only 2 of its 4 streams decoded in the window"
	r := &matrix.Results{Schema: matrix.Schema, Spec: matrix.Spec{URL: "http://127.0.0.1:8000/v1", Contexts: []int{0}, Concurrency: []int{4}},
		Complete: true, Cells: []matrix.Cell{c}}
	for name, write := range map[string]func(*bytes.Buffer) error{
		"table":    func(b *bytes.Buffer) error { return doc{r}.writeTable(b) },
		"markdown": func(b *bytes.Buffer) error { return doc{r}.writeMarkdown(b) },
		"html":     func(b *bytes.Buffer) error { return doc{r}.writeHTML(b) },
	} {
		var b bytes.Buffer
		require.NoError(t, write(&b), name)
		assert.Contains(t, b.String(), "400.0~", name)
		assert.Contains(t, b.String(), "only 2 of its 4 streams decoded in the window", name)
	}
	var b bytes.Buffer
	require.NoError(t, (doc{r}).writeCSV(&b))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 2)
	assert.True(t, strings.HasSuffix(lines[0], ",noisy"), lines[0])
	assert.True(t, strings.HasSuffix(lines[1], ",true"), lines[1])
}
