package matrix

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseGaugesEngines: the running and waiting counts of every engine
// that publishes them, under its own names.
func TestParseGaugesEngines(t *testing.T) {
	tests := []struct {
		name, text       string
		running, waiting float64
	}{
		{"vllm", "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 3\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 2\n", 3, 2},
		{"sglang", "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 5\n# TYPE sglang:num_queue_reqs gauge\nsglang:num_queue_reqs 0\n", 5, 0},
		{"llama.cpp", "# HELP llamacpp:requests_processing Number of requests processing.\n# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 4\n# HELP llamacpp:requests_deferred Number of requests deferred.\n# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred 4\n", 4, 4},
		{"tgi", "# TYPE tgi_batch_current_size gauge\ntgi_batch_current_size 8\n# TYPE tgi_queue_size gauge\ntgi_queue_size 1\n", 8, 1},
		{"running alone", "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n", 1, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := parseGauges(strings.NewReader(tc.text))
			require.NoError(t, err)
			assert.Equal(t, tc.running, g.Running)
			assert.Equal(t, tc.waiting, g.Waiting)
		})
	}
}
