package figure

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/llmload/llmload/metrics"
)

func TestFigures(t *testing.T) {
	assert.Equal(t, "0.0123", Significant(0.01234))
	assert.Equal(t, "12.3", Significant(12.34))
	assert.Equal(t, "1,234", Significant(1234.4))
	assert.Equal(t, "1 context", Plural(1, "context", "contexts"))
	assert.Equal(t, "6 contexts", Plural(6, "context", "contexts"))
	assert.Equal(t, 0.3, Round(0.1+0.2))
	assert.True(t, math.IsNaN(Round(math.NaN())))
	assert.Equal(t, "GPUs: 4,215 J at 140.5 W mean · 1.23 tok/J · 0.813 J a token · $0.42 per million tokens",
		Energy(&metrics.Energy{Joules: 4215, MeanWatts: 140.5, TokensPerJoule: 1.23, JoulesPerToken: 0.813, DollarsPerMillionTokens: 0.42}))
}
