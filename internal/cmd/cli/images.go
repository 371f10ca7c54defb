package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/llmload/llmload/internal/picture"
	"github.com/llmload/llmload/loadgen"
)

// ImageFlags are -image (repeatable: WxH, or WxH*N for N of them) and
// -image-format: pictures drawn by llmload and sent with every prompt.
type ImageFlags struct {
	sizes  imageSizes
	format string
}

// maxImages bounds the pictures a request carries.
const maxImages = picture.MaxCount

type imageSizes []picture.Size

func (s *imageSizes) String() string {
	if s == nil {
		return ""
	}
	var parts []string
	for _, z := range *s {
		parts = append(parts, z.String())
	}
	return strings.Join(parts, ",")
}

func (s *imageSizes) Set(v string) error {
	sizes, err := picture.ParseSizes(v)
	if err != nil {
		return err
	}
	if len(*s)+len(sizes) > maxImages {
		return fmt.Errorf("more than %d images a request", maxImages)
	}
	*s = append(*s, sizes...)
	return nil
}

// Register defines the flags on fs.
func (f *ImageFlags) Register(fs *flag.FlagSet) {
	fs.Var(&f.sizes, "image", "send a picture of WIDTHxHEIGHT pixels with every prompt, after its text (repeatable; WxH*N for N of them): drawn by llmload from the seed, as a data URL (chat's image_url part, Responses' input_image, Messages' image block)")
	fs.StringVar(&f.format, "image-format", "png", "encoding of -image's pictures: png or jpeg")
}

// Check refuses flags that cannot work with api, before anything runs.
func (f *ImageFlags) Check(api loadgen.API) error {
	if _, err := picture.ParseFormat(f.format); err != nil {
		return fmt.Errorf("-image-format: %w", err)
	}
	if len(f.sizes) > 0 {
		return conversational(api, "-image", "sends text alone")
	}
	return nil
}

// conversational refuses flag, which only a conversation's APIs (chat,
// responses, messages) send, with another API, saying what that API does
// instead (such as "sends text alone").
func conversational(api loadgen.API, flag, instead string) error {
	switch api {
	case loadgen.Chat, loadgen.Responses, loadgen.Messages:
		return nil
	}
	return fmt.Errorf("%s: the %v API %s; use -api chat, responses or messages", flag, api, instead)
}

// Sizes returns the sizes asked for, as "WxH" each, and the format; nil
// when no -image was given.
func (f *ImageFlags) Sizes() ([]string, string) {
	if len(f.sizes) == 0 {
		return nil, ""
	}
	out := make([]string, len(f.sizes))
	for i, s := range f.sizes {
		out[i] = s.String()
	}
	format, _ := picture.ParseFormat(f.format)
	return out, string(format)
}

// URLs returns the pictures as data URLs, drawn from seed (the i-th from
// seed+i), or nil when no -image was given.
func (f *ImageFlags) URLs(seed uint64) ([]string, error) {
	format, err := picture.ParseFormat(f.format)
	if err != nil {
		return nil, err
	}
	var urls []string
	for i, s := range f.sizes {
		u, err := picture.DataURL(s, format, seed+uint64(i))
		if err != nil {
			return nil, err
		}
		urls = append(urls, u)
	}
	return urls, nil
}

// Describe says what the flags send, for a report: "1 image of 448x448
// (png)", or "".
func (f *ImageFlags) Describe() string {
	if len(f.sizes) == 0 {
		return ""
	}
	format, _ := picture.ParseFormat(f.format)
	noun := "image"
	if len(f.sizes) > 1 {
		noun = "images"
	}
	return fmt.Sprintf("%d %s of %s (%s) a request", len(f.sizes), noun, f.sizes.String(), format)
}

// Format returns -image-format as given, known or not.
func (f *ImageFlags) Format() string { return f.format }
