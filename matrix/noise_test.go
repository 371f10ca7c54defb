package matrix

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoisyCells: a cell whose total tok/s is known only within more than
// ±25%, or in whose window fewer than three of its streams decoded, is
// noisy; a steady cell of many requests is not, nor one the client may
// have limited (it says so already).
func TestNoisyCells(t *testing.T) {
	steady := noisyCell(0, 4, 400, 0.2, 1)
	steady.Measurement.Streams = &Streams{PeakDecoding: 4}
	assert.Empty(t, noisy(&steady, steady.Measurement))

	// Long first tokens at each end of a short window: the total may be
	// off by most of itself.
	edges := noisyCell(0, 4, 400, 0.2, 1)
	edges.Measurement.MeasuredS = 3
	edges.Measurement.TTFT.P99 = 2000
	assert.Contains(t, noisy(&edges, edges.Measurement), "its total tok/s is known only from")

	few := noisyCell(0, 8, 400, 0.2, 1)
	few.Measurement.Streams = &Streams{PeakDecoding: 2}
	assert.Equal(t, "only 2 of its 8 streams decoded in the window", noisy(&few, few.Measurement))
	one := noisyCell(0, 1, 400, 0.2, 1)
	one.Measurement.Streams = &Streams{PeakDecoding: 1}
	assert.Empty(t, noisy(&one, one.Measurement), "a cell of one stream needs one")

	limited := few
	m := *few.Measurement
	m.ClientLimited = true
	limited.Measurement = &m
	assert.Empty(t, noisy(&limited, limited.Measurement))
}

// TestNoisyInEveryReport: a noisy cell is marked in the table, Markdown,
// CSV and HTML, with its reason, never shown as a clean Valid.
func TestNoisyInEveryReport(t *testing.T) {
	c := noisyCell(0, 4, 400, 0.2, 1)
	c.Measurement.Noisy = "only 2 of its 4 streams decoded in the window"
	r := &Results{Schema: Schema, Spec: Spec{URL: "http://127.0.0.1:8000/v1", Contexts: []int{0}, Concurrency: []int{4}},
		Complete: true, Cells: []Cell{c}}
	for name, write := range map[string]func(*bytes.Buffer) error{
		"table":    func(b *bytes.Buffer) error { return r.writeTable(b) },
		"markdown": func(b *bytes.Buffer) error { return r.writeMarkdown(b) },
		"html":     func(b *bytes.Buffer) error { return r.writeHTML(b) },
	} {
		var b bytes.Buffer
		require.NoError(t, write(&b), name)
		assert.Contains(t, b.String(), "400.0~", name)
		assert.Contains(t, b.String(), "only 2 of its 4 streams decoded in the window", name)
	}
	var b bytes.Buffer
	require.NoError(t, r.writeCSV(&b))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 2)
	assert.True(t, strings.HasSuffix(lines[0], ",noisy"), lines[0])
	assert.True(t, strings.HasSuffix(lines[1], ",true"), lines[1])
}
