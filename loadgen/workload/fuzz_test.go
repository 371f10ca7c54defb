package workload_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/llmload/llmload/loadgen/workload"
)

// addFiles adds the files of testdata to a fuzz target's seeds.
func addFiles(f *testing.F, names ...string) {
	for _, n := range names {
		b, err := os.ReadFile("testdata/" + n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzDataset reads any bytes as a dataset whose image files are under
// testdata: it ends, never panics, names lines that exist, and on a JSON
// array that encoding/json accepts, accounts for every element as a
// record, a skipped record or a malformed one. A record's images are at
// most 64, each a data URL, an http(s) URL or a file under testdata, and
// are sent as data URLs or http(s) URLs.
func FuzzDataset(f *testing.F) {
	addFiles(f, "sharegpt.json", "sharegpt-malformed.jsonl", "prompts.jsonl", "sharegpt4v.json", "chat-images.jsonl", "chat-images-malformed.jsonl")
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"prompt": "a"}, 1, "x", [2], {"conversations": []}]`))
	root, err := os.OpenRoot("testdata")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { root.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := bytes.Count(data, []byte{'\n'}) + 1
		r := workload.NewDatasetReaderIn(bytes.NewReader(data), "f", root)
		var records, malformed int
		for calls := 0; ; calls++ {
			if calls > len(data)+2 {
				t.Fatal("the reader does not end")
			}
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				var pe *workload.ParseError
				if !errors.As(err, &pe) {
					t.Fatalf("%v is not a *ParseError", err)
				}
				if pe.Line < 1 || pe.Line > lines {
					t.Fatalf("line %d of a file of %d lines: %v", pe.Line, lines, err)
				}
				if bytes.ContainsRune([]byte(err.Error()), '\n') {
					t.Fatalf("an error on two lines: %q", err)
				}
				malformed++
				continue
			}
			records++
			if rec.Line < 1 || rec.Line > lines {
				t.Fatalf("a record on line %d of %d", rec.Line, lines)
			}
			it := rec.Item(nil, rand.New(rand.NewPCG(1, 1)))
			if len(it.Messages) == 0 || it.Messages[len(it.Messages)-1].Role != "user" {
				t.Fatalf("an item that does not end with a user turn: %+v", it.Messages)
			}
			refs := rec.ImageRefs()
			if len(refs) > 64 {
				t.Fatalf("%d images in a record", len(refs))
			}
			urls, err := workload.ImageURLs(root, rec)
			if err != nil {
				t.Fatalf("the images of a record read through do not read again: %v", err)
			}
			for i, u := range urls {
				switch {
				case strings.HasPrefix(u, "data:image/"), strings.HasPrefix(u, "http://"), strings.HasPrefix(u, "https://"):
				default:
					t.Fatalf("image %q sent as %.40q", refs[i], u)
				}
			}
		}
		trimmed := bytes.Trim(data, " \t\r\n") // JSON's white space: not \v or \f, which a reader refuses
		var elems []json.RawMessage
		if len(trimmed) > 0 && trimmed[0] == '[' && json.Unmarshal(trimmed, &elems) == nil {
			if got := records + r.Skipped + r.MissingImages + malformed; got != len(elems) {
				t.Fatalf("%d elements, but %d records, %d skipped, %d with a missing image and %d malformed", len(elems), records, r.Skipped, r.MissingImages, malformed)
			}
		}
	})
}

// FuzzTrace reads any bytes as a trace: it ends, never panics, names
// lines that exist, and every request it yields is in time order with
// lengths in range.
func FuzzTrace(f *testing.F) {
	addFiles(f, "mooncake.jsonl", "azure.csv")
	f.Add([]byte("TIMESTAMP,ContextTokens,GeneratedTokens\n\"2023-11-16 18:15:46\",\"4\",5\n"))
	f.Add([]byte("{\"timestamp\": 1e3, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": []}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := bytes.Count(data, []byte{'\n'}) + 1
		r := workload.NewTraceReader(bytes.NewReader(data), "t")
		var last workload.TraceEntry
		for calls := 0; ; calls++ {
			if calls > len(data)+2 {
				t.Fatal("the reader does not end")
			}
			e, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				var pe *workload.ParseError
				if !errors.As(err, &pe) || pe.Line < 1 || pe.Line > lines {
					t.Fatalf("%v: not a *ParseError on a line of the file's %d", err, lines)
				}
				continue
			}
			switch {
			case e.Line < 1 || e.Line > lines:
				t.Fatalf("a request on line %d of %d", e.Line, lines)
			case e.At < last.At || e.At < 0:
				t.Fatalf("a request at %v after one at %v", e.At, last.At)
			case e.InputTokens < 1 || e.InputTokens > workload.MaxLength || e.OutputTokens < 1 || e.OutputTokens > workload.MaxLength:
				t.Fatalf("lengths out of range: %+v", e)
			}
			last = e
		}
	})
}

// FuzzParseLength reads any text as a length distribution: what it
// accepts reads back from its String, and draws within its bounds.
func FuzzParseLength(f *testing.F) {
	for _, s := range []string{"128", "0", "uniform:1,9", "normal:512,128", "normal:5,2,1,9", "lognormal:400,300", "lognormal:1,1e7", "uniform:1e3,2e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := workload.ParseLength(s)
		if err != nil {
			if !errors.Is(err, workload.ErrLength) {
				t.Fatalf("%v does not wrap ErrLength", err)
			}
			return
		}
		again, err := workload.ParseLength(l.String())
		if err != nil || again != l {
			t.Fatalf("%q reads as %#v, whose String %q reads as %#v, %v", s, l, l.String(), again, err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for range 100 {
			v := l.Draw(rng)
			if v < 0 || v > workload.MaxLength || (v == 0 && l != workload.Fixed(0)) {
				t.Fatalf("%v drew %d", l, v)
			}
		}
	})
}
