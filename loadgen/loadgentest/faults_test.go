package loadgentest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// contentEvents returns the events that carry output tokens, with their
// counts from continuous usage.
func contentEvents(t *testing.T, events []event) (tokens []int, finish []string) {
	t.Helper()
	prev := 0
	for _, ev := range events {
		if ev.Data == "[DONE]" {
			continue
		}
		var c chunk
		if json.Unmarshal([]byte(ev.Data), &c) != nil || len(c.Choices) == 0 || c.Usage == nil {
			continue
		}
		if n := c.Usage.CompletionTokens - prev; n > 0 {
			tokens = append(tokens, n)
			f := ""
			if c.Choices[0].FinishReason != nil {
				f = *c.Choices[0].FinishReason
			}
			finish = append(finish, f)
		}
		prev = c.Usage.CompletionTokens
	}
	return tokens, finish
}

func last(events []event) string {
	if len(events) == 0 {
		return ""
	}
	return events[len(events)-1].Data
}

func TestFaults(t *testing.T) {
	srv := NewServer(quick())
	defer srv.Close()

	for _, tc := range []struct {
		fault string
		// check gets the response, or the error of the request itself.
		check func(t *testing.T, resp *http.Response, err error)
		// timeout bounds the request, for faults that never end it.
		timeout time.Duration
	}{
		{"status=500", func(t *testing.T, resp *http.Response, err error) {
			require.NoError(t, err)
			assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
			assert.Equal(t, "InternalServerError", readError(t, resp).Error.Type)
		}, 0},
		{"rate-limit=3", func(t *testing.T, resp *http.Response, err error) {
			require.NoError(t, err)
			assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			assert.Equal(t, "3", resp.Header.Get("Retry-After"))
			readError(t, resp)
		}, 0},
		{"stall", func(t *testing.T, resp *http.Response, err error) {
			assert.ErrorIs(t, err, context.DeadlineExceeded, "no headers ever come")
		}, 200 * time.Millisecond},
		{"stall-after=2", func(t *testing.T, resp *http.Response, err error) {
			require.NoError(t, err)
			events, err := readEvents(resp.Body)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			tokens, _ := contentEvents(t, events)
			assert.Len(t, tokens, 2)
		}, time.Second},
		{"reset-after=2", func(t *testing.T, resp *http.Response, err error) {
			require.NoError(t, err)
			events, err := readEvents(resp.Body)
			assert.ErrorIs(t, err, syscall.ECONNRESET)
			tokens, _ := contentEvents(t, events)
			assert.Len(t, tokens, 2)
		}, 0},
		{"error-after=1", func(t *testing.T, resp *http.Response, err error) {
			require.NoError(t, err)
			events, err := readEvents(resp.Body)
			require.NoError(t, err)
			tokens, _ := contentEvents(t, events)
			assert.Len(t, tokens, 1)
			require.GreaterOrEqual(t, len(events), 2)
			assert.Equal(t, "[DONE]", last(events))
			e := decodeChunk(t, events[len(events)-2].Data)
			require.NotNil(t, e.Error, events[len(events)-2].Data)
			assert.Equal(t, "error", e.Error.Object)
			assert.Equal(t, 500, e.Error.Code)
			assert.Contains(t, events[len(events)-2].Data, `"param": null`, "serialized as Python's json.dumps")
		}, 0},
		{"malformed-after=1", func(t *testing.T, resp *http.Response, err error) {
			require.NoError(t, err)
			events, err := readEvents(resp.Body)
			require.NoError(t, err)
			bad := 0
			for _, ev := range events {
				if ev.Data != "[DONE]" && !json.Valid([]byte(ev.Data)) {
					bad++
				}
			}
			assert.Equal(t, 1, bad)
			assert.Equal(t, "[DONE]", last(events), "the stream goes on")
		}, 0},
		{"eof-after=2", func(t *testing.T, resp *http.Response, err error) {
			require.NoError(t, err)
			events, err := readEvents(resp.Body)
			require.NoError(t, err, "the body ends cleanly")
			tokens, finish := contentEvents(t, events)
			assert.Len(t, tokens, 2)
			assert.Equal(t, []string{"", ""}, finish, "no finish_reason")
			assert.NotEqual(t, "[DONE]", last(events))
		}, 0},
		{"no-done", func(t *testing.T, resp *http.Response, err error) {
			require.NoError(t, err)
			events, err := readEvents(resp.Body)
			require.NoError(t, err)
			_, finish := contentEvents(t, events)
			assert.Equal(t, "length", finish[len(finish)-1])
			assert.NotEqual(t, "[DONE]", last(events))
			assert.Empty(t, decodeChunk(t, last(events)).Choices, "the usage chunk still comes")
		}, 0},
		{"chunk-tokens=4", func(t *testing.T, resp *http.Response, err error) {
			require.NoError(t, err)
			events, err := readEvents(resp.Body)
			require.NoError(t, err)
			tokens, _ := contentEvents(t, events)
			assert.Equal(t, []int{4, 4, 2}, tokens)
		}, 0},
		{"header-delay=150ms", func(t *testing.T, resp *http.Response, err error) {
			require.NoError(t, err)
			events, err := readEvents(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, "[DONE]", last(events))
		}, 0},
		{"ping,sse-fields,crlf", func(t *testing.T, resp *http.Response, err error) {
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			s := string(body)
			assert.NotContains(t, strings.ReplaceAll(s, "\r\n", ""), "\n", "every line ends in CRLF")
			assert.Contains(t, s, ": ping\r\n\r\nevent: message\r\nid: 1\r\ndata: {")
			assert.Contains(t, s, "id: 2\r\n")
			assert.True(t, strings.HasSuffix(s, "data: [DONE]\r\n\r\n"))
		}, 0},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			ctx := t.Context()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			start := time.Now()
			resp, err := post(ctx, srv, "/v1/chat/completions", chat("hello", 10, true), http.Header{FaultHeader: {tc.fault}})
			if err == nil {
				defer resp.Body.Close()
				if strings.HasPrefix(tc.fault, "header-delay") {
					assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
				}
			}
			tc.check(t, resp, err)
		})
	}
}

// TestFaultInModelName selects a fault by the model name's suffix.
func TestFaultInModelName(t *testing.T) {
	srv := NewServer(quick())
	defer srv.Close()
	body := chat("hello", 3, false)
	body["model"] = DefaultModel + FaultModelSuffix + "status=503"
	resp, err := post(t.Context(), srv, "/v1/chat/completions", body, nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	readError(t, resp)

	// Faults that end a request early still free its blocks.
	waitFor(t, 5*time.Second, "the engine to be empty", func() bool {
		st := srv.Handler.Stats()
		return st.Running == 0 && st.KVBlocksUsed == 0
	})
}

// TestOversize sends a 20 MiB line; the server streams it without holding it.
func TestOversize(t *testing.T) {
	srv := NewServer(quick())
	defer srv.Close()
	const size = 20 << 20
	resp, err := post(t.Context(), srv, "/v1/completions", completion("hello", 3, true), http.Header{FaultHeader: {"oversize=20971520"}})
	require.NoError(t, err)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var lines []int
	var tail, lastLine []byte
	for {
		line, err := br.ReadSlice('\n')
		n := len(line)
		tail = append(tail[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = br.ReadSlice('\n')
			n += len(line)
			tail = append(tail, line...)
			tail = tail[max(0, len(tail)-8):]
		}
		if n > 1 {
			lines = append(lines, n-1)
			lastLine = append(lastLine[:0], tail...)
		}
		if n == size+1 {
			assert.Equal(t, "      }\n", string(tail[max(0, len(tail)-8):]), "a valid chunk, padded with white space")
		}
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
	}
	require.Contains(t, lines, size, "one line of exactly 20 MiB")
	assert.Equal(t, size, lines[0], "before the first chunk")
	assert.Equal(t, "data: [DONE]\n", string(lastLine), "and the stream goes on to its end")
}

// TestFaultsAfterKChunksOfOneToken: a handler that lags the engine merges
// tokens into one chunk, but not before a fault that counts chunks: it
// comes after K chunks of one token each (of chunk-tokens each, if set),
// however fast the engine. Here the engine makes all ten tokens before the
// handler writes the first.
func TestFaultsAfterKChunksOfOneToken(t *testing.T) {
	p := quick()
	p.Speed = 1e5
	srv := NewServer(p)
	defer srv.Close()
	for _, tc := range []struct {
		fault  string
		tokens []int
	}{
		{"eof-after=2", []int{1, 1}},
		{"error-after=3", []int{1, 1, 1}},
		{"eof-after=2,chunk-tokens=3", []int{3, 3}},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			resp, err := post(t.Context(), srv, "/v1/chat/completions", chat("hello", 10, true), http.Header{FaultHeader: {tc.fault}})
			require.NoError(t, err)
			defer resp.Body.Close()
			events, err := readEvents(resp.Body)
			require.NoError(t, err)
			tokens, _ := contentEvents(t, events)
			assert.Equal(t, tc.tokens, tokens)
		})
	}
}
