package loadgentest

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FaultHeader is the request header that selects faults, e.g.
// "X-Llmload-Fault: reset-after=5". A model name can carry the same list after
// FaultModelSuffix, e.g. "bench+fault=chunk-tokens=4,crlf".
//
// The faults are a comma-separated list. A chunk below is an event that carries output tokens; faults due after K
// chunks happen only if the stream gets that far. Until such a fault has
// come, every chunk carries chunk-tokens tokens (1 by default), even when
// the handler lags the engine and would otherwise merge tokens into one
// chunk: reset-after=3 cuts a stream after exactly 3 tokens.
//
//	status=CODE          answer HTTP CODE with a vLLM error body, no stream
//	rate-limit=S         answer 429 with "Retry-After: S"
//	header-delay=D       wait D (a Go duration, wall time) before the headers
//	stall                send nothing, headers included, until the client leaves
//	stall-after=K        after K chunks send nothing more until the client leaves
//	reset-after=K        after K chunks reset the TCP connection (RST)
//	error-after=K        after K chunks send vLLM's in-stream error object, then [DONE]
//	malformed-after=K    after K chunks send one data line that is not JSON, then go on
//	eof-after=K          after K chunks end the body cleanly: no finish_reason, no [DONE]
//	no-done              end the stream without "data: [DONE]"
//	oversize=N           before the first chunk send a valid, token-less chunk padded to an N-byte line
//	chunk-tokens=K       K tokens per chunk (the last may carry fewer)
//	ping                 an SSE comment ": ping" before every event
//	sse-fields           "event: message" and "id: N" fields on every event
//	crlf                 CRLF line endings
//
// Faults that shape a stream apply to streaming requests; status,
// rate-limit, header-delay, stall and reset-after also apply to the others
// (reset-after resets before any response). The in-stream error is
// data: {"error": {"object": "error", "message": ..., "type": "InternalServerError", "param": null, "code": 500}}.
const (
	FaultHeader      = "X-Llmload-Fault"
	FaultModelSuffix = "+fault="
)

// faults is the set of faults selected for one request. Counts of chunks are
// counts of chunks that carry output tokens; -1 means off.
type faults struct {
	status      int           // answer with this HTTP status and a vLLM error body
	retryAfter  int           // with 429: the Retry-After header, in seconds
	headerDelay time.Duration // wait before sending the response headers
	stall       bool          // send nothing at all, until the client leaves
	stallAfter  int           // send nothing more after this many chunks
	resetAfter  int           // reset the connection after this many chunks
	errorAfter  int           // send vLLM's in-stream error object after this many chunks
	malformed   int           // send one malformed chunk after this many chunks
	eofAfter    int           // end the body after this many chunks: no finish_reason, no [DONE]
	noDone      bool          // end the stream without data: [DONE]
	oversize    int           // pad the first chunk's line to this many bytes
	chunkTokens int           // tokens per chunk
	ping        bool          // an SSE comment ": ping" before every event
	fields      bool          // "event:" and "id:" fields on every event
	crlf        bool          // CRLF line endings
}

// pending reports whether a fault that counts chunks is still to come
// after chunks chunks.
func (f *faults) pending(chunks int) bool {
	return max(f.stallAfter, f.resetAfter, f.errorAfter, f.malformed, f.eofAfter) > chunks
}

func noFaults() faults {
	return faults{stallAfter: -1, resetAfter: -1, errorAfter: -1, malformed: -1, eofAfter: -1, chunkTokens: 1}
}

// faultTable lists the faults: name, argument and what it does. The package
// documentation shows the same table.
var faultTable = []struct {
	name, arg string
	set       func(f *faults, n int, d time.Duration)
}{
	{"status", "CODE", func(f *faults, n int, _ time.Duration) { f.status = n }},
	{"rate-limit", "SECONDS", func(f *faults, n int, _ time.Duration) { f.status, f.retryAfter = 429, n }},
	{"header-delay", "DURATION", func(f *faults, _ int, d time.Duration) { f.headerDelay = d }},
	{"stall", "", func(f *faults, _ int, _ time.Duration) { f.stall = true }},
	{"stall-after", "K", func(f *faults, n int, _ time.Duration) { f.stallAfter = n }},
	{"reset-after", "K", func(f *faults, n int, _ time.Duration) { f.resetAfter = n }},
	{"error-after", "K", func(f *faults, n int, _ time.Duration) { f.errorAfter = n }},
	{"malformed-after", "K", func(f *faults, n int, _ time.Duration) { f.malformed = n }},
	{"eof-after", "K", func(f *faults, n int, _ time.Duration) { f.eofAfter = n }},
	{"no-done", "", func(f *faults, _ int, _ time.Duration) { f.noDone = true }},
	{"oversize", "BYTES", func(f *faults, n int, _ time.Duration) { f.oversize = n }},
	{"chunk-tokens", "K", func(f *faults, n int, _ time.Duration) { f.chunkTokens = max(n, 1) }},
	{"ping", "", func(f *faults, _ int, _ time.Duration) { f.ping = true }},
	{"sse-fields", "", func(f *faults, _ int, _ time.Duration) { f.fields = true }},
	{"crlf", "", func(f *faults, _ int, _ time.Duration) { f.crlf = true }},
}

// parse adds the faults of spec, a comma-separated list of NAME or
// NAME=VALUE, to f. It returns the first fault's name, for the record.
func (f *faults) parse(spec string) (string, error) {
	first := ""
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, val, hasVal := strings.Cut(item, "=")
		i := faultIndex(name)
		if i < 0 {
			return "", fmt.Errorf("unknown fault %q; faults are %s", name, faultNames())
		}
		ft := faultTable[i]
		var n int
		var d time.Duration
		var err error
		switch {
		case ft.arg == "" && hasVal:
			err = fmt.Errorf("fault %q takes no value", name)
		case ft.arg == "":
		case !hasVal:
			err = fmt.Errorf("fault %q needs a value: %s=%s", name, name, ft.arg)
		case ft.arg == "DURATION":
			d, err = time.ParseDuration(val)
		default:
			n, err = strconv.Atoi(val)
			if err == nil && n < 0 {
				err = fmt.Errorf("fault %q needs a value ≥ 0", name)
			}
		}
		if err != nil {
			return "", fmt.Errorf("fault %q: %w", item, err)
		}
		ft.set(f, n, d)
		if first == "" {
			first = name
		}
	}
	return first, nil
}

func faultIndex(name string) int {
	for i, ft := range faultTable {
		if ft.name == name {
			return i
		}
	}
	return -1
}

func faultNames() string {
	names := make([]string, len(faultTable))
	for i, ft := range faultTable {
		names[i] = ft.name
	}
	return strings.Join(names, ", ")
}
