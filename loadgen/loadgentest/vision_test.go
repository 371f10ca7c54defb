package loadgentest

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/longtest"
	"github.com/llmload/llmload/internal/picture"
	"github.com/llmload/llmload/internal/simtokens"
)

func dataURL(t testing.TB, w, h int, f picture.Format) string {
	u, err := picture.DataURL(picture.Size{W: w, H: h}, f, 1)
	require.NoError(t, err)
	return u
}

// withImage is a chat request of text and one image_url part.
func withImage(text, url string) map[string]any {
	body := chat("", 1, false)
	body["messages"] = []map[string]any{{"role": "user", "content": []map[string]any{
		{"type": "text", "text": text},
		{"type": "image_url", "image_url": map[string]any{"url": url}},
	}}}
	return body
}

func promptTokensOf(t *testing.T, srv *Server, body map[string]any) (int, int, string) {
	resp, err := post(t.Context(), srv, "/v1/chat/completions", body, nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	json.Unmarshal(b, &out)
	return resp.StatusCode, out.Usage.PromptTokens, string(b)
}

// TestVisionTokens: an image costs ceil(W/28)·ceil(H/28) prompt tokens,
// within the profile's bounds, on top of the text's, PNG or JPEG.
func TestVisionTokens(t *testing.T) {
	longtest.Skip(t)
	p := quick()
	p.VisionMaxTokens = 2000
	srv := NewServer(p)
	defer srv.Close()
	text := "describe this picture in words"
	textOnly := simtokens.Count(text) + simtokens.MessageTokens + simtokens.ReplyTokens
	for _, tc := range []struct {
		w, h   int
		f      picture.Format
		tokens int
	}{
		{448, 448, picture.PNG, 16 * 16},
		{448, 448, picture.JPEG, 16 * 16},
		{449, 28, picture.PNG, 17 * 1},
		{10, 10, picture.PNG, 4},          // at least VisionMinTokens
		{2000, 2000, picture.JPEG, 2000},  // at most VisionMaxTokens
		{1280, 720, picture.PNG, 46 * 26}, // 1196
	} {
		status, got, body := promptTokensOf(t, srv, withImage(text, dataURL(t, tc.w, tc.h, tc.f)))
		require.Equal(t, http.StatusOK, status, body)
		assert.Equal(t, textOnly+tc.tokens, got, "%dx%d %s", tc.w, tc.h, tc.f)
	}
}

// TestVisionRefused: images that are not what they say, or too large, or
// not data URLs, get a 400 that says why.
func TestVisionRefused(t *testing.T) {
	srv := NewServer(quick())
	defer srv.Close()
	png448 := dataURL(t, 448, 448, picture.PNG)
	jpeg448 := dataURL(t, 448, 448, picture.JPEG)
	for _, tc := range []struct{ name, url, want string }{
		{"http", "https://example.com/cat.png", "data URLs only"},
		{"not base64", "data:image/png,abc", "base64"},
		{"media type", strings.Replace(png448, "image/png", "image/gif", 1), "image/png and image/jpeg"},
		{"png said jpeg", strings.Replace(png448, "image/png", "image/jpeg", 1), "is a png"},
		{"jpeg said png", strings.Replace(jpeg448, "image/jpeg", "image/png", 1), "is a jpeg"},
		{"garbage", "data:image/png;base64,AAAA", "does not decode"},
		{"huge", "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngHeader(100000, 3)), "each side"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := promptTokensOf(t, srv, withImage("hi", tc.url))
			assert.Equal(t, http.StatusBadRequest, status)
			assert.Contains(t, body, tc.want)
		})
	}
}

// pngHeader is the start of a PNG whose header claims w×h pixels.
func pngHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	chunk := append([]byte("IHDR"), ihdr...)
	b.Write(chunk)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

// FuzzImagePart: any image part is read or refused, never a panic, and a
// part read costs tokens within the profile's bounds.
func FuzzImagePart(f *testing.F) {
	f.Add("image_url", `{"type":"image_url","image_url":{"url":"`+dataURL(f, 30, 30, picture.PNG)+`"}}`)
	f.Add("input_image", `{"type":"input_image","image_url":"`+dataURL(f, 60, 20, picture.JPEG)+`"}`)
	f.Add("image", `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"`+base64.StdEncoding.EncodeToString(pngHeader(5, 5))+`"}}`)
	f.Add("image_url", `{"type":"image_url","image_url":"data:image/png;base64,`+base64.StdEncoding.EncodeToString(pngHeader(1<<31, 1))+`"}`)
	f.Add("image", `{"source":{"type":"url","url":"http://x"}}`)
	p := quick().withDefaults()
	f.Fuzz(func(t *testing.T, typ, raw string) {
		img, ok, err := p.imagePart(typ, json.RawMessage(raw))
		if ok && err == nil && (img.tokens < p.VisionMinTokens || img.tokens > p.VisionMaxTokens) {
			t.Fatalf("%d tokens, outside [%d, %d]", img.tokens, p.VisionMinTokens, p.VisionMaxTokens)
		}
	})
}

// TestVisionEncoderTime: a request's images cost the encoder's time when
// it is admitted cold, and nothing when the prefix cache holds every image
// token (as vLLM runs the encoder for an image any of whose tokens it must
// compute).
func TestVisionEncoderTime(t *testing.T) {
	p := FastProfile()
	p.TruthBytes = 0
	p.VisionEncodePerToken = 2e-3 // 256 tokens: 512 ms
	srv := NewServer(p)
	defer srv.Close()
	body := withImage("a picture", dataURL(t, 448, 448, picture.PNG))
	// A message after the picture's: its blocks, and the picture's, cache.
	body["messages"] = append(body["messages"].([]map[string]any), map[string]any{"role": "user", "content": simtokens.Prompt(40, "after")})
	ttft := func() time.Duration {
		start := time.Now()
		status, _, b := promptTokensOf(t, srv, body) // one token: TTFT is the whole request
		require.Equal(t, http.StatusOK, status, b)
		return time.Since(start)
	}
	cold, warm := ttft(), ttft()
	assert.GreaterOrEqual(t, cold, 512*time.Millisecond, "cold: the encoder's 512 ms")
	assert.Less(t, warm, cold-300*time.Millisecond, "warm: the images' tokens were cached")
}

// TestAdapters: the simulator serves its adapters' names beside its
// model's, lists each with the model as its parent, and refuses others.
func TestAdapters(t *testing.T) {
	p := quick()
	p.Adapters = []string{"sql-lora"}
	srv := NewServer(p)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/v1/models")
	require.NoError(t, err)
	var list struct {
		Data []struct {
			ID     string  `json:"id"`
			Parent *string `json:"parent"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	resp.Body.Close()
	require.Len(t, list.Data, 2)
	assert.Equal(t, "sql-lora", list.Data[1].ID)
	require.NotNil(t, list.Data[1].Parent)
	assert.Equal(t, DefaultModel, *list.Data[1].Parent)
	for model, want := range map[string]int{"sql-lora": http.StatusOK, DefaultModel: http.StatusOK, "other": http.StatusNotFound} {
		body := chat("hi", 1, false)
		body["model"] = model
		status, _, b := promptTokensOf(t, srv, body)
		assert.Equal(t, want, status, "%s: %s", model, b)
	}
}
