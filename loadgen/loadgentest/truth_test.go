package loadgentest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/llmload/llmload/internal/clockstep"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTruthOverHTTP(t *testing.T) {
	srv := NewServer(quick())
	defer srv.Close()
	resp, err := post(t.Context(), srv, "/v1/chat/completions", chat("hello", 6, true), nil)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("X-Request-Id")
	want, ok := srv.Truth().Request(id)
	require.True(t, ok)

	get := func(query url.Values) (out struct {
		Requests []RequestTruth `json:"requests"`
		Tokens   *int           `json:"tokens"`
	}) {
		resp, err := srv.Client().Get(srv.URL + "/debug/truth?" + query.Encode())
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return out
	}
	got := get(url.Values{"id": {id}})
	require.Len(t, got.Requests, 1)
	assert.Equal(t, id, got.Requests[0].ID)
	assert.Equal(t, 6, got.Requests[0].OutputTokens)
	assert.Equal(t, len(want.Chunks), len(got.Requests[0].Chunks))
	assert.True(t, want.Chunks[0].Time.Equal(got.Requests[0].Chunks[0].Time))

	got = get(url.Values{
		"from": {want.Received.Format(time.RFC3339Nano)},
		"to":   {want.Done.Add(time.Millisecond).Format(time.RFC3339Nano)},
	})
	require.NotNil(t, got.Tokens)
	assert.Equal(t, 6, *got.Tokens)

	r, err := srv.Client().Get(srv.URL + "/debug/truth?id=nope")
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, r.StatusCode)
	readError(t, r)
}

// TestTruthBounded keeps the records within TruthBytes: old finished
// requests are forgotten, and chunks past the limit are counted, not kept.
func TestTruthBounded(t *testing.T) {
	p := quick()
	p.TruthBytes = 4 * requestRecordBytes
	srv := NewServer(p)
	defer srv.Close()
	for i := range 10 {
		resp, err := post(t.Context(), srv, "/v1/completions", completion(fmt.Sprint("hello ", i), 3, true), nil)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	recs := srv.Truth().Requests()
	assert.LessOrEqual(t, len(recs), 4)
	assert.Equal(t, int64(10-len(recs)), srv.Truth().Forgotten())
	for _, r := range recs {
		assert.Equal(t, 3, r.OutputTokens, "totals stay exact")
		assert.Equal(t, r.ChunkCount, len(r.Chunks)+r.ChunksDropped)
	}

	p.TruthBytes = -1
	off := NewServer(p)
	defer off.Close()
	resp, err := post(t.Context(), off, "/v1/completions", completion("hello", 3, true), nil)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	assert.Empty(t, off.Truth().Requests())
}

// The system clock stepped back 78 s while a request ran: the simulator's
// stored instants are on the monotonic clock, so its timings and its
// ground truth still subtract to the time that passed, and compare
// correctly with the times a client takes.
func TestInstantsAcrossAClockStep(t *testing.T) {
	at := time.Now()
	later, ok := clockstep.Wall(at.Add(3*time.Millisecond), -78*time.Second)
	require.True(t, ok, "time.Time is laid out differently: cannot step its wall clock")
	assert.Equal(t, int64(3*time.Millisecond), monoNanos(later)-monoNanos(at))
	assert.Equal(t, 3*time.Millisecond, monoTime(monoNanos(later)).Sub(at))
	assert.True(t, monoTime(0).IsZero(), "zero is not yet")

	tr := newTruth(1 << 20)
	rec := tr.start("r1", at, 8)
	tr.chunk(rec, later, 2)
	got, found := tr.Request("r1")
	require.True(t, found)
	require.Len(t, got.Chunks, 1)
	assert.Equal(t, 3*time.Millisecond, got.Chunks[0].Time.Sub(at))
	assert.Equal(t, 2, tr.Tokens(at, at.Add(4*time.Millisecond)))
}
