package loadgentest

import (
	"bytes"
	"slices"
	"strconv"
)

// Bucket bounds of vLLM's latency histograms, in seconds.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	requestBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
		40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// histogram is a Prometheus histogram; the engine observes into it under
// engine.histMu, once per step for all its tokens.
type histogram struct {
	bounds []float64
	counts []int64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      int64
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]int64, len(bounds)+1)}
}

// observe records n observations of v.
func (h *histogram) observe(v float64, n int64) {
	i, _ := slices.BinarySearch(h.bounds, v)
	h.counts[i] += n
	h.sum += v * float64(n)
	h.n += n
}

// write appends the histogram in the text format.
func (h *histogram) write(b *bytes.Buffer, name, help, labels string) {
	b.WriteString("# HELP " + name + " " + help + "\n")
	b.WriteString("# TYPE " + name + " histogram\n")
	var cum int64
	for i, c := range h.counts {
		cum += c
		le := "+Inf"
		if i < len(h.bounds) {
			le = strconv.FormatFloat(h.bounds[i], 'g', -1, 64)
		}
		b.WriteString(name + "_bucket{" + labels + `,le="` + le + `"} ` + strconv.FormatInt(cum, 10) + "\n")
	}
	b.WriteString(name + "_sum{" + labels + "} " + strconv.FormatFloat(h.sum, 'g', -1, 64) + "\n")
	b.WriteString(name + "_count{" + labels + "} " + strconv.FormatInt(h.n, 10) + "\n")
}
