package workload

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmload/llmload/internal/bounded"
	"github.com/llmload/llmload/internal/safefile"
)

// Bounds on a dataset's images.
const (
	// maxRecordImages bounds the images of one record.
	maxRecordImages = 64
	// maxImageBytes bounds one image file, and one data URL's decoded
	// image.
	maxImageBytes = 16 << 20
	// maxRecordImageBytes bounds the image files of one record together.
	maxRecordImageBytes = 64 << 20
	// maxImageURL bounds an http(s) image URL.
	maxImageURL = 8 << 10
)

// imageMediaTypes are the image types a dataset's files may hold, as
// http.DetectContentType names them: the ones OpenAI's API and vLLM read.
var imageMediaTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// An imageRef is one image of a record: a URL sent as it is (a data URL,
// or an http(s) URL the server fetches), or a file under the dataset's
// directory, sent as a data URL.
type imageRef struct {
	url  string
	path string // slash-separated, under the dataset's directory
}

// errImageMissing marks a record whose image file does not exist: the
// record is skipped and counted, as vLLM skips a ShareGPT4V record whose
// image was not downloaded.
var errImageMissing = errors.New("workload: an image file is missing")

// parseImageRef reads one image reference of a record: a data URL
// (data:image/TYPE;base64,DATA), an http(s) URL, or a relative path.
func parseImageRef(s string) (imageRef, error) {
	switch {
	case strings.HasPrefix(s, "data:"):
		if err := checkDataURL(s); err != nil {
			return imageRef{}, err
		}
		return imageRef{url: s}, nil
	case strings.HasPrefix(s, "http://"), strings.HasPrefix(s, "https://"):
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || len(s) > maxImageURL {
			return imageRef{}, fmt.Errorf("image %.60q is not an http(s) URL of at most %d bytes with a host", s, maxImageURL)
		}
		return imageRef{url: s}, nil
	case strings.HasPrefix(s, "file:"):
		return imageRef{}, fmt.Errorf("image %.60q: give a file as a path relative to the dataset's directory, not a file: URL", s)
	}
	p := filepath.ToSlash(s)
	if !filepath.IsLocal(s) || strings.ContainsRune(s, 0) || strings.HasPrefix(p, "/") {
		return imageRef{}, fmt.Errorf("image %.60q: a file must be a path inside the dataset's directory (relative, without ..)", s)
	}
	return imageRef{path: p}, nil
}

// checkDataURL says what is wrong with an image's data URL, if anything.
func checkDataURL(s string) error {
	head, data, ok := strings.Cut(strings.TrimPrefix(s, "data:"), ",")
	mediaType, b64 := strings.CutSuffix(head, ";base64")
	if !ok || !b64 || !strings.HasPrefix(mediaType, "image/") {
		return fmt.Errorf("image %.40q is a data URL that is not data:image/TYPE;base64,DATA", s)
	}
	if base64.StdEncoding.DecodedLen(len(data)) > maxImageBytes {
		return fmt.Errorf("an image's data URL holds more than %d MiB", maxImageBytes>>20)
	}
	if _, err := base64.StdEncoding.DecodeString(data); err != nil {
		return fmt.Errorf("an image's data URL is not valid base64: %v", err)
	}
	return nil
}

// imageList reads a ShareGPT4V (LLaVA) record's "image": one path or URL,
// or an array of them.
func imageList(raw json.RawMessage) ([]imageRef, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []string
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		list = []string{s}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errors.New(`"image" is not a string or an array of strings: give a path or URL, or a list of them`)
	}
	if len(list) > maxRecordImages {
		return nil, fmt.Errorf(`"image" holds %d images, above %d a record`, len(list), maxRecordImages)
	}
	refs := make([]imageRef, 0, len(list))
	for _, s := range list {
		ref, err := parseImageRef(s)
		if err != nil {
			return nil, err
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// stripImageTags removes ShareGPT4V's (LLaVA's) "<image>" placeholders
// from a turn, with the line break or space that follows one: the images go as
// content parts, and the server's template places them.
func stripImageTags(s string) string {
	if !strings.Contains(s, "<image>") {
		return s
	}
	s = strings.NewReplacer("<image>\n", "", "<image> ", "", "<image>", "").Replace(s)
	return strings.TrimSpace(s)
}

// A contentPart is one part of an OpenAI chat message's content.
type contentPart struct {
	Type     string          `json:"type"`
	Text     *string         `json:"text"`
	ImageURL json.RawMessage `json:"image_url"`
}

// parseContent reads an OpenAI chat message's content: a string, or an
// array of text and image_url parts. The text parts are joined by blank
// lines; the images are returned in order.
func parseContent(raw json.RawMessage, where string) (string, []imageRef, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", nil, err
		}
		return s, nil, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil || len(raw) == 0 || raw[0] != '[' {
		return "", nil, fmt.Errorf(`%s.content is neither a string nor an array of content parts`, where)
	}
	var texts []string
	var images []imageRef
	for i, p := range parts {
		switch p.Type {
		case "text":
			if p.Text == nil {
				return "", nil, fmt.Errorf(`%s.content[%d] is a text part without "text"`, where, i)
			}
			texts = append(texts, *p.Text)
		case "image_url":
			u, err := partURL(p.ImageURL)
			if err != nil {
				return "", nil, fmt.Errorf("%s.content[%d]: %w", where, i, err)
			}
			ref, err := parseImageRef(u)
			if err != nil {
				return "", nil, fmt.Errorf("%s.content[%d]: %w", where, i, err)
			}
			if len(images) == maxRecordImages {
				return "", nil, fmt.Errorf("%s holds more than %d images", where, maxRecordImages)
			}
			images = append(images, ref)
		default:
			return "", nil, fmt.Errorf("%s.content[%d] is of type %.40q: want text or image_url", where, i, p.Type)
		}
	}
	return strings.Join(texts, "\n\n"), images, nil
}

// partURL reads an image_url part's URL: {"url": "..."} as OpenAI sends
// it, or the URL as a string.
func partURL(raw json.RawMessage) (string, error) {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var obj struct {
		URL *string `json:"url"`
	}
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &obj) != nil || obj.URL == nil {
		return "", errors.New(`an image_url part must hold image_url.url`)
	}
	return *obj.URL, nil
}

// checkImageFiles checks the image files of refs under root: each a
// regular file of at most [maxImageBytes] holding a PNG, JPEG, GIF or
// WebP image, together at most [maxRecordImageBytes]. A file that does not
// exist is errImageMissing.
func checkImageFiles(root *os.Root, refs []imageRef) error {
	total := int64(0)
	for _, ref := range refs {
		if ref.path == "" {
			continue
		}
		if root == nil {
			return fmt.Errorf("image %.60q is a file, and the dataset has no directory to find it in", ref.path)
		}
		f, err := safefile.OpenIn(root, filepath.FromSlash(ref.path))
		if errors.Is(err, fs.ErrNotExist) {
			return errImageMissing
		}
		if err != nil {
			return fmt.Errorf("image %.60q: %v", ref.path, err)
		}
		size, kind, err := sniffImage(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("image %.60q: %v", ref.path, err)
		}
		if !imageMediaTypes[kind] {
			return fmt.Errorf("image %.60q holds %s, not a PNG, JPEG, GIF or WebP image", ref.path, kind)
		}
		if total += size; total > maxRecordImageBytes {
			return fmt.Errorf("the record's image files take more than %d MiB", maxRecordImageBytes>>20)
		}
	}
	return nil
}

// sniffImage returns the size of the regular file f (opened with
// [safefile.OpenIn], which refuses anything else) and the media type its
// first bytes show.
func sniffImage(f *os.File) (int64, string, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, "", err
	}
	switch {
	case fi.Size() == 0:
		return 0, "", errors.New("is empty")
	case fi.Size() > maxImageBytes:
		return 0, "", fmt.Errorf("is larger than %d MiB", maxImageBytes>>20)
	}
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return 0, "", err
	}
	return fi.Size(), http.DetectContentType(head[:n]), nil
}

// imageURLs returns the URLs refs are sent as: a file read from root
// as a data URL of its media type.
func imageURLs(root *os.Root, refs []imageRef) ([]string, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	urls := make([]string, len(refs))
	for i, ref := range refs {
		if ref.path == "" {
			urls[i] = ref.url
			continue
		}
		if root == nil {
			return nil, fmt.Errorf("image %.60q is a file, and the dataset has no directory to find it in", ref.path)
		}
		b, err := readImage(root, ref.path)
		if err != nil {
			return nil, fmt.Errorf("workload: image %.60q: %w", ref.path, err)
		}
		kind := http.DetectContentType(b)
		if !imageMediaTypes[kind] {
			return nil, fmt.Errorf("workload: image %.60q holds %s now, not an image", ref.path, kind)
		}
		var sb strings.Builder
		sb.Grow(len("data:;base64,") + len(kind) + base64.StdEncoding.EncodedLen(len(b)))
		sb.WriteString("data:" + kind + ";base64,")
		enc := base64.NewEncoder(base64.StdEncoding, &sb)
		enc.Write(b)
		enc.Close()
		urls[i] = sb.String()
	}
	return urls, nil
}

// readImage reads an image file under root, at most maxImageBytes.
func readImage(root *os.Root, path string) ([]byte, error) {
	f, err := safefile.OpenIn(root, filepath.FromSlash(path))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, whole, err := bounded.Read(f, maxImageBytes)
	switch {
	case err != nil:
		return nil, err
	case !whole:
		return nil, fmt.Errorf("is larger than %d MiB", maxImageBytes>>20)
	}
	return b, nil
}
