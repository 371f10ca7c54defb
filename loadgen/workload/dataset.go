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
	done bool
	// Skipped counts the records skipped so far.
	Skipped int
}

// newDatasetReader returns a reader of the dataset in r; name, if not
// empty, names it in errors.
func newDatasetReader(r io.Reader, name string) *datasetReader {
	return &datasetReader{name: name, s: newRecordScanner(r)}
}

// rawRecord is a record as it is decoded.
type rawRecord struct {
	Conversations *[]struct {
		From  *string `json:"from"`
		Value *string `json:"value"`
	} `json:"conversations"`
	Prompt       *string `json:"prompt"`
	OutputTokens *int    `json:"output_tokens"`
}

// Next returns the next record, or io.EOF after the last. A malformed
// record is a [*ParseError]; reading may go on after it, unless the file's
// structure is lost (a JSON array that ends early), in which case the
// next call returns io.EOF.
func (d *datasetReader) Next() (datasetRecord, error) {
	for {
		if d.done {
			return datasetRecord{}, io.EOF
		}
		raw, line, err := d.s.next()
		if errors.Is(err, io.EOF) {
			d.done = true
			return datasetRecord{}, io.EOF
		}
		if err != nil {
			if _, ok := errors.AsType[errStructure](err); ok {
				d.done = true
			}
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
	switch {
	case r.Conversations != nil && r.Prompt != nil:
		return rec, errors.New(`the record has both "conversations" and "prompt": give one`)
	case r.Prompt != nil:
		if r.OutputTokens != nil {
			if *r.OutputTokens < 1 || *r.OutputTokens > MaxLength {
				return rec, fmt.Errorf("output_tokens %d is not from 1 to %d", *r.OutputTokens, MaxLength)
			}
			rec.OutputTokens = *r.OutputTokens
		}
		if *r.Prompt != "" {
			rec.Turns = []loadgen.Message{{Role: "user", Content: *r.Prompt}}
		}
		return rec, nil
	case r.Conversations != nil:
		if r.OutputTokens != nil {
			return rec, errors.New(`output_tokens belongs to a "prompt" record, not to a conversation`)
		}
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
			user = user || role == "user"
			turns = append(turns, loadgen.Message{Role: role, Content: *t.Value})
		}
		if user && len(turns) >= 2 {
			rec.Turns = turns
		}
		return rec, nil
	}
	return rec, errors.New(`the record has neither "conversations" (ShareGPT) nor "prompt"`)
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
// file. Two formats are read, recognised record by record:
//
//   - ShareGPT: {"conversations": [{"from": "human", "value": "..."},
//     {"from": "gpt", "value": "..."}, ...]} (other fields are ignored),
//     as a JSON array of such objects or one a line (JSONL). Speakers
//     are human or user, gpt, assistant, chatgpt, bard, bing or model,
//     and system.
//   - Prompts, vLLM's custom dataset: {"prompt": "...", "output_tokens": N}
//     one a line, output_tokens optional.
//
// A record that has no user turn is skipped and counted, as vLLM skips
// conversations of fewer than two turns; anything else that is not one of
// these forms is a [*ParseError] naming its line. A record's request is
// its conversation up to its first user turn (a system message before it
// included); its output length is the record's output_tokens, else the
// estimated length of the reply that follows in the record
// (four for every three words).
type Dataset struct {
	Path string
	// Records counts the usable records; Skipped those without a user
	// turn.
	Records, Skipped int
}

// OpenDataset reads the dataset at path through (see [Dataset] for its
// formats) and returns it when every record is well formed and at least one is
// usable. Otherwise the error is a [*FileError] listing the malformed
// records by line, or [ErrEmpty]: a run should refuse to start rather
// than measure another workload than the one asked for.
func OpenDataset(path string) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	d := &Dataset{Path: path}
	name := filepath.Base(path)
	r := newDatasetReader(f, name)
	fe := &FileError{Name: name}
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			d.Records++
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			return nil, fmt.Errorf("workload: read %s: %w", name, err)
		}
		fe.add(pe)
	}
	d.Skipped = r.Skipped
	if fe.Count > 0 {
		return nil, fe
	}
	if d.Records == 0 {
		return nil, fmt.Errorf("%w: %s has no record with a user turn (%d skipped)", ErrEmpty, name, d.Skipped)
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
		f, err := os.Open(d.Path)
		if err != nil {
			return nil, fmt.Errorf("workload: %w", err)
		}
		return &datasetItems{f: f, r: newDatasetReader(f, filepath.Base(d.Path)), output: output, rng: rng}, nil
	})
}

// datasetItems reads the items of one pass over a dataset file.
type datasetItems struct {
	f      *os.File
	r      *datasetReader
	output Length
	rng    *rand.Rand
}

func (d *datasetItems) Read() (Item, error) {
	rec, err := d.r.Next()
	if err != nil {
		return Item{}, err
	}
	return rec.Item(d.output, d.rng), nil
}

func (d *datasetItems) Close() error { return d.f.Close() }
