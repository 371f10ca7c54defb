package loadgen

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/llmload/llmload/loadgen/internal/chunk"
	"github.com/llmload/llmload/metrics"
)

// countRecordSize is the size of one chunk in FuzzTokenCount's input: a
// flags byte, a byte of delta tokens, and a 64-bit usage value.
const countRecordSize = 10

// Flags of a FuzzTokenCount record.
const (
	recUsage  = 1 << iota // the chunk reports completion_tokens
	recFinish             // it carries a finish reason
	recMulti              // a choice other than the first
	recPrompt             // it reports prompt_tokens (the same value)
	recCached             // it reports cached tokens (the same value)
)

// countRecord encodes one chunk for FuzzTokenCount's seeds.
func countRecord(flags byte, tokens byte, usage int64) []byte {
	b := make([]byte, countRecordSize)
	b[0], b[1] = flags, tokens
	binary.LittleEndian.PutUint64(b[2:], uint64(usage))
	return b
}

func countRecords(recs ...[]byte) []byte {
	var out []byte
	for _, r := range recs {
		out = append(out, r...)
	}
	return out
}

// FuzzTokenCount drives sequences of chunks with any usage values through
// the token count, as a response would bring them: it never panics, never
// hands out a negative count or more than the request's limit, counts
// nothing of a chunk it refuses, refuses only with a *UsageError, and,
// when it trusts the server's running count on every chunk of one choice,
// agrees with it exactly. The seeds have vLLM's continuous usage, Ollama's
// all-zero usage, a final usage, 2^63−1, counts that go down and jump, and
// several choices; the corpus in testdata/fuzz/FuzzTokenCount adds the
// usage sequences of the transcripts.
func FuzzTokenCount(f *testing.F) {
	const u, fin = recUsage, recFinish
	f.Add(int64(4), countRecords( // vLLM's continuous_usage_stats: role chunk at 0, then +1 a chunk
		countRecord(u|recPrompt, 0, 0), countRecord(u, 1, 1), countRecord(u, 1, 2), countRecord(u, 1, 3), countRecord(u|fin, 1, 4)))
	f.Add(int64(3), countRecords( // Ollama's completions: all-zero usage on every chunk
		countRecord(u|recPrompt, 1, 0), countRecord(u, 1, 0), countRecord(u|fin, 1, 0)))
	f.Add(int64(64), countRecords( // one per delta, then a final usage with hidden tokens
		countRecord(0, 1, 0), countRecord(0, 1, 0), countRecord(fin, 0, 0), countRecord(u|recPrompt|recCached, 0, 203)))
	f.Add(int64(64), countRecords(countRecord(u, 1, 1), countRecord(u|fin, 1, 1<<63-1)))
	f.Add(int64(64), countRecords(countRecord(u, 1, 1), countRecord(u, 1, 2), countRecord(u, 1, 3), countRecord(u, 1, 2)))
	f.Add(int64(64), countRecords(countRecord(u, 1, 1), countRecord(u, 1, 2), countRecord(u, 1, 1_000_000_003)))
	f.Add(int64(0), countRecords(countRecord(u|recMulti, 1, 5), countRecord(u, 1, 3), countRecord(u|recMulti, 1, 6)))
	f.Add(int64(-1), countRecords(countRecord(u, 0, 7), countRecord(u, 0, 9), countRecord(0, 2, 0)))
	f.Add(int64(1<<62), countRecords(countRecord(u|recPrompt, 3, 99_999_999), countRecord(u, 3, 100_000_001)))
	f.Fuzz(func(t *testing.T, maxTokens int64, data []byte) {
		if len(data) > 4096*countRecordSize {
			return
		}
		tc := tokenCount{limit: tokenLimit(int(maxTokens)), maxTokens: int(maxTokens)}
		if tc.limit <= 0 || tc.limit > maxReportedTokens {
			t.Fatalf("tokenLimit(%d) = %d", maxTokens, tc.limit)
		}
		var handed int64
		var lastUsage int64
		trusted := true  // no chunk was refused
		allUsage := true // every chunk reported usage
		for len(data) >= countRecordSize {
			rec := data[:countRecordSize]
			data = data[countRecordSize:]
			flags, value := rec[0], int64(binary.LittleEndian.Uint64(rec[2:]))
			ch := chunk.Chunk{Tokens: int(rec[1] % 4), Multi: flags&recMulti != 0}
			if flags&recUsage != 0 {
				ch.HasUsage, ch.Completion = true, value
			}
			if flags&recFinish != 0 {
				ch.Finish = []byte(`"stop"`)
			}
			if flags&recPrompt != 0 {
				ch.Prompt = value
			}
			if flags&recCached != 0 {
				ch.Cached = value
			}
			before := tc
			k, err := tc.add(&ch)
			if err != nil {
				var ue *UsageError
				if !errors.As(err, &ue) {
					t.Fatalf("refused with %T %v, not a *UsageError", err, err)
				}
				if msg := err.Error(); msg == "" || strings.ContainsAny(msg, "\n\r") {
					t.Fatalf("error message %q", msg)
				}
				if tc != before {
					t.Fatalf("a refused chunk changed the count: %+v, was %+v", tc, before)
				}
				trusted = false
				break // the request ends at a malformed chunk
			}
			if k < 0 {
				t.Fatalf("handed out %d tokens", k)
			}
			handed += int64(k)
			if handed+tc.pending > tc.limit || tc.attributed != handed+tc.pending {
				t.Fatalf("handed %d, pending %d, attributed %d, limit %d", handed, tc.pending, tc.attributed, tc.limit)
			}
			if ch.HasUsage {
				lastUsage = ch.Completion
			} else {
				allUsage = false
			}
		}
		handed += int64(tc.flush())
		src, extra := tc.source(handed > 0)
		if extra < 0 || handed+int64(extra) > tc.limit {
			t.Fatalf("%d tokens and %d extra, limit %d", handed, extra, tc.limit)
		}
		if trusted && allUsage && !tc.multi && src == metrics.SourceUsageDeltas && handed != lastUsage {
			t.Fatalf("counted by usage deltas: %d tokens, the server's running count %d", handed, lastUsage)
		}
		if src == metrics.SourceFinalUsage && handed+int64(extra) != lastUsage {
			t.Fatalf("final usage %d, counted %d + %d extra", lastUsage, handed, extra)
		}
	})
}
