package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"
	"time"

	"github.com/tmaxmax/go-sse"
)

// readEvents frames all of r and returns the events' data. A reader that
// says ErrWouldBlock, as a poller's does, is asked again.
func readEvents(r io.Reader) ([]string, error) {
	er := NewReader(r, 1<<20)
	var out []string
	for {
		data, err := er.Next()
		if err == ErrWouldBlock {
			continue
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if er.ErrorEvent && len(data) > 0 {
			out = append(out, errorMark+string(data))
			continue
		}
		out = append(out, string(data))
	}
}

// wouldBlockReader reads r in pieces of up to 1–7 bytes, as the seed
// says, with ErrWouldBlock before each piece, as a poller's reader gives
// its bytes one recvmsg a wake.
type wouldBlockReader struct {
	r       io.Reader
	seed    uint32
	blocked bool
}

func (w *wouldBlockReader) Read(p []byte) (int, error) {
	if !w.blocked {
		w.blocked = true
		return 0, ErrWouldBlock
	}
	w.blocked = false
	w.seed = w.seed*1103515245 + 12345
	n := 1 + int(w.seed>>16)%7
	return w.r.Read(p[:min(n, len(p))])
}

// errorMark opens the data of an event of type "error" in readEvents'
// results.
const errorMark = "\x00error:"

// FuzzEventReader checks llmload's SSE framing against go-sse's sse.Read:
// the same events, the same ones of type "error", whether the stream
// arrives in one piece, a byte at a time, or in small pieces with
// ErrWouldBlock between them, as a poller feeds it. The one intended difference: at the end of the stream, an event
// whose last line is complete is dispatched without the closing blank line;
// the oracle is given that blank line.
func FuzzEventReader(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n", "data: a\r\n\r\n", "data: a\r\rdata: b\r\r", "data: a\ndata: b\n\n",
		": ping\n\nevent: message\nid: 7\ndata: x\n\n", "data: [DONE]\n", "data: cut", "\xEF\xBB\xBFdata: bom\n\n",
		"event: error\ndata: boom\n\n", "event: error\n\ndata: not an error\n\n", "event: error\nevent: message\ndata: x\n\n",
		"data:no space\n\n", "data\n\n", "data: a\r", "retry: 10\ndata: b\n\n\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		if len(input) > 64<<10 {
			return
		}
		whole, err := readEvents(bytes.NewReader(input))
		if err != nil {
			t.Fatalf("error on %q: %v", input, err)
		}
		bytewise, err := readEvents(iotest.OneByteReader(bytes.NewReader(input)))
		if err != nil {
			t.Fatalf("error a byte at a time on %q: %v", input, err)
		}
		if !equalStrings(whole, bytewise) {
			t.Fatalf("%q: whole %q, a byte at a time %q", input, whole, bytewise)
		}
		polled, err := readEvents(&wouldBlockReader{r: bytes.NewReader(input), seed: uint32(len(input))})
		if err != nil {
			t.Fatalf("error when polled on %q: %v", input, err)
		}
		if !equalStrings(whole, polled) {
			t.Fatalf("%q: whole %q, polled %q", input, whole, polled)
		}

		if bytes.Contains(input, bom) {
			// go-sse strips a byte-order mark after leading blank lines too;
			// the standard strips it only at the very start.
			return
		}
		oracle := input
		if n := len(input); n > 0 && (input[n-1] == '\n' || input[n-1] == '\r') {
			oracle = append(bytes.Clone(input), '\n', '\n')
		}
		var want []string
		for ev, err := range sse.Read(bytes.NewReader(oracle), &sse.ReadConfig{MaxEventSize: 1 << 20}) {
			if err != nil {
				t.Fatalf("go-sse failed on %q: %v", oracle, err)
			}
			if ev.Type == "error" && ev.Data != "" {
				want = append(want, errorMark+ev.Data)
				continue
			}
			want = append(want, ev.Data)
		}
		if !equalStrings(nonEmpty(whole), nonEmpty(want)) {
			t.Fatalf("%q: llmload %q, go-sse %q", input, whole, want)
		}
	})
}

func nonEmpty(s []string) []string {
	var out []string
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestEventReaderLimits(t *testing.T) {
	big := "data: " + string(bytes.Repeat([]byte("x"), 5000)) + "\n\n"
	er := NewReader(bytes.NewReader([]byte(big)), 4096)
	_, err := er.Next()
	if !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("a 5000-byte line with a 4096-byte limit: %v", err)
	}
	// Many data lines, each short, add up to the limit too.
	many := bytes.Repeat([]byte("data: 0123456789\n"), 500)
	er = NewReader(bytes.NewReader(append(many, '\n')), 4096)
	if _, err := er.Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("5,500 bytes of data lines with a 4096-byte limit: %v", err)
	}
	// A read error is passed on.
	boom := errors.New("boom")
	er = NewReader(io.MultiReader(bytes.NewReader([]byte("data: a\n\ndata: b")), iotest.ErrReader(boom)), 4096)
	if d, err := er.Next(); err != nil || string(d) != "a" {
		t.Fatalf("first event: %q %v", d, err)
	}
	if _, err := er.Next(); !errors.Is(err, boom) {
		t.Fatalf("read error: %v", err)
	}
}

// TestEventReaderLongLineInSmallReads reads a long line a byte at a time:
// each byte must not rescan the line read so far.
func TestEventReaderLongLineInSmallReads(t *testing.T) {
	line := "data: " + string(bytes.Repeat([]byte("x"), 512<<10)) + "\n\n"
	start := time.Now()
	got, err := readEvents(iotest.OneByteReader(bytes.NewReader([]byte(line))))
	if err != nil || len(got) != 1 || len(got[0]) != 512<<10 {
		t.Fatalf("got %d events, %v", len(got), err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("a 512 KiB line a byte at a time took %v", d)
	}
}

// pieces returns one piece per Read (or the part of it that fits).
type pieces [][]byte

func (p *pieces) Read(b []byte) (int, error) {
	if len(*p) == 0 {
		return 0, io.EOF
	}
	n := copy(b, (*p)[0])
	if (*p)[0] = (*p)[0][n:]; len((*p)[0]) == 0 {
		*p = (*p)[1:]
	}
	return n, nil
}

// TestEventReaderBufferGrowsAndShrinks reads a backlog, which grows the
// buffer, then a live stream of one event a read, which shrinks it back to
// its starting size.
func TestEventReaderBufferGrowsAndShrinks(t *testing.T) {
	event := func(i int) []byte {
		return fmt.Appendf(nil, "data: {\"token\":%d,\"pad\":%q}\n\n", i, bytes.Repeat([]byte("p"), 60))
	}
	var backlog []byte
	for i := range 200 {
		backlog = append(backlog, event(i)...)
	}
	src := pieces{backlog}
	const total = 200 + 5*eventReaderQuiet // enough reads to halve 16 KiB four times
	for i := 200; i < total; i++ {
		src = append(src, event(i))
	}
	er := NewReader(&src, 1<<20)
	peak := 0
	for i := range total {
		data, err := er.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if want := bytes.TrimSuffix(bytes.TrimPrefix(event(i), []byte("data: ")), []byte("\n\n")); !bytes.Equal(data, want) {
			t.Fatalf("event %d: %q, want %q", i, data, want)
		}
		peak = max(peak, len(er.buf))
		if i == 199 && peak < 4*eventReaderStart {
			t.Fatalf("a %d-byte backlog grew the buffer only to %d bytes", len(backlog), peak)
		}
	}
	if len(er.buf) != eventReaderStart {
		t.Errorf("after %d single-event reads the buffer is %d bytes (peak %d), want %d", total-200, len(er.buf), peak, eventReaderStart)
	}
	if _, err := er.Next(); err != io.EOF {
		t.Errorf("at the end: %v, want io.EOF", err)
	}
}
