package benchcmd

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// ImageNote flags pictures the server counted too few tokens for to have
// been read by a vision model (Ollama's 9 for a 448×448 picture sent to a
// text-only model), and no others.
func TestImageNote(t *testing.T) {
	assert.Contains(t, ImageNote(9, []string{"448x448"}), "counted 9 prompt tokens for 1 pictures of at least 224x224 pixels")
	assert.Contains(t, ImageNote(0, []string{"448x448"}), "reported no prompt tokens")
	assert.Empty(t, ImageNote(256, []string{"448x448"}), "Qwen2-VL's count")
	assert.Empty(t, ImageNote(64, []string{"448x448", "224x224*1"}))
	assert.Contains(t, ImageNote(20, []string{"448x448", "448x448"}), "2 pictures")
	assert.Empty(t, ImageNote(4, []string{"56x56"}), "a small picture may cost few tokens")
	assert.Empty(t, ImageNote(0, nil))
}
