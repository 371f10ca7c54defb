package loadgentest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"image"
	_ "image/jpeg" // image.DecodeConfig reads JPEG headers
	_ "image/png"  // and PNG headers
	"strings"
)

// Bounds on the images a request may carry, against hostile input: the
// body's own bound (64 MiB) caps their bytes.
const (
	maxImages    = 64    // images a request
	maxImageSide = 16384 // pixels, each side
)

// The vision rule's defaults (see [Profile].VisionPatch).
const (
	defaultVisionPatch     = 28
	defaultVisionMinTokens = 4     // Qwen2-VL's min_pixels, 56×56
	defaultVisionMaxTokens = 16384 // Qwen2-VL's max_pixels, 16384·28²
)

// visionImage is an image of a prompt, as the encoder sees it.
type visionImage struct {
	tokens int
	hash   uint64 // of its bytes: equal images share prefix-cache blocks
}

// visionTokens is how many prompt tokens an image of w×h pixels costs:
// one a patch of VisionPatch×VisionPatch pixels (Qwen2-VL's 14-pixel
// patches merged 2×2), ceil(w/patch)·ceil(h/patch), within the profile's
// bounds.
func (p *Profile) visionTokens(w, h int) int {
	n := ceilDiv(w, p.VisionPatch) * ceilDiv(h, p.VisionPatch)
	return min(max(n, p.VisionMinTokens), p.VisionMaxTokens)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// imagePart reads an image content part in any of the three APIs' forms
// (chat's image_url, Responses' input_image, Messages' image), and reports
// whether part is one.
func (p *Profile) imagePart(typ string, raw json.RawMessage) (visionImage, bool, error) {
	var u string
	switch typ {
	case "image_url":
		var part struct {
			ImageURL json.RawMessage `json:"image_url"`
		}
		if json.Unmarshal(raw, &part) != nil {
			return visionImage{}, true, fmt.Errorf("an image_url part must hold image_url.url")
		}
		var obj struct {
			URL string `json:"url"`
		}
		if json.Unmarshal(part.ImageURL, &u) != nil && json.Unmarshal(part.ImageURL, &obj) == nil {
			u = obj.URL
		}
	case "input_image":
		var part struct {
			ImageURL string `json:"image_url"`
		}
		if json.Unmarshal(raw, &part) != nil {
			return visionImage{}, true, fmt.Errorf("an input_image part must hold image_url")
		}
		u = part.ImageURL
	case "image":
		var part struct {
			Source struct {
				Type      string `json:"type"`
				MediaType string `json:"media_type"`
				Data      string `json:"data"`
				URL       string `json:"url"`
			} `json:"source"`
		}
		if json.Unmarshal(raw, &part) != nil {
			return visionImage{}, true, fmt.Errorf("an image block must hold a source")
		}
		s := part.Source
		switch s.Type {
		case "base64":
			u = "data:" + s.MediaType + ";base64," + s.Data
		case "url":
			u = s.URL
		default:
			return visionImage{}, true, fmt.Errorf("an image block's source.type must be base64 or url, not %q", s.Type)
		}
	default:
		return visionImage{}, false, nil
	}
	img, err := p.decodeImage(u)
	return img, true, err
}

// decodeImage reads a data URL's header and the image's dimensions (not
// its pixels): it must be a PNG or a JPEG, as its media type says.
func (p *Profile) decodeImage(u string) (visionImage, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		if u == "" {
			return visionImage{}, fmt.Errorf("an image part has no URL")
		}
		return visionImage{}, fmt.Errorf("the simulator reads images from data URLs only (data:image/png;base64,...), not %.40q", u)
	}
	head, data, ok := strings.Cut(rest, ",")
	mediaType, b64 := strings.CutSuffix(head, ";base64")
	if !ok || !b64 {
		return visionImage{}, fmt.Errorf("an image's data URL must be data:image/png;base64,DATA or data:image/jpeg;base64,DATA")
	}
	var want string
	switch mediaType {
	case "image/png":
		want = "png"
	case "image/jpeg", "image/jpg":
		want = "jpeg"
	default:
		return visionImage{}, fmt.Errorf("image media type %.40q: the simulator reads image/png and image/jpeg", mediaType)
	}
	cfg, format, err := image.DecodeConfig(base64.NewDecoder(base64.StdEncoding, strings.NewReader(data)))
	if err != nil {
		return visionImage{}, fmt.Errorf("an image said to be %s does not decode: %v", mediaType, err)
	}
	if format != want {
		return visionImage{}, fmt.Errorf("an image said to be %s is a %s", mediaType, format)
	}
	if cfg.Width < 1 || cfg.Height < 1 || cfg.Width > maxImageSide || cfg.Height > maxImageSide {
		return visionImage{}, fmt.Errorf("an image of %d×%d pixels: each side must be 1 to %d", cfg.Width, cfg.Height, maxImageSide)
	}
	h := fnv.New64a()
	h.Write([]byte(data))
	return visionImage{tokens: p.visionTokens(cfg.Width, cfg.Height), hash: h.Sum64()}, nil
}

// visionToken is the id of an image's i-th token: the image's own, so
// equal images hit the prefix cache and different ones do not.
func visionToken(img visionImage, i int) uint32 {
	return uint32((img.hash>>32)^img.hash^uint64(i)*0x9e3779b9) % vocabWords
}
