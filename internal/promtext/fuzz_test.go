package promtext

import (
	"math"
	"strings"
	"testing"
)

// FuzzParse feeds Parse any text (its seeds: a DCGM exporter's page, a
// vLLM's): it returns families or an error, never a panic; each family is
// filed under its own name, and Sum, Value and Labels read every series.
func FuzzParse(f *testing.F) {
	f.Add("# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-1\",modelName=\"NVIDIA H100\",Hostname=\"n\"} 245.5\n")
	f.Add("# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"47318\",kv_cache_size_tokens=\"757087\"} 1.0\n")
	f.Add("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"bench\"} 3\n")
	f.Add("# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_sum 4\nh_count 3\n")
	f.Fuzz(func(t *testing.T, text string) {
		families, err := Parse(strings.NewReader(text))
		if err != nil {
			return
		}
		for name, fam := range families {
			if fam.GetName() != name {
				t.Fatalf("family %q filed under %q", fam.GetName(), name)
			}
			_ = Sum(fam)
			for _, m := range fam.GetMetric() {
				if _, ok := value(m); !ok && !math.IsNaN(Value(m)) {
					t.Fatalf("a %v series of %q has the value %v", fam.GetType(), name, Value(m))
				}
				if len(Labels(m)) > len(m.GetLabel()) {
					t.Fatalf("more labels than the series has: %v", m.GetLabel())
				}
			}
		}
	})
}
