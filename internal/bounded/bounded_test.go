package bounded

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestRead(t *testing.T) {
	for _, c := range []struct {
		in    string
		limit int64
		whole bool
	}{
		{"", 0, true},
		{"abc", 3, true},
		{"abc", 10, true},
		{"abcd", 3, false},
		{"a", 0, false},
	} {
		data, whole, err := Read(strings.NewReader(c.in), c.limit)
		if err != nil {
			t.Fatalf("Read(%q, %d): %v", c.in, c.limit, err)
		}
		if whole != c.whole {
			t.Errorf("Read(%q, %d): whole %v, want %v", c.in, c.limit, whole, c.whole)
		}
		if whole && string(data) != c.in {
			t.Errorf("Read(%q, %d) = %q", c.in, c.limit, data)
		}
		if !whole && int64(len(data)) != c.limit+1 {
			t.Errorf("Read(%q, %d) read %d bytes of a larger input, want limit+1", c.in, c.limit, len(data))
		}
	}
}

func TestReadStopsAtTheLimit(t *testing.T) {
	r := io.MultiReader(strings.NewReader("0123456789"), iotest.ErrReader(errors.New("read past the limit")))
	if _, whole, err := Read(r, 4); err != nil || whole {
		t.Fatalf("Read = whole %v, %v; want false, nil without reading further", whole, err)
	}
}

func TestReadPassesTheError(t *testing.T) {
	want := errors.New("disk")
	if _, _, err := Read(iotest.ErrReader(want), 10); !errors.Is(err, want) {
		t.Fatalf("Read: %v, want %v", err, want)
	}
}
