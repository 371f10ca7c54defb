package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/llmload/llmload/internal/safefile"
	"github.com/llmload/llmload/loadgen"
)

// A datasetRecord is one entry of a dataset: a conversation, or a prompt.
type datasetRecord struct {
	// Line is where the record begins in its file.
	Line int
	// Turns is the conversation in order: a system message if there is
	// one, then user and assistant turns. A prompt file's record is one
	// user turn.
	Turns []loadgen.Message
	// OutputTokens is the output length the file gives (a prompt file's
	// output_tokens), or 0.
	OutputTokens int
	// Images go with the first user turn: ShareGPT4V's "image", or the
	// image_url parts of an OpenAI chat message's content.
	Images []imageRef
}

// roles maps ShareGPT's speakers to chat roles.
var roles = map[string]string{
	"human": "user", "user": "user",
	"gpt": "assistant", "assistant": "assistant", "chatgpt": "assistant", "bard": "assistant", "bing": "assistant", "model": "assistant",
	"system": "system",
}

// datasetReader reads the records of a dataset, one at a time, from a
// stream, in the formats [Dataset] gives.
type datasetReader struct {
	name string
	s    *recordScanner
	root *os.Root // the dataset's directory, where its image files are; or nil
	// Skipped counts the records skipped so far for want of a user turn;
	// MissingImages those skipped because an image file is missing.
	Skipped, MissingImages int
}

// newDatasetReader returns a reader of the dataset in r, whose image
// files are under root (nil: it has none); name, if not empty, names it
// in errors.
func newDatasetReader(r io.Reader, name string, root *os.Root) *datasetReader {
	return &datasetReader{name: name, s: newRecordScanner(r), root: root}
}

// rawRecord is a record as it is decoded.
type rawRecord struct {
	Conversations *[]struct {
		From  *string `json:"from"`
		Value *string `json:"value"`
	} `json:"conversations"`
	Prompt       *string `json:"prompt"`
	OutputTokens *int    `json:"output_tokens"`
	// Image is ShareGPT4V's (LLaVA's): a path or URL, or a list of them.
	Image json.RawMessage `json:"image"`
	// Messages is OpenAI's chat form, content parts included.
	Messages *[]struct {
		Role    *string         `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// Next returns the next record, or io.EOF after the last. A malformed
// record is a [*ParseError]; reading may go on after it, unless the file's
// structure is lost (a JSON array that ends early), in which case the
// next call returns io.EOF.
func (d *datasetReader) Next() (datasetRecord, error) {
	for {
		raw, line, err := d.s.next()
		if errors.Is(err, io.EOF) {
			return datasetRecord{}, io.EOF
		}
		if err != nil {
			return datasetRecord{}, &ParseError{Name: d.name, Line: line, Err: err}
		}
		rec, err := parseRecord(raw, line)
		if err != nil {
			return datasetRecord{}, &ParseError{Name: d.name, Line: errorLine(raw, line, err), Err: describeJSON(err)}
		}
		if rec.Turns == nil {
			d.Skipped++
			continue
		}
		if err := checkImageFiles(d.root, rec.Images); errors.Is(err, errImageMissing) {
			d.MissingImages++
			continue
		} else if err != nil {
			return datasetRecord{}, &ParseError{Name: d.name, Line: line, Err: err}
		}
		return rec, nil
	}
}

// errorLine returns the line of a JSON error within a record.
func errorLine(raw []byte, line int, err error) int {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return lineOf(raw, line, se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return lineOf(raw, line, te.Offset)
	}
	return line
}

// parseRecord decodes one record; a record without a user turn has nil
// Turns.
func parseRecord(raw []byte, line int) (datasetRecord, error) {
	var r rawRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return datasetRecord{}, err
	}
	rec := datasetRecord{Line: line}
	forms := 0
	for _, set := range []bool{r.Conversations != nil, r.Prompt != nil, r.Messages != nil} {
		if set {
			forms++
		}
	}
	if forms > 1 {
		return rec, errors.New(`the record has more than one of "conversations", "prompt" and "messages": give one`)
	}
	images, err := imageList(r.Image)
	if err != nil {
		return rec, err
	}
	if images != nil && r.Messages != nil {
		return rec, errors.New(`"image" goes with "conversations" or "prompt"; a "messages" record carries its images as image_url parts`)
	}
	switch {
	case r.Prompt != nil:
		if r.OutputTokens != nil {
			if *r.OutputTokens < 1 || *r.OutputTokens > maxLength {
				return rec, fmt.Errorf("output_tokens %d is not from 1 to %d", *r.OutputTokens, maxLength)
			}
			rec.OutputTokens = *r.OutputTokens
		}
		if text := stripImageTags(*r.Prompt); text != "" || images != nil {
			rec.Turns, rec.Images = []loadgen.Message{{Role: "user", Content: text}}, images
		}
		return rec, nil
	case r.OutputTokens != nil && (r.Conversations != nil || r.Messages != nil):
		return rec, errors.New(`output_tokens belongs to a "prompt" record, not to a conversation`)
	case r.Conversations != nil:
		turns := make([]loadgen.Message, 0, len(*r.Conversations))
		user := false
		for i, t := range *r.Conversations {
			if t.From == nil || t.Value == nil {
				return rec, fmt.Errorf(`conversations[%d] needs "from" and "value"`, i)
			}
			role, ok := roles[*t.From]
			if !ok {
				return rec, fmt.Errorf("conversations[%d] is from %q: want human, gpt or system (or user, assistant, chatgpt, bard, bing, model)", i, *t.From)
			}
			text := *t.Value
			if images != nil {
				text = stripImageTags(text)
			}
			user = user || role == "user"
			turns = append(turns, loadgen.Message{Role: role, Content: text})
		}
		if user && len(turns) >= 2 {
			rec.Turns, rec.Images = turns, images
		}
		return rec, nil
	case r.Messages != nil:
		return parseMessages(rec, *r.Messages)
	}
	return rec, errors.New(`the record has neither "conversations" (ShareGPT), "messages" (OpenAI chat) nor "prompt"`)
}

// chatRoles are the roles of an OpenAI chat record's messages.
var chatRoles = map[string]string{"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}

// parseMessages reads an OpenAI chat record: its messages, their content
// a string or text and image_url parts. The images of its first user
// message go with it; those of later user messages are checked but not
// sent (a record's request ends at its first user turn), and an image
// anywhere else is refused.
func parseMessages(rec datasetRecord, msgs []struct {
	Role    *string         `json:"role"`
	Content json.RawMessage `json:"content"`
}) (datasetRecord, error) {
	turns := make([]loadgen.Message, 0, len(msgs))
	var images []imageRef
	user := false
	for i, m := range msgs {
		if m.Role == nil || m.Content == nil {
			return rec, fmt.Errorf(`messages[%d] needs "role" and "content"`, i)
		}
		role, ok := chatRoles[*m.Role]
		if !ok {
			return rec, fmt.Errorf("messages[%d] has the role %.40q: want system, user or assistant", i, *m.Role)
		}
		text, imgs, err := parseContent(m.Content, fmt.Sprintf("messages[%d]", i))
		if err != nil {
			return rec, err
		}
		if imgs != nil && role != "user" {
			return rec, fmt.Errorf("messages[%d] is the %s's and holds an image: images go in user messages", i, role)
		}
		if role == "user" && !user {
			images = imgs
		}
		user = user || role == "user"
		turns = append(turns, loadgen.Message{Role: role, Content: text})
	}
	if user {
		rec.Turns, rec.Images = turns, images
	}
	return rec, nil
}

// describeJSON rewords a decoding error for a person reading the file;
// other errors are returned as they are.
func describeJSON(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Errorf("a record must be a JSON object, not %s", jsonArticle(te.Value))
		}
		return fmt.Errorf("%s is %s, want %s", te.Field, jsonArticle(te.Value), jsonKind(te.Type))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	return err
}

// jsonArticle names a JSON value's kind as encoding/json reports it
// ("number", "string", "array", "object", "bool"), with its article.
func jsonArticle(v string) string {
	switch v {
	case "array", "object":
		return "an " + v
	case "bool":
		return "a boolean"
	}
	if strings.HasPrefix(v, "number") {
		return "a number"
	}
	return "a " + v
}

// jsonKind names the JSON kind a Go type is decoded from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	}
	return "a number"
}

// Item returns the request a record makes: its conversation up to its
// first user turn (a system message before it included). Its output
// length is the record's OutputTokens, else the estimated length of the
// reply that follows in the record (four for every three words), else 0; a non-nil
// output replaces it with a draw from rng.
func (r datasetRecord) Item(output Length, rng *rand.Rand) Item {
	it := Item{Line: r.Line, OutputTokens: r.OutputTokens}
	for i, t := range r.Turns {
		if t.Role != "user" {
			continue
		}
		it.Messages = r.Turns[:i+1]
		if it.OutputTokens == 0 && i+1 < len(r.Turns) {
			it.OutputTokens = estimateTokens(r.Turns[i+1].Content)
		}
		break
	}
	if output != nil {
		it.OutputTokens = output.Draw(rng)
	}
	return it
}

// Dataset is a dataset file read through once: it is well formed, and
// holds Records usable records. Its records are read from disk again each
// time they are needed, one at a time: memory does not grow with the
// file. Three forms are read, recognised record by record:
//
//   - ShareGPT: {"conversations": [{"from": "human", "value": "..."},
//     {"from": "gpt", "value": "..."}, ...]} (other fields are ignored),
//     as a JSON array of such objects or one a line (JSONL). Speakers
//     are human or user, gpt, assistant, chatgpt, bard, bing or model,
//     and system. ShareGPT4V's (LLaVA's) "image" gives the images of its
//     first user turn: a path or URL, or a list of them; the turns'
//     "<image>" placeholders are removed.
//   - OpenAI chat: {"messages": [{"role": "user", "content": ...}, ...]},
//     each content a string or an array of parts, {"type": "text",
//     "text": "..."} and {"type": "image_url", "image_url": {"url":
//     "..."}}; the first user message's images are sent with it.
//   - Prompts, vLLM's custom dataset: {"prompt": "...", "output_tokens": N}
//     one a line, output_tokens optional ("image" as ShareGPT4V's).
//
// An image is a data URL (data:image/TYPE;base64,...) or an http(s) URL,
// sent as it is, or a file under the dataset's directory (a relative path
// without ..: "coco/train2017/000000000009.jpg"), checked when the
// dataset is opened and read and sent as a data URL with each request
// that carries it: a PNG, JPEG, GIF or WebP image of at most 16 MiB, at
// most 64 images and 64 MiB a record. Images go after the text of their
// message, in chat's image_url parts, Responses' input_image parts or
// Messages' image blocks.
//
// A record that has no user turn is skipped and counted, as vLLM skips
// conversations of fewer than two turns; so is a record whose image file
// does not exist, as vLLM skips ShareGPT4V records whose images were not
// downloaded. Anything else that is not one of these forms is a
// [*ParseError] naming its line. A record's request is its conversation
// up to its first user turn (a system message before it included); its
// output length is the record's output_tokens, else the estimated length
// of the reply that follows in the record (four for every three words).
type Dataset struct {
	Path string
	// Records counts the usable records; Skipped those without a user
	// turn, MissingImages those skipped because an image file is missing.
	Records, Skipped, MissingImages int
	// Images counts the usable records that carry images.
	Images int
}

// OpenDataset reads the dataset at path through (see [Dataset] for its
// formats) and returns it when every record is well formed and at least one is
// usable. Otherwise the error is a [*FileError] listing the malformed
// records by line, or an error saying it holds none: a run should refuse to start rather
// than measure another workload than the one asked for.
func OpenDataset(path string) (*Dataset, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("workload: the dataset's directory: %w", err)
	}
	defer root.Close()
	d := &Dataset{Path: path}
	name := filepath.Base(path)
	r := newDatasetReader(f, name, root)
	fe := &FileError{Name: name}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			d.Records++
			if len(rec.Images) > 0 {
				d.Images++
			}
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			return nil, fmt.Errorf("workload: read %s: %w", name, err)
		}
		fe.add(pe)
	}
	d.Skipped, d.MissingImages = r.Skipped, r.MissingImages
	if fe.Count > 0 {
		return nil, fe
	}
	if d.Records == 0 {
		return nil, fmt.Errorf("%w: %s has no record with a user turn (%d skipped, %d for a missing image)", errEmpty, name, d.Skipped, d.MissingImages)
	}
	return d, nil
}

func (fe *FileError) add(pe *ParseError) {
	fe.Count++
	if len(fe.Errs) < maxReported {
		fe.Errs = append(fe.Errs, pe)
	}
}

// Items returns a Reader of the dataset's items, in the file's order and
// from its start again after its end, each a record's request (see
// [Dataset]), its output length drawn from output, if not nil, by a
// generator seeded by seed. Close it to close the file.
func (d *Dataset) Items(output Length, seed uint64) Reader {
	rng := newRand(seed, 0xda7a)
	return cycleOf(func() (Reader, error) {
		f, err := safefile.Open(d.Path)
		if err != nil {
			return nil, fmt.Errorf("workload: %w", err)
		}
		root, err := os.OpenRoot(filepath.Dir(d.Path))
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("workload: the dataset's directory: %w", err)
		}
		return &datasetItems{f: f, root: root, r: newDatasetReader(f, filepath.Base(d.Path), root), output: output, rng: rng}, nil
	})
}

// datasetItems reads the items of one pass over a dataset file.
type datasetItems struct {
	f      *os.File
	root   *os.Root
	r      *datasetReader
	output Length
	rng    *rand.Rand
}

func (d *datasetItems) Read() (Item, error) {
	rec, err := d.r.Next()
	if err != nil {
		return Item{}, err
	}
	it := rec.Item(d.output, d.rng)
	if it.Images, err = imageURLs(d.root, rec.Images); err != nil {
		return Item{}, &ParseError{Name: d.r.name, Line: rec.Line, Err: err}
	}
	return it, nil
}

func (d *datasetItems) Close() error { return errors.Join(d.f.Close(), d.root.Close()) }
