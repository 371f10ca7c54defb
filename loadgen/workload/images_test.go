package workload_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/internal/harness/fifotest"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/workload"
)

// dataURLOf is the data URL a dataset's image file is sent as.
func dataURLOf(t *testing.T, path, mediaType string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return "data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(b)
}

// readItems reads n items of a dataset, in the file's order.
func readItems(t *testing.T, d *workload.Dataset, n int) []workload.Item {
	t.Helper()
	items := d.Items(nil, 1)
	defer items.(io.Closer).Close()
	var got []workload.Item
	for range n {
		it, err := items.Read()
		require.NoError(t, err)
		got = append(got, it)
	}
	return got
}

// ShareGPT4V's records carry their images in "image", paths under the
// dataset's directory: each is read and sent as a data URL with the first
// user turn, whose "<image>" placeholders are removed; a record whose
// image file is missing is skipped and counted, as vLLM skips it.
func TestShareGPT4VImages(t *testing.T) {
	d, err := workload.OpenDataset("testdata/sharegpt4v.json")
	require.NoError(t, err)
	assert.Equal(t, 3, d.Records)
	assert.Equal(t, 2, d.Images, "records with images")
	assert.Equal(t, 1, d.MissingImages, "the record whose coco image was not downloaded")
	assert.Contains(t, (&workload.Mix{Dataset: d}).String(), "3 records, 2 with images, 1 whose image file is missing skipped")

	red := dataURLOf(t, "testdata/images/red-56x56.png", "image/png")
	blue := dataURLOf(t, "testdata/images/blue-84x28.png", "image/png")
	items := readItems(t, d, 4)
	assert.Equal(t, []loadgen.Message{{Role: "user", Content: "What colour is this square?"}}, items[0].Messages)
	assert.Equal(t, []string{red}, items[0].Images)
	assert.Equal(t, "Compare and .", items[1].Messages[0].Content)
	assert.Equal(t, []string{red, blue}, items[1].Images, "in the record's order")
	assert.Equal(t, "No picture here.", items[2].Messages[0].Content)
	assert.Nil(t, items[2].Images)
	assert.Equal(t, items[0].Images, items[3].Images, "the file again from its start")
}

// OpenAI chat records carry images as image_url parts: data URLs and
// http(s) URLs are sent as they are, files as data URLs, after the text
// of the first user message.
func TestChatImages(t *testing.T) {
	d, err := workload.OpenDataset("testdata/chat-images.jsonl")
	require.NoError(t, err)
	assert.Equal(t, 3, d.Records)
	assert.Equal(t, 2, d.Images)
	items := readItems(t, d, 3)

	assert.Equal(t, []loadgen.Message{{Role: "system", Content: "Answer briefly."}, {Role: "user", Content: "What is in the picture?"}}, items[0].Messages)
	require.Len(t, items[0].Images, 1)
	assert.True(t, strings.HasPrefix(items[0].Images[0], "data:image/png;base64,iVBOR"), "the record's data URL, as it is")
	assert.Equal(t, workload.EstimateTokens("A green square."), items[0].OutputTokens, "the reply's estimated length")

	blue := dataURLOf(t, "testdata/images/blue-84x28.png", "image/png")
	assert.Equal(t, []loadgen.Message{{Role: "user", Content: "Name the animal."}}, items[1].Messages)
	assert.Equal(t, []string{"https://example.com/cat.jpg", blue}, items[1].Images)
	assert.Equal(t, []loadgen.Message{{Role: "user", Content: "Text alone, as a string."}}, items[2].Messages)
	assert.Nil(t, items[2].Images)

	// The Builder sends the record's images, then its own.
	b := &workload.Builder{API: loadgen.Chat, Model: "m", Images: []string{"https://example.com/extra.png"}}
	body, err := b.Request(items[1]).Body()
	require.NoError(t, err)
	var sent struct {
		Messages []struct {
			Content []struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				ImageURL struct {
					URL string `json:"url"`
				} `json:"image_url"`
			} `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(body, &sent))
	require.Len(t, sent.Messages, 1)
	parts := sent.Messages[0].Content
	require.Len(t, parts, 4)
	assert.Equal(t, "Name the animal.", parts[0].Text)
	assert.Equal(t, []string{"https://example.com/cat.jpg", blue, "https://example.com/extra.png"},
		[]string{parts[1].ImageURL.URL, parts[2].ImageURL.URL, parts[3].ImageURL.URL})

	// A dataset with images and an API that sends text alone: refused
	// before anything is sent.
	m := &workload.Mix{Dataset: d, Builder: workload.Builder{API: loadgen.Completions}}
	assert.ErrorContains(t, m.Validate(), "2 records with images, and the completions API sends text alone")
	m.Builder.API = loadgen.Messages
	assert.NoError(t, m.Validate())
}

// Every bad image is refused with its record's line and what is wrong.
func TestDatasetImagesMalformed(t *testing.T) {
	_, err := workload.OpenDataset("testdata/chat-images-malformed.jsonl")
	var fe *workload.FileError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, 8, fe.Count)
	f, err := os.Open("testdata/chat-images-malformed.jsonl")
	require.NoError(t, err)
	defer f.Close()
	root, err := os.OpenRoot("testdata")
	require.NoError(t, err)
	defer root.Close()
	recs, errs := readAll(t, workload.NewDatasetReaderIn(f, "bad.jsonl", root))
	assert.Empty(t, recs)
	want := []string{
		`bad.jsonl:1: image "images/notes.txt" holds text/plain; charset=utf-8, not a PNG, JPEG, GIF or WebP image`,
		`bad.jsonl:2: messages[0].content[0]: image "../secret.png": a file must be a path inside the dataset's directory`,
		`bad.jsonl:3: messages[0].content[0]: an image's data URL is not valid base64`,
		`bad.jsonl:4: messages[0] is the assistant's and holds an image: images go in user messages`,
		`bad.jsonl:5: messages[0].content[0] is of type "input_audio": want text or image_url`,
		`bad.jsonl:6: "image" is not a string or an array of strings`,
		`bad.jsonl:7: messages[0].content[0]: image "/etc/passwd": a file must be a path inside the dataset's directory`,
		`bad.jsonl:8: messages[0].content[0]: an image_url part must hold image_url.url`,
	}
	require.Len(t, errs, len(want))
	for i, w := range want {
		assert.Contains(t, errs[i].Error(), w)
		assert.Equal(t, i+1, errs[i].Line)
	}
}

// A file linked from inside the dataset's directory to outside it is
// not read: an image file must be under the directory.
func TestDatasetImageOutsideDirectory(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	png, err := os.ReadFile("testdata/images/red-56x56.png")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(outside+"/red.png", png, 0o600))
	require.NoError(t, os.Symlink(outside+"/red.png", dir+"/link.png"))
	require.NoError(t, os.WriteFile(dir+"/d.jsonl", []byte(`{"prompt": "p", "image": "link.png"}`+"\n"), 0o600))
	_, err = workload.OpenDataset(dir + "/d.jsonl")
	assert.ErrorContains(t, err, `line 1: image "link.png"`)
	assert.ErrorContains(t, err, "escapes")
}

// A named pipe among a dataset's images is refused at once, with its
// record's line: opening it to read would wait for a writer for ever,
// where SIGTERM cannot end the wait.
func TestDatasetImageNamedPipe(t *testing.T) {
	dir := t.TempDir()
	pipe := fifotest.New(t, dir, "pipe.png")
	require.NoError(t, os.WriteFile(dir+"/d.jsonl", []byte(`{"prompt": "p", "image": "pipe.png"}`+"\n"), 0o600))
	err := fifotest.Within(t, pipe, func() error { _, err := workload.OpenDataset(dir + "/d.jsonl"); return err })
	assert.ErrorContains(t, err, `line 1: image "pipe.png"`)
	assert.ErrorContains(t, err, "is a named pipe, not a regular file")

	// The dataset itself, read again for every pass, must be a file too.
	err = fifotest.Within(t, pipe, func() error { _, err := workload.OpenDataset(pipe); return err })
	assert.ErrorContains(t, err, "is a named pipe, not a regular file")
}
