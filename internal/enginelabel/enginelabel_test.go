package enginelabel

import "testing"

// TestOf: the engine and its version, the engine alone without a version,
// nothing without either.
func TestOf(t *testing.T) {
	for _, tc := range []struct{ engine, version, want string }{
		{"vllm", "0.10.1", "vllm 0.10.1"},
		{"vllm", "", "vllm"},
		{"vllm", " 0.10.1 ", "vllm 0.10.1"},
		{"", "", ""},
	} {
		if got := Of(tc.engine, tc.version); got != tc.want {
			t.Errorf("Of(%q, %q) = %q, want %q", tc.engine, tc.version, got, tc.want)
		}
	}
}
