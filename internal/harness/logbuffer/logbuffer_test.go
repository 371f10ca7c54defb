package logbuffer_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/llmload/llmload/internal/harness/logbuffer"
)

// TestConcurrentWrites: lines written by many goroutines while another
// reads all arrive whole.
func TestConcurrentWrites(t *testing.T) {
	var b logbuffer.Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				fmt.Fprintf(&b, "%d-%d\n", i, j)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	assert.Len(t, lines, 800)
	assert.Contains(t, lines, "7-99")
}
