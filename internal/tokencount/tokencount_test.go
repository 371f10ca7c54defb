package tokencount

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"0", 0},
		{"8192", 8192},
		{" 16K ", 16384},
		{"32k", 32768},
		{"248K", 253952},
		{"1M", 1 << 20},
		{"2m", 2 << 20},
		{"1.5K", 1536},
		{"0.5M", 512 << 10},
		{"1e3", 1000},
		{"1024G", -1},
		{"12Q", -1},
		{"-1", -1},
		{"", -1},
		{"K", -1},
		{"1.5", -1}, // not whole: refused, not cut to 1
		{"0.1K", -1},
		{"0x10", -1}, // decimal only
		{"Inf", -1},
		{"NaN", -1},
		{"1_000", -1},
		{"2000000M", -1}, // beyond 2^40
		{"1e19", -1},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseTokens(tc.in)
			if tc.want < 0 {
				require.ErrorIs(t, err, Err)
				assert.Contains(t, err.Error(), `"`+strings.TrimSpace(tc.in)+`"`, "the error quotes the text")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseList(t *testing.T) {
	got, err := ParseList(" 0, 16K,32k ,1M,248K")
	require.NoError(t, err)
	assert.Equal(t, []int{0, 16384, 32768, 1 << 20, 253952}, got)

	got, err = ParseList("")
	require.NoError(t, err)
	assert.NotNil(t, got, "an empty list, not nil")
	assert.Empty(t, got)
	got, err = ParseList(" , ,")
	require.NoError(t, err)
	assert.Empty(t, got)

	_, err = ParseList("1,2,x,4")
	require.ErrorIs(t, err, Err)
	assert.Contains(t, err.Error(), `"x"`)
}

func TestFormat(t *testing.T) {
	for n, want := range map[int]string{0: "0", 1: "1", 1000: "1000", 1024: "1K", 16384: "16K", 253952: "248K", 1 << 20: "1024K", 1536: "1536"} {
		assert.Equal(t, want, Format(n))
	}
}

// FuzzParseTokens checks the token-count syntax of the command lines
// ("16K"): no panic, every count it accepts is whole and within range,
// formats and parses back, and parses alike in a list.
func FuzzParseTokens(f *testing.F) {
	for _, s := range []string{"0", "16K", "248k", "8192", "1.5K", "1M", "", "K", "-1", "1e3", "1.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseTokens(s)
		if err != nil {
			return
		}
		if v < 0 || v > maxTokenCount {
			t.Fatalf("%q parsed to %d", s, v)
		}
		back, err := parseTokens(Format(v))
		if err != nil || back != v {
			t.Fatalf("%q → %d → %q → %d, %v", s, v, Format(v), back, err)
		}
		if strings.Contains(s, ",") {
			return
		}
		list, err := ParseList(strings.Repeat(s+",", 3))
		if err != nil || len(list) != 3 || list[0] != v || list[2] != v {
			t.Fatalf("a list of %q: %v, %v", s, list, err)
		}
	})
}
