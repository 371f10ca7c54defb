package report

import (
	"github.com/llmload/llmload/matrix"

	"bytes"
	"io"
	"testing"
	"time"
)

// FuzzReports renders every results document ReadResults accepts, alone
// and compared with the seed, in every format: no renderer may fail or
// panic, and the HTML never refers to anything outside the page.
func FuzzReports(f *testing.F) {
	damaged := withSeries(simulatedResults())
	for i := range damaged.Cells {
		if m := damaged.Cells[i].Measurement; m != nil {
			m.Series.ITLP99 = m.Series.ITLP99[:i%3]
			m.Series.ServerRunning = m.Series.ServerRunning[:i%5]
			m.Series.Every *= time.Duration(i)
		}
	}
	for _, r := range []*matrix.Results{seedResults(f), simulatedResults(), {Schema: matrix.Schema}, withSeries(simulatedResults()), damaged} {
		var b bytes.Buffer
		if err := (doc{r}).writeJSON(&b); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Add([]byte(`{"schema":"llmload.matrix/v1","spec":{"contexts":[0],"concurrency":[0,1]},"cells":[` +
		`{"context_tokens":0,"concurrency":0,"status":"valid","total_tok_s":1e308,"per_request_tok_s":-5,"ttft_ms":{"p50":1e-300}},` +
		`{"context_tokens":-1,"concurrency":1,"status":"failed","error_kinds":{"stall":2,"server_status":1},"errors":3}]}`))
	f.Add([]byte(`{"schema":"llmload.matrix/v1","cells":[` +
		`{"context_tokens":0,"concurrency":1,"status":"valid","total_tok_s":1.7e308,"per_request_tok_s":1e-320},` +
		`{"context_tokens":0,"concurrency":2,"status":"valid","total_tok_s":4.9e-324,"per_request_tok_s":1.7e308}]}`))
	seed := seedResults(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := matrix.ReadResults(bytes.NewReader(data))
		if err != nil {
			return
		}
		cmp := compareTwo(seed, r)
		for _, write := range []func(io.Writer) error{
			doc{r}.writeTable, doc{r}.writeMarkdown, doc{r}.writeCSV, doc{r}.writeHTML, doc{r}.writeSeriesCSV,
			cmp.writeTable, cmp.writeMarkdown, cmp.writeCSV, cmp.writeJSON, cmp.writeHTML,
		} {
			var b bytes.Buffer
			if err := write(&b); err != nil {
				t.Fatal(err)
			}
		}
		var b bytes.Buffer
		if err := (doc{r}).writeHTML(&b); err != nil {
			t.Fatal(err)
		}
		if refs := remoteRef.FindAll(b.Bytes(), -1); len(refs) > 0 {
			t.Fatalf("the page refers to %q", refs)
		}
	})
}
