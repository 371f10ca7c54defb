package dcgm

import (
	"math"
	"strings"
	"testing"
	"time"
)

// FuzzParse feeds parse any text: it returns points or an error, and a
// point's figures are finite and plausible numbers or NaN (none given or
// dropped), never a panic.
func FuzzParse(f *testing.F) {
	f.Add("# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-1\",modelName=\"NVIDIA H100\",Hostname=\"n\"} 245.5\n")
	f.Add("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"} 319159391\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\"} 1e3\n")
	f.Add("DCGM_FI_DEV_GPU_UTIL 40\nDCGM_FI_DEV_FB_USED{gpu=\"0\",GPU_I_ID=\"1\"} NaN\n")
	f.Add("# TYPE DCGM_FI_DEV_POWER_USAGE counter\nDCGM_FI_DEV_POWER_USAGE -Inf\n")
	f.Fuzz(func(t *testing.T, text string) {
		var d drops
		gpus, err := parse(strings.NewReader(text), "0", time.Unix(1, 0), &d)
		if err != nil {
			return
		}
		for k, p := range gpus {
			if k == "" || !p.at.Equal(time.Unix(1, 0)) {
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
