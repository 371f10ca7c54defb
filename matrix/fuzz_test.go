package matrix

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzParseGauges feeds arbitrary text to the /metrics reader: it must
// never panic, and what it returns must be deterministic.
func FuzzParseGauges(f *testing.F) {
	f.Add([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"bench\"} 3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g1, err1 := parseGauges(bytes.NewReader(data))
		g2, err2 := parseGauges(bytes.NewReader(data))
		if (err1 == nil) != (err2 == nil) || !reflect.DeepEqual(g1, g2) {
			t.Fatalf("not deterministic: %v %v", err1, err2)
		}
	})
}

// FuzzReadResults feeds arbitrary bytes to the results reader used by
// -resume: it must never panic, and a document it accepts must survive a
// write and a second read unchanged.
func FuzzReadResults(f *testing.F) {
	f.Add([]byte(`{"schema":"llmload.matrix/v1","spec":{"url":"x"},"cells":[{"context_tokens":0,"concurrency":1,"status":"valid","predicted":{"fits":true,"reason":"within_limits"},"total_tok_s":1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ReadResults(bytes.NewReader(data))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := r.writeJSON(&b); err != nil {
			return // e.g. a status number out of range cannot be written back
		}
		back, err := ReadResults(&b)
		if err != nil {
			t.Fatalf("cannot read what was written: %v\n%s", err, b.String())
		}
		if !reflect.DeepEqual(r, back) {
			t.Fatalf("changed by a round trip:\n%s", b.String())
		}
	})
}
