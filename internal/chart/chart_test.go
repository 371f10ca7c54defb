package chart

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func label(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// TestAxes: a linear axis runs from 0 past the largest value at round
// steps, a log axis ticks 1, 2, 5 × 10ⁿ, levels sit on a log₂ scale, and
// every point lands inside the plot area.
func TestAxes(t *testing.T) {
	c := New("t", "c", "x", "y")
	x := c.XLinear(7.3, label)
	y := c.YLinear(430, label)
	assert.Equal(t, c.Left, x(0))
	assert.Equal(t, []string{"0", "2", "4", "6", "8"}, labels(c.XTicks))
	assert.Equal(t, []string{"0", "100", "200", "300", "400", "500"}, labels(c.YTicks))
	assert.InDelta(t, c.Bottom, y(0), 1e-9)
	c.Add("s", 1, []Point{{X: 1, Y: 10, Title: "a"}, {X: 7.3, Y: 430, Title: "b", Hollow: true}}, x, y)
	require.Len(t, c.Series, 1)
	s := c.Series[0]
	assert.Equal(t, Colors[1], s.Color)
	for _, d := range s.Dots {
		assert.True(t, d.X >= c.Left && d.X <= c.Right && d.Y >= c.Top && d.Y <= c.Bottom, "%+v inside the plot", d)
	}
	assert.True(t, s.Dots[1].Hollow)

	l := New("t", "c", "x", "y")
	lx := l.XLevels([]int{1, 2, 4, 8})
	assert.InDelta(t, (lx(1)+lx(4))/2, lx(2), 1e-9, "log₂: 2 halfway between 1 and 4")
	ly := l.YLog(0.8, 1.3, label)
	assert.Greater(t, len(l.YTicks), 2, "a short range still has ticks")
	assert.Less(t, ly(1.3), ly(0.8), "higher is up")

	assert.Equal(t, []float64{1, 5, 20, 100, 500, 2000}, LogTicks(1, 5000), "1, 2, 5 × 10ⁿ thinned to seven at most")
	assert.LessOrEqual(t, len(LogTicks(1, 1e9)), 7)
	assert.Equal(t, 5.0, NiceStep(3.2))
	assert.Equal(t, 1.0, NiceStep(0))
}

func labels(ts []Tick) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Label)
	}
	return out
}

func ExampleChart() {
	c := New("TTFT", "median by rate", "requests a second", "ms")
	x, y := c.XLinear(4, label), c.YLinear(180, label)
	c.Add("median", 0, []Point{{X: 1, Y: 40}, {X: 2, Y: 55}, {X: 4, Y: 180}}, x, y)
	fmt.Println(c.Series[0].Points)
	fmt.Println(labels(c.YTicks))
	// Output:
	// 204.0,234.8 344.0,215.6 624.0,55.6
	// [0 50 100 150 200]
}
