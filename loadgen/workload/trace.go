package workload

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/safefile"
	"github.com/llmload/llmload/loadgen"
)

// The trace formats [OpenTrace] reads, by the names [Trace.Format] gives
// them.
const (
	// formatMooncake is the JSONL trace of Mooncake (FAST '25), one request a
	// line: {"timestamp": MS, "input_length": N, "output_length": N,
	// "hash_ids": [ID, ...]}, timestamp in milliseconds and hash_ids
	// optional: one ID for each block of [DefaultBlockTokens] prompt
	// tokens, equal IDs for equal prefixes.
	formatMooncake = "mooncake"
	// formatAzure is the CSV of Azure's LLM inference traces (2023, 2024): a
	// header naming TIMESTAMP, ContextTokens and GeneratedTokens (in any
	// order, with any other columns), then one request a line, its
	// TIMESTAMP as "2023-11-16 18:15:46.6805900".
	formatAzure = "azure"
)

// DefaultBlockTokens is the prompt tokens one Mooncake hash ID stands for.
const DefaultBlockTokens = 512

// A traceEntry is one request of a trace.
type traceEntry struct {
	// Line is where it is in its file.
	Line int
	// At is when it arrived, from the trace's first request.
	At time.Duration
	// InputTokens and OutputTokens are its prompt's and its output's
	// lengths.
	InputTokens, OutputTokens int
	// HashIDs name its prompt's blocks (Mooncake): requests that share a
	// leading run of IDs share that prefix.
	HashIDs []int64
}

// traceReader reads the requests of a trace, one at a time, from a
// stream: memory does not grow with the file. It recognises the format
// (Mooncake or Azure) by the first line that is not blank. Times must
// not go backwards; lengths are whole numbers, at least 1 and at most
// 2²⁴. Anything else is a [*ParseError] naming its line.
type traceReader struct {
	name   string
	s      *recordScanner
	format string
	cols   [3]int // Azure: the columns of TIMESTAMP, ContextTokens, GeneratedTokens
	ncols  int
	first  time.Time // Azure: the first request's time
	start  float64   // Mooncake: the first request's timestamp, in ms
	last   time.Duration
	seen   bool
}

// newTraceReader returns a reader of the trace in r; name, if not empty,
// names it in errors.
func newTraceReader(r io.Reader, name string) *traceReader {
	s := newRecordScanner(r)
	s.mode = modeLines
	return &traceReader{name: name, s: s}
}

// next returns the next request, or io.EOF after the last. A malformed
// record is a [*ParseError]; reading may go on after it, unless it was the
// header of a CSV file.
func (t *traceReader) next() (traceEntry, error) {
	for {
		raw, line, err := t.s.next()
		if errors.Is(err, io.EOF) {
			return traceEntry{}, io.EOF
		}
		fail := func(err error) (traceEntry, error) {
			return traceEntry{}, &ParseError{Name: t.name, Line: line, Err: err}
		}
		if err != nil {
			return fail(err)
		}
		raw = bytes.TrimSpace(raw)
		if t.format == "" {
			// A byte-order mark, as editors on Windows write, is not
			// the record's.
			if raw = bytes.TrimPrefix(raw, []byte("\ufeff")); len(raw) == 0 {
				continue
			}
			if raw[0] == '{' {
				t.format = formatMooncake
			} else {
				t.format = formatAzure
				if err := t.header(raw); err != nil {
					t.s.stop()
					return fail(err)
				}
				continue
			}
		}
		var e traceEntry
		if t.format == formatMooncake {
			e, err = t.mooncake(raw)
		} else {
			e, err = t.azure(raw)
		}
		if err != nil {
			return fail(err)
		}
		if t.seen && e.At < t.last {
			return fail(fmt.Errorf("the request at %v comes before the previous one's %v: a trace must be in time order", e.At, t.last))
		}
		t.seen, t.last = true, e.At
		e.Line = line
		return e, nil
	}
}

// maxTimestampMs bounds a Mooncake timestamp: a trace's times, in
// nanoseconds from its first, must fit in a time.Duration (9.22×10^18).
const maxTimestampMs = 9e12

type mooncakeRecord struct {
	Timestamp    *float64 `json:"timestamp"`
	InputLength  *float64 `json:"input_length"`
	OutputLength *float64 `json:"output_length"`
	HashIDs      []int64  `json:"hash_ids"`
}

func (t *traceReader) mooncake(raw []byte) (traceEntry, error) {
	var r mooncakeRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return traceEntry{}, describeJSON(err)
	}

	switch {
	case r.Timestamp == nil:
		return traceEntry{}, errors.New(`no "timestamp" (milliseconds)`)
	case r.InputLength == nil:
		return traceEntry{}, errors.New(`no "input_length"`)
	case r.OutputLength == nil:
		return traceEntry{}, errors.New(`no "output_length"`)
	case !(*r.Timestamp >= 0 && *r.Timestamp < maxTimestampMs):
		return traceEntry{}, fmt.Errorf("timestamp %v is not a time in milliseconds from 0 to %g (about 290 years, the most a time.Duration holds)", *r.Timestamp, float64(maxTimestampMs))
	}
	in, err := length("input_length", *r.InputLength)
	if err != nil {
		return traceEntry{}, err
	}
	out, err := length("output_length", *r.OutputLength)
	if err != nil {
		return traceEntry{}, err
	}
	for i, h := range r.HashIDs {
		if h < 0 {
			return traceEntry{}, fmt.Errorf("hash_ids[%d] is %d: IDs are 0 or more", i, h)
		}
	}
	if !t.seen {
		t.start = *r.Timestamp
	}
	at := time.Duration(math.Round((*r.Timestamp - t.start) * float64(time.Millisecond)))
	return traceEntry{At: at, InputTokens: in, OutputTokens: out, HashIDs: slices.Clip(r.HashIDs)}, nil
}

// length checks a length read as a number.
func length(field string, v float64) (int, error) {
	if v != math.Trunc(v) || v < 1 || v > maxLength {
		return 0, fmt.Errorf("%s %v is not a whole number from 1 to %d", field, v, maxLength)
	}
	return int(v), nil
}

// azureColumns are the columns an Azure trace needs.
var azureColumns = [3]string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"}

// header finds the columns of an Azure trace.
func (t *traceReader) header(raw []byte) error {
	fields, err := csvFields(raw)
	if err != nil {
		return err
	}
	t.ncols = len(fields)
	for i, want := range azureColumns {
		t.cols[i] = slices.IndexFunc(fields, func(f string) bool { return strings.EqualFold(strings.TrimSpace(f), want) })
		if t.cols[i] < 0 {
			return fmt.Errorf("the first line is neither a Mooncake JSON record nor a CSV header with %s (it has no %s)", strings.Join(azureColumns[:], ", "), want)
		}
	}
	return nil
}

func csvFields(raw []byte) ([]string, error) {
	r := csv.NewReader(bytes.NewReader(raw))
	r.FieldsPerRecord = -1
	fields, err := r.Read()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("not a CSV line: %w", err)
	}
	return fields, nil
}

// azureTime is the layout of an Azure trace's TIMESTAMP; the fraction of a
// second, of any length, is read too.
const azureTime = "2006-01-02 15:04:05"

func (t *traceReader) azure(raw []byte) (traceEntry, error) {
	fields, err := csvFields(raw)
	if err != nil {
		return traceEntry{}, err
	}
	if len(fields) != t.ncols {
		return traceEntry{}, fmt.Errorf("%d fields, but the header has %d", len(fields), t.ncols)
	}
	ts := strings.TrimSpace(fields[t.cols[0]])
	at, err := time.Parse(azureTime, ts)
	if err != nil {
		return traceEntry{}, fmt.Errorf("TIMESTAMP %q is not a time like 2023-11-16 18:15:46.6805900", ts)
	}
	var n [2]int
	for i, col := range t.cols[1:] {
		v, err := strconv.Atoi(strings.TrimSpace(fields[col]))
		if err != nil || v < 1 || v > maxLength {
			return traceEntry{}, fmt.Errorf("%s %q is not a whole number from 1 to %d", azureColumns[i+1], fields[col], maxLength)
		}
		n[i] = v
	}
	if !t.seen {
		t.first = at
	}
	return traceEntry{At: at.Sub(t.first), InputTokens: n[0], OutputTokens: n[1]}, nil
}

// Trace is a trace file read through once: it is well formed, and holds
// Requests requests over Span, from its first request to its last.
type Trace struct {
	Path string
	// Format is the trace's format: "mooncake", the JSONL trace of
	// Mooncake (FAST '25), or "azure", the CSV of Azure's LLM inference
	// traces (2023, 2024).
	Format   string
	Requests int
	Span     time.Duration
}

// OpenTrace reads the trace at path, a record at a time (memory does not
// grow with the file), and returns it when every record is well formed and
// there is at least one. It recognises the format (Mooncake or Azure)
// by the first line that is not blank. Times must not go backwards;
// lengths are whole numbers, at least 1 and at most 2²⁴; anything
// else is a [*ParseError] naming its line.
// Otherwise the error is a [*FileError] listing the malformed records by
// line, or an error saying the file holds no request.
func OpenTrace(path string) (*Trace, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	name := filepath.Base(path)
	r := newTraceReader(f, name)
	tr := &Trace{Path: path}
	fe := &FileError{Name: name}
	for {
		e, err := r.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			tr.Requests++
			tr.Span = e.At
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			return nil, fmt.Errorf("workload: read %s: %w", name, err)
		}
		fe.add(pe)
	}
	tr.Format = r.format
	if fe.Count > 0 {
		return nil, fe
	}
	if tr.Requests == 0 {
		return nil, fmt.Errorf("%w: %s has no request", errEmpty, name)
	}
	return tr, nil
}

// Replay says how a trace's requests are made.
type Replay struct {
	// TimeScale multiplies the trace's times: 0.5 replays it twice as
	// fast, 2 at half speed. 0 means 1.
	TimeScale float64 `json:"time_scale,omitempty"`
	// BlockTokens is the prompt tokens a hash ID stands for; 0 means
	// DefaultBlockTokens.
	BlockTokens int `json:"block_tokens,omitempty"`
	// Sizing converts lengths to words.
	Sizing Sizing `json:"sizing"`
	// Seed makes the text: replays with different seeds share no prefix,
	// so one replay does not find another's in the server's cache. 0
	// means a fresh one (Item stores it here); give one to repeat a
	// replay's text on purpose.
	Seed uint64 `json:"seed,omitempty"`
}

// check reports hash IDs that do not fit an entry's input length: a
// Mooncake trace has one for each block of BlockTokens, the last one
// perhaps partial, so n IDs stand for more than (n−1) blocks and at most
// n. One block fewer is accepted (a trace that hashes only full blocks).
func (rp *Replay) check(e traceEntry) error {
	n := len(e.HashIDs)
	if n == 0 {
		return nil
	}
	block := rp.blockTokens()
	want := (e.InputTokens + block - 1) / block
	if n > want || n < want-1 {
		return fmt.Errorf("%d hash_ids for input_length %d: at %d tokens a block they stand for %d to %d tokens; give the block size the trace was hashed with, or fix the record",
			n, e.InputTokens, block, (n-1)*block+1, (n+1)*block)
	}
	return nil
}

func (rp *Replay) blockTokens() int {
	if rp.BlockTokens > 0 {
		return rp.BlockTokens
	}
	return DefaultBlockTokens
}

// item returns the request of a trace entry: a prompt of its
// InputTokens, as the server counts them, whose leading blocks are the
// text of its hash IDs, so requests that share IDs share that prefix, and
// the rest text of its own; OutputTokens as its output length; and its
// time, scaled.
func (rp *Replay) item(e traceEntry) Item {
	scale := rp.TimeScale
	if scale <= 0 {
		scale = 1
	}
	if rp.Seed == 0 {
		rp.Seed = freshSeed()
	}
	block := rp.blockTokens()
	sz := rp.Sizing
	left := sz.words(max(e.InputTokens-sz.overhead(1), 1))
	words := left
	var b strings.Builder
	b.Grow(left * 7)
	blockWords := sz.words(block)
	for _, h := range e.HashIDs {
		if left == 0 {
			break
		}
		n := min(blockWords, left)
		writeWords(&b, n, newRand(rp.Seed^0xb10c, uint64(h)))
		left -= n
	}
	writeWords(&b, left, newRand(rp.Seed^0x1ea5, uint64(e.Line)<<32^uint64(e.At)))
	return Item{
		At:           time.Duration(float64(e.At) * scale),
		Messages:     []loadgen.Message{{Role: "user", Content: b.String()}},
		InputTokens:  sz.overhead(1) + sz.tokens(words),
		OutputTokens: e.OutputTokens,
		Line:         e.Line,
	}
}

// Items returns a Reader of the trace's items, in order, ending with its
// last request. Close it to close the file. A zero rp.Seed is a fresh
// one: two readers of one trace then share no text. A record whose hash
// IDs do not fit its input length at rp's block size ends the reader with
// a [*ParseError] naming its line.
func (t *Trace) Items(rp Replay) Reader {
	if rp.Seed == 0 {
		rp.Seed = freshSeed()
	}
	return &traceItems{path: t.Path, rp: rp}
}

// check reads the trace through and reports its records whose hash IDs do
// not fit their input lengths at rp's block size, as a [*FileError].
func (t *Trace) check(rp Replay) error {
	f, err := safefile.Open(t.Path)
	if err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	name := filepath.Base(t.Path)
	r := newTraceReader(f, name)
	fe := &FileError{Name: name}
	for {
		e, err := r.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("workload: read %s: %w", name, err)
		}
		if err := rp.check(e); err != nil {
			fe.add(&ParseError{Name: name, Line: e.Line, Err: err})
		}
	}
	if fe.Count > 0 {
		return fe
	}
	return nil
}

type traceItems struct {
	path string
	rp   Replay
	f    *os.File
	r    *traceReader
}

func (t *traceItems) Read() (Item, error) {
	if t.r == nil {
		f, err := safefile.Open(t.path)
		if err != nil {
			return Item{}, fmt.Errorf("workload: %w", err)
		}
		t.f, t.r = f, newTraceReader(f, filepath.Base(t.path))
	}
	e, err := t.r.next()
	if err != nil {
		return Item{}, err
	}
	if err := t.rp.check(e); err != nil {
		return Item{}, &ParseError{Name: filepath.Base(t.path), Line: e.Line, Err: err}
	}
	return t.rp.item(e), nil
}

func (t *traceItems) Close() error {
	if t.f == nil {
		return nil
	}
	return t.f.Close()
}
