// Package requestlog writes each request of a run as one line of JSON, as
// the request ends, for the commands' -requests-out: its times, tokens,
// outcome and the server's own timings, with the run or cell it belongs
// to. A [Writer] buffers a line at a time, so a run of any length is
// written in the same small memory.
//
// A line, its fields left out when unknown or zero:
//
//	{"run":"8 streams","id":"cmpl-…","model":"m","window":"inside","outcome":"completed",
//	 "due":"2026-01-02T03:04:05.000001Z","start":"…","sent":"…","headers":"…",
//	 "first":"…","first_answer":"…","last":"…","end":"…",
//	 "queue_ms":0.012,"late_ms":0.061,"ttft_ms":41.2,"ttfo_ms":160.3,"latency_ms":812.5,"from_due_ms":812.6,
//	 "output_tokens":128,"reasoning_tokens":20,"chunks":128,"prompt_tokens":512,"completion_tokens":128,
//	 "finish_reason":"length","source":"usage_deltas",
//	 "server":{"source":"vllm","queue_ms":3.1,"prefill_ms":36.4,"generation_ms":770.2,"mean_itl_ms":6.06},
//	 "split":{"queue_ms":3.1,"prefill_ms":36.4,"rest_ms":1.7}}
//
// queue_ms is from when the request was due to when the client began it;
// late_ms to when it was written: in an open loop, its lateness against
// the schedule. id is the server's X-Request-Id; first_answer and ttfo_ms the first
// token of the answer after any reasoning. window is where the request ended relative to the measurement window:
// "before" (a warm-up request, counted in the summary's Warmup alone),
// "inside" or "after". A failed request has "error" (its kind) and
// "message".
//
// Times and durations are the wall clock's, as the client measured them.
// Against llmload's simulator at a speed other than 1 the matrix's reports
// speak in the simulated server's time: a line's durations are that speed
// times shorter than the report's figures.
package requestlog

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/llmload/llmload/internal/safefile"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// Writer writes request lines to a file or another writer. Its methods are
// safe for concurrent use. A write error stops the writing; Close returns
// it.
type Writer struct {
	mu    sync.Mutex
	w     *bufio.Writer
	c     io.Closer
	line  []byte
	lines int
	err   error

	// anchor is the one wall-clock reading every time written is counted
	// from, by the monotonic clock: a time read as the process began and
	// one read now differ by any step the system clock took between (a
	// virtual machine resumed, the time first synchronised), so written as
	// they are, "sent" could precede "start" by a minute.
	anchor time.Time
}

// Create creates the file at path and returns a Writer to it. An
// existing file is replaced only when replace; a symbolic link, a named
// pipe or a device is refused, as [safefile.Create] does.
func Create(path string, replace bool) (*Writer, error) {
	f, err := safefile.Create(path, replace)
	return fileWriter(f, err)
}

// Append opens the file at path, creating it if need be, and returns a
// Writer that adds to what it holds: for a run resumed. It refuses what
// [safefile.Append] refuses.
func Append(path string) (*Writer, error) { return fileWriter(safefile.Append(path)) }

func fileWriter(f *os.File, err error) (*Writer, error) {
	if err != nil {
		return nil, err
	}
	w := New(f)
	w.c = f
	return w, nil
}

// New returns a Writer to w.
func New(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 64<<10), line: make([]byte, 0, 1024), anchor: time.Now()}
}

// Write writes the line of one finished request: run names the run or the
// cell, window is the run's measurement window as the request ended (zero
// before it opened). req may be nil.
func (w *Writer) Write(run string, window metrics.Window, req *loadgen.Request, tl *metrics.Timeline) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	w.line = appendLine(w.line[:0], w.anchor, run, window, req, tl)
	if _, err := w.w.Write(w.line); err != nil {
		w.err = err
		return
	}
	w.lines++
}

// Lines returns how many lines have been written.
func (w *Writer) Lines() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lines
}

// Close writes what is buffered and closes the file Create opened. It
// returns the first error of any write.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.w.Flush(); err != nil && w.err == nil {
		w.err = err
	}
	if w.c != nil {
		if err := w.c.Close(); err != nil && w.err == nil {
			w.err = err
		}
		w.c = nil
	}
	return w.err
}

// Where returns where a request that ended at end lies against the
// window: "before", "inside" or "after". A request with no end is placed
// by its last token, as the recorder places it.
func Where(window metrics.Window, tl *metrics.Timeline) string {
	end := tl.End
	if end.IsZero() {
		end = tl.Last
	}
	switch {
	case window.IsZero() || end.Before(window.Start):
		return "before"
	case !tl.End.Before(window.End):
		return "after"
	}
	return "inside"
}

func appendLine(b []byte, anchor time.Time, run string, window metrics.Window, req *loadgen.Request, tl *metrics.Timeline) []byte {
	b = append(b, '{')
	b = appendString(b, "run", run)
	if tl.ID != "" {
		b = appendString(b, "id", tl.ID)
	}
	if req != nil && req.Model != "" {
		b = appendString(b, "model", req.Model)
	}
	b = appendString(b, "window", Where(window, tl))
	b = appendString(b, "outcome", tl.Outcome())
	if tl.Kind != metrics.KindNone {
		b = appendString(b, "error", string(tl.Kind))
	}
	if tl.Err != nil {
		b = appendString(b, "message", tl.Err.Error())
	}
	for _, t := range [...]struct {
		name string
		t    time.Time
	}{
		{"due", tl.Due}, {"start", tl.Start}, {"sent", tl.Sent}, {"headers", tl.Headers},
		{"first", tl.First}, {"first_answer", tl.FirstAnswer}, {"last", tl.Last}, {"end", tl.End},
	} {
		if !t.t.IsZero() {
			b = append(b, '"')
			b = append(b, t.name...)
			b = append(b, `":"`...)
			b = anchor.Add(t.t.Sub(anchor)).UTC().AppendFormat(b, "2006-01-02T15:04:05.000000000Z07:00")
			b = append(b, `",`...)
		}
	}
	if !tl.Due.IsZero() && !tl.Start.IsZero() {
		b = appendMS(b, "queue_ms", tl.Start.Sub(tl.Due))
	}
	if !tl.Due.IsZero() && !tl.Sent.IsZero() {
		b = appendMS(b, "late_ms", tl.Sent.Sub(tl.Due))
	}
	if d := tl.TTFT(); d > 0 {
		b = appendMS(b, "ttft_ms", d)
	}
	if d := tl.TTFO(); d > 0 {
		b = appendMS(b, "ttfo_ms", d)
	}
	if d := tl.Latency(); d > 0 {
		b = appendMS(b, "latency_ms", d)
		if !tl.Due.IsZero() {
			b = appendMS(b, "from_due_ms", tl.End.Sub(tl.Due))
		}
	}
	b = appendInt(b, "output_tokens", tl.OutputTokens())
	b = appendInt(b, "reasoning_tokens", tl.ReasoningTokens)
	if tl.ReasoningOverclaim > 0 {
		b = appendInt(b, "reasoning_overclaim", tl.ReasoningOverclaim)
	}
	b = appendInt(b, "chunks", tl.Chunks)
	b = appendInt(b, "prompt_tokens", tl.PromptTokens)
	b = appendInt(b, "completion_tokens", tl.CompletionTokens)
	b = appendInt(b, "cached_tokens", tl.CachedTokens)
	if tl.FinishReason != "" {
		b = appendString(b, "finish_reason", tl.FinishReason)
	}
	if tl.Source != "" {
		b = appendString(b, "source", string(tl.Source))
	}
	if d := tl.Server.Dropped; d != "" {
		b = appendString(b, "server_timings_dropped", d)
	}
	if s := tl.Server; s.Source != "" {
		b = append(b, `"server":{`...)
		b = appendString(b, "source", s.Source)
		b = appendMS(b, "queue_ms", s.Queue)
		if s.Prefill > 0 {
			b = appendMS(b, "prefill_ms", s.Prefill)
		}
		b = appendMS(b, "generation_ms", s.Generation)
		if s.MeanITL > 0 {
			b = appendMS(b, "mean_itl_ms", s.MeanITL)
		}
		b = closeObject(b)
		b = append(b, ',')
		if q, p, r, ok := tl.Split(); ok {
			b = append(b, `"split":{`...)
			b = appendMS(b, "queue_ms", q)
			b = appendMS(b, "prefill_ms", p)
			b = appendMS(b, "rest_ms", r)
			b = closeObject(b)
			b = append(b, ',')
		}
	}
	b = closeObject(b)
	return append(b, '\n')
}

// closeObject replaces a trailing comma with the object's closing brace.
func closeObject(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == ',' {
		b = b[:n-1]
	}
	return append(b, '}')
}

func appendString(b []byte, name, v string) []byte {
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, `":`...)
	q, _ := json.Marshal(v) // a string always marshals
	b = append(b, q...)
	return append(b, ',')
}

func appendInt(b []byte, name string, v int) []byte {
	if v == 0 {
		return b
	}
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, `":`...)
	b = strconv.AppendInt(b, int64(v), 10)
	return append(b, ',')
}

// appendMS writes d in milliseconds, to the microsecond.
func appendMS(b []byte, name string, d time.Duration) []byte {
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, `":`...)
	b = strconv.AppendFloat(b, float64(d.Round(time.Microsecond).Microseconds())/1000, 'f', -1, 64)
	return append(b, ',')
}
