package sweep_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzReadResults reads any bytes as a results document: it never
// panics, and what it accepts writes back as a document that reads again.
func FuzzReadResults(f *testing.F) {
	b, err := os.ReadFile("testdata/results.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"schema": "llmload.bench/v1", "runs": [{"label": "x", "load": {"kind": "gamma", "rate": 2, "burstiness": 0.5}, "stopped": "window"}]}`))
	f.Add([]byte(`{"schema": "llmload.bench/v2"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := sweep.ReadResults(bytes.NewReader(data))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := r.Write(&out, "json"); err != nil {
			return // a value JSON cannot hold, such as a histogram it cannot encode
		}
		if _, err := sweep.ReadResults(&out); err != nil {
			t.Fatalf("a document written back does not read: %v", err)
		}
		_ = r.Write(&bytes.Buffer{}, "table")
		_ = r.Write(&bytes.Buffer{}, "html")
	})
}

// TestReadResultsRunWithoutLoad: a run that says no load is refused with
// its place, not read into a document whose table cannot be written (the
// fuzzer found the table dereferencing the missing load).
func TestReadResultsRunWithoutLoad(t *testing.T) {
	_, err := sweep.ReadResults(bytes.NewReader([]byte(`{"schema": "llmload.bench/v1", "runs": [{"label": "x", "load": {"kind": "poisson", "rate": 1}}, {"label": "y"}]}`)))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(`run 2 ("y") has no load`)) {
		t.Fatalf("want run 2 refused for its missing load, got %v", err)
	}
}

// TestReadResultsUnknownErrorKind: a run's failures are counted by the
// kinds metrics names; a document with another is refused, naming it and
// the run.
func TestReadResultsUnknownErrorKind(t *testing.T) {
	const run = `{"schema": "llmload.bench/v1", "runs": [{"label": "x", "load": {"kind": "poisson", "rate": 1}, "summary": {"errors": {%s: 2}}}]}`
	_, err := sweep.ReadResults(bytes.NewReader(fmt.Appendf(nil, run, `"stall"`)))
	if err != nil {
		t.Fatalf("a known kind reads: %v", err)
	}
	_, err = sweep.ReadResults(bytes.NewReader(fmt.Appendf(nil, run, `"http_500"`)))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(`run 1 ("x") counts failures of an unknown kind "http_500"`)) {
		t.Fatalf("want the unknown kind refused, got %v", err)
	}
}

// TestReadResultsAPI: the API is the document's since v1.1; a v1 document
// kept it in the server's object and reads with it there, and a document
// written now reads back with its API and engine.
func TestReadResultsAPI(t *testing.T) {
	v1 := `{"schema": "llmload.bench/v1", "server": {"url": "http://gpu:8000", "api": "embeddings"}, "runs": []}`
	r, err := sweep.ReadResults(strings.NewReader(v1))
	require.NoError(t, err)
	assert.Equal(t, loadgen.Embeddings, r.API)
	assert.Equal(t, "http://gpu:8000", r.Server.URL)

	both := `{"schema": "llmload.bench/v1.1", "api": "chat", "server": {"url": "x", "api": "embeddings"}, "runs": []}`
	r, err = sweep.ReadResults(strings.NewReader(both))
	require.NoError(t, err)
	assert.Equal(t, loadgen.Chat, r.API, "the document's own API wins")

	var b bytes.Buffer
	out := &sweep.Results{API: loadgen.Rerank, Server: capacity.Server{URL: "http://gpu:8000", Engine: capacity.EngineVLLM, Version: "0.10.1"}}
	require.NoError(t, out.Write(&b, "json"))
	assert.Contains(t, b.String(), `"schema": "`+sweep.Schema+`"`)
	r, err = sweep.ReadResults(&b)
	require.NoError(t, err)
	assert.Equal(t, loadgen.Rerank, r.API)
	assert.Equal(t, out.Server, r.Server)

	var table bytes.Buffer
	require.NoError(t, out.Write(&table, "table"))
	assert.Contains(t, table.String(), "against http://gpu:8000 (vllm 0.10.1)")
}
