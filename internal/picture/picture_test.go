package picture

import (
	"bytes"
	"encoding/base64"
	"image"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseSizes(t *testing.T) {
	got, err := ParseSizes("448x448")
	require.NoError(t, err)
	assert.Equal(t, []Size{{448, 448}}, got)
	got, err = ParseSizes("640X480*3")
	require.NoError(t, err)
	assert.Equal(t, []Size{{640, 480}, {640, 480}, {640, 480}}, got)
	for _, bad := range []string{"", "448", "x448", "448x", "0x10", "10x-1", "5000x10", "10x10*0", "10x10*65", "10x10*a", "axb"} {
		_, err := ParseSizes(bad)
		assert.Error(t, err, bad)
	}
}

// TestDataURL: the same size, format and seed give the same picture, of
// that size and format; another seed another picture.
func TestDataURL(t *testing.T) {
	for _, f := range []Format{PNG, JPEG} {
		a, err := DataURL(Size{320, 200}, f, 1)
		require.NoError(t, err)
		b, err := DataURL(Size{320, 200}, f, 1)
		require.NoError(t, err)
		assert.Equal(t, a, b)
		raw, err := Encode(Size{320, 200}, f, 1) // not the cache's: encoded again, the same
		require.NoError(t, err)
		assert.Equal(t, "data:image/"+string(f)+";base64,"+base64.StdEncoding.EncodeToString(raw), a)
		c, err := DataURL(Size{320, 200}, f, 2)
		require.NoError(t, err)
		assert.NotEqual(t, a, c)
		data, _ := strings.CutPrefix(a, "data:image/"+string(f)+";base64,")
		dec, err := base64.StdEncoding.DecodeString(data)
		require.NoError(t, err)
		cfg, format, err := image.DecodeConfig(bytes.NewReader(dec))
		require.NoError(t, err)
		assert.Equal(t, string(f), format)
		assert.Equal(t, [2]int{320, 200}, [2]int{cfg.Width, cfg.Height})
	}
	_, err := DataURL(Size{0, 5}, PNG, 1)
	assert.Error(t, err)
}
