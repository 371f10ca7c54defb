// Package picture makes the images llmload sends to vision-language
// models: deterministic PNG or JPEG pictures of a given size, drawn from
// a seed, as data URLs, each encoded once and cached.
package picture

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
)

// MaxSide bounds a picture's width and height, in pixels.
const MaxSide = 4096

// MaxCount bounds the pictures one -image flag may ask for (WxH*N).
const MaxCount = 64

// Size is a picture's width and height in pixels.
type Size struct{ W, H int }

// String returns "WxH".
func (s Size) String() string { return strconv.Itoa(s.W) + "x" + strconv.Itoa(s.H) }

// ParseSizes reads "WxH" or "WxH*N" (N pictures of that size).
func ParseSizes(s string) ([]Size, error) {
	dims, count, many := strings.Cut(strings.TrimSpace(s), "*")
	n := 1
	if many {
		var err error
		if n, err = strconv.Atoi(strings.TrimSpace(count)); err != nil || n < 1 || n > MaxCount {
			return nil, fmt.Errorf("image %q: the count after * must be 1 to %d", s, MaxCount)
		}
	}
	ws, hs, ok := strings.Cut(strings.ToLower(strings.TrimSpace(dims)), "x")
	w, werr := strconv.Atoi(ws)
	h, herr := strconv.Atoi(hs)
	if !ok || werr != nil || herr != nil {
		return nil, fmt.Errorf("image %q: want WIDTHxHEIGHT in pixels, such as 448x448, or 448x448*2 for two", s)
	}
	if w < 1 || h < 1 || w > MaxSide || h > MaxSide {
		return nil, fmt.Errorf("image %q: each side must be 1 to %d pixels", s, MaxSide)
	}
	out := make([]Size, n)
	for i := range out {
		out[i] = Size{w, h}
	}
	return out, nil
}

// Format is a picture's encoding: "png" or "jpeg".
type Format string

// The formats a picture is encoded in.
const (
	PNG  Format = "png"
	JPEG Format = "jpeg"
)

// ParseFormat reads "png", "jpeg" or "jpg".
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "png", "":
		return PNG, nil
	case "jpeg", "jpg":
		return JPEG, nil
	}
	return "", fmt.Errorf("image format %q: want png or jpeg", s)
}

type key struct {
	size   Size
	format Format
	seed   uint64
}

var (
	mu    sync.Mutex
	cache = map[key]string{}
)

// maxCached bounds the cache: beyond it, pictures are made again.
const maxCached = 256

// DataURL returns the picture of size, format and seed as a data URL
// ("data:image/png;base64,..."). The same arguments give the same
// picture, encoded once.
func DataURL(size Size, format Format, seed uint64) (string, error) {
	if size.W < 1 || size.H < 1 || size.W > MaxSide || size.H > MaxSide {
		return "", fmt.Errorf("picture: size %v: each side must be 1 to %d pixels", size, MaxSide)
	}
	k := key{size, format, seed}
	mu.Lock()
	u, ok := cache[k]
	mu.Unlock()
	if ok {
		return u, nil
	}
	b, err := Encode(size, format, seed)
	if err != nil {
		return "", err
	}
	u = "data:image/" + string(format) + ";base64," + base64.StdEncoding.EncodeToString(b)
	mu.Lock()
	if len(cache) < maxCached {
		cache[k] = u
	}
	mu.Unlock()
	return u, nil
}

// Encode returns the picture of size, format and seed, encoded: soft
// gradients under a few blocks of colour placed by the seed, which
// compress about as well as a photograph does.
func Encode(size Size, format Format, seed uint64) ([]byte, error) {
	img := draw(size, seed)
	var buf bytes.Buffer
	var err error
	switch format {
	case PNG:
		err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img)
	case JPEG:
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85})
	default:
		err = errors.New("want png or jpeg")
	}
	if err != nil {
		return nil, fmt.Errorf("picture: encode %v %s: %w", size, format, err)
	}
	return buf.Bytes(), nil
}

func draw(size Size, seed uint64) *image.NRGBA {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	img := image.NewNRGBA(image.Rect(0, 0, size.W, size.H))
	r0, g0, b0 := rng.IntN(256), rng.IntN(256), rng.IntN(256)
	for y := range size.H {
		for x := range size.W {
			i := img.PixOffset(x, y)
			img.Pix[i] = uint8(r0 + 255*x/size.W)
			img.Pix[i+1] = uint8(g0 + 255*y/size.H)
			img.Pix[i+2] = uint8(b0 + 127*(x+y)/(size.W+size.H))
			img.Pix[i+3] = 0xff
		}
	}
	for range 8 {
		c := color.NRGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 0xff}
		x0, y0 := rng.IntN(size.W), rng.IntN(size.H)
		x1, y1 := min(size.W, x0+1+rng.IntN(max(1, size.W/3))), min(size.H, y0+1+rng.IntN(max(1, size.H/3)))
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				img.SetNRGBA(x, y, c)
			}
		}
	}
	return img
}
