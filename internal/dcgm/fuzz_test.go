package dcgm

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmload/llmload/internal/promtext"
)

// FuzzPoints feeds any text to the exporter's reading: it parses or is
// refused, and a point's figures are finite and plausible numbers or NaN
// (none given or dropped), never a panic. (promtext's FuzzParse fuzzes
// the parser itself, with the exporter's pages among its seeds.)
func FuzzPoints(f *testing.F) {
	f.Add("# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-1\",modelName=\"NVIDIA H100\",Hostname=\"n\"} 245.5\n")
	f.Add("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"} 319159391\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\"} 1e3\n")
	f.Add("DCGM_FI_DEV_GPU_UTIL 40\nDCGM_FI_DEV_FB_USED{gpu=\"0\",GPU_I_ID=\"1\"} NaN\n")
	f.Add("# TYPE DCGM_FI_DEV_POWER_USAGE counter\nDCGM_FI_DEV_POWER_USAGE -Inf\n")
	f.Fuzz(func(t *testing.T, text string) {
		families, err := promtext.Parse(strings.NewReader(text))
		if err != nil {
			return
		}
		var d drops
		for k, p := range points(families, "0", time.Unix(1, 0), &d) {
			if k == "" || !p.at.Equal(time.Unix(1, 0)) && p.at.UnixMilli() <= 0 { // the reading's time, or the exporter's
				t.Fatalf("point %q: %+v", k, p)
			}
			for _, v := range []float64{p.energy, p.power, p.util, p.memoryMB} {
				if math.IsInf(v, 0) || v < 0 {
					t.Fatalf("point %q: %+v", k, p)
				}
			}
			if p.power > maxWatts || p.util > 100 {
				t.Fatalf("point %q: %+v", k, p)
			}
		}
	})
}
