package thousands

import (
	"math"
	"testing"
)

func TestFloat(t *testing.T) {
	for _, c := range []struct {
		v    float64
		dec  int
		want string
	}{
		{1054.66, 1, "1,054.7"},
		{999.94, 1, "999.9"},
		{1234567, 0, "1,234,567"},
		{-1234.5, 1, "-1,234.5"},
		{-0.04, 1, "0.0"},
		{0, 2, "0.00"},
		{100, 0, "100"},
		{math.NaN(), 1, "—"},
		{math.Inf(-1), 0, "—"},
	} {
		if got := Float(c.v, c.dec); got != c.want {
			t.Errorf("Float(%v, %d) = %q, want %q", c.v, c.dec, got, c.want)
		}
	}
}

func TestInt(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1205: "1,205", -1205: "-1,205", 1 << 40: "1,099,511,627,776"} {
		if got := Int(n); got != want {
			t.Errorf("Int(%d) = %q, want %q", n, got, want)
		}
	}
}
