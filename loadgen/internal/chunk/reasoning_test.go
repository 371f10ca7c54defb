package chunk

import "testing"

// TestThinkSplitAllocatesNothing: reading inline reasoning whose tags come
// Split over deltas, the per-token path, allocates nothing.
func TestThinkSplitAllocatesNothing(t *testing.T) {
	deltas := [][]byte{[]byte(`"<th"`), []byte(`"ink>plan"`), []byte(`" more </th"`), []byte(`"in"`), []byte(`"k>"`), []byte(`"answer"`)}
	allocs := testing.AllocsPerRun(100, func() {
		var rs ReasoningSplit
		for _, d := range deltas {
			rs.inThink(d)
		}
		if rs.think != thinkAfter {
			t.Fatal("the tags were not read")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations a response", allocs)
	}
}
