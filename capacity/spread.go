package capacity

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// availableRange sets the range of b.AvailableKV and returns its reasons.
// The profile run's terms (the activation and non-torch memory, where
// estimated) are off by at most Spread times their sum for a launch like
// the table's rows, and by SpreadPerDistance more for each unit of its
// distance from them (see distance); the weights and the CUDA graphs, where
// estimated, add their own ranges. tp is the tensor-parallel size.
func (mm *memoryModel) availableRange(v string, b *Budget, tp int) []string {
	var profile int64
	for _, t := range []Term{b.Activation, b.NonTorch} {
		if t.Estimated {
			profile += t.Bytes
		}
	}
	d, why := mm.distance(v, b, tp)
	k := mm.spreadAt(d)
	spread := scaled(profile, k)
	kv := &b.AvailableKV
	kv.Low = kv.Bytes - spread - (b.Weights.High - b.Weights.Bytes) - (b.CUDAGraphs.High - b.CUDAGraphs.Bytes)
	kv.High = kv.Bytes + spread + (b.Weights.Bytes - b.Weights.Low) + (b.CUDAGraphs.Bytes - b.CUDAGraphs.Low)
	if profile <= 0 {
		return nil
	}
	r := fmt.Sprintf("the range: ±%.0f%% of the estimated activation and non-torch memory (±%.2f GiB), what covers %.0f%% of the table's start-up logs predicted one at a time",
		100*k, float64(spread)/gibibyte, 100*rangeCoverage)
	if d > 0 {
		r = fmt.Sprintf("the range: ±%.0f%% of the estimated activation and non-torch memory (±%.2f GiB): %.0f%% for a launch like the table's rows, + %.0f%% for each unit of distance from them (%.2f here), what covers %.0f%% of the table's rows predicted with their utilization, GPU, version or tensor parallelism held out; wider: %s",
			100*k, float64(spread)/gibibyte, 100*mm.Spread, 100*mm.SpreadPerDistance, d, 100*rangeCoverage, strings.Join(why, "; "))
	}
	return []string{r + "; the weights and CUDA graphs add their own ranges where estimated"}
}

// spreadAt is the spread, as a share of the estimated activation and
// non-torch memory, of a launch at distance d from the table's rows.
func (mm *memoryModel) spreadAt(d float64) float64 {
	return mm.Spread + mm.SpreadPerDistance*d
}

// The distance of a launch from the table's rows is the sum, over the
// settings the memory terms were fitted across, of how far its setting lies
// outside every calibrated row's, each in a unit of about one step the table
// has seen: versionStep minor releases of vLLM, and a doubling (or halving)
// of gpu_memory_utilization, of the GPU's memory, or of the tensor-parallel
// size. A setting some calibrated row has adds nothing.
//
// Utilization is one of them though no term of the budget scales with it.
// vLLM's determine_available_memory (vllm/v1/worker/gpu_worker.py, 0.9 on)
// leaves the KV cache total × gpu_memory_utilization less the non-KV memory
// its memory_profiling (vllm/utils) measured: the weights, the profile run's
// torch peak increase and the non-torch increase since the worker's first
// snapshot. None of them depends on the utilization, so an error in them is
// a larger share of the smaller pool a low utilization leaves, a share the
// table's rows (all at 0.90–0.95) never measured.
const versionStep = 4

// distance returns how far a launch of vLLM version v with budget b on tp
// GPUs lies from the table's rows, and why, one reason a setting.
func (mm *memoryModel) distance(v string, b *Budget, tp int) (float64, []string) {
	var d float64
	var why []string
	if dv, r := mm.versionDistance(v); dv > 0 {
		d, why = d+dv, append(why, r)
	}
	u := b.Utilization
	switch {
	case mm.TableUtilLow > 0 && u < mm.TableUtilLow-0.005:
		d += math.Log2(mm.TableUtilLow / u)
		why = append(why, fmt.Sprintf("utilization %.2f is below every calibrated row (%.2f–%.2f)", u, mm.TableUtilLow, mm.TableUtilHigh))
	case mm.TableUtilHigh > 0 && u > mm.TableUtilHigh+0.005:
		d += math.Log2(u / mm.TableUtilHigh)
		why = append(why, fmt.Sprintf("utilization %.2f is above every calibrated row (%.2f–%.2f)", u, mm.TableUtilLow, mm.TableUtilHigh))
	}
	gib := float64(b.TotalBytes) / gibibyte
	if g := nearestLog2(gib, mm.TableGPUGiB); g > math.Log2(1.05) {
		d += g
		why = append(why, fmt.Sprintf("a GPU of %.2f GiB is unlike every calibrated one (%s GiB)", gib, joinFloats(mm.TableGPUGiB)))
	}
	tps := make([]float64, len(mm.TableTP))
	for i, n := range mm.TableTP {
		tps[i] = float64(n)
	}
	if g := nearestLog2(float64(max(tp, 1)), tps); g > 0 {
		d += g
		why = append(why, fmt.Sprintf("tensor parallelism %d is in no calibrated row (%s)", max(tp, 1), joinInts(mm.TableTP)))
	}
	return d, why
}

// versionDistance returns how far vLLM version v lies from the table's
// versions, in units of versionStep minor releases, and why.
func (mm *memoryModel) versionDistance(v string) (float64, string) {
	ma, mi, _ := version(v)
	at := 100*ma + mi
	minors := math.MaxInt
	for _, tv := range mm.TableVersions {
		tma, tmi, ok := version(tv)
		if ok {
			minors = min(minors, abs(100*tma+tmi-at))
		}
	}
	if minors == 0 || minors == math.MaxInt {
		return 0, ""
	}
	d := float64(minors) / versionStep
	newMa, newMi, _ := version(mm.TableNewest)
	switch {
	case versionBefore(v, mm.TableOldest):
		return d, fmt.Sprintf("vLLM %s is older than every calibrated row (oldest %s)", v, mm.TableOldest)
	case !before(v, newMa, newMi+1):
		return d, fmt.Sprintf("vLLM %s is newer than every calibrated row (newest %s): its terms are assumed unchanged since", v, mm.TableNewest)
	}
	return d, fmt.Sprintf("vLLM %d.%d is in no calibrated row (they have %s): its terms are those fitted to the versions around it", ma, mi, strings.Join(mm.TableVersions, ", "))
}

// nearestLog2 returns |log₂(x ÷ y)| for the y of ys nearest x that way; 0
// when ys is empty.
func nearestLog2(x float64, ys []float64) float64 {
	if len(ys) == 0 || x <= 0 {
		return 0
	}
	best := math.Inf(1)
	for _, y := range ys {
		if y > 0 {
			best = min(best, math.Abs(math.Log2(x/y)))
		}
	}
	if math.IsInf(best, 1) {
		return 0
	}
	return best
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// joinFloats writes xs as "23.58, 79.19".
func joinFloats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', -1, 64)
	}
	return strings.Join(parts, ", ")
}

// joinInts writes ns as "1, 2, 4".
func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ", ")
}
