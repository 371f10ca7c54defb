package workload_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/llmload/llmload/loadgen/workload"
)

// writeShareGPT writes a ShareGPT JSON array of about size bytes: records
// of two to six turns of a few hundred words each, pretty-printed as the
// published file is.
func writeShareGPT(tb testing.TB, path string, size int64) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	fmt.Fprint(w, "[\n")
	var written int64
	for i := 0; written < size; i++ {
		if i > 0 {
			fmt.Fprint(w, ",\n")
		}
		n, _ := fmt.Fprintf(w, "  {\n    \"id\": \"r%d\",\n    \"conversations\": [\n", i)
		written += int64(n)
		turns := 2 + i%5
		for k := range turns {
			from := "human"
			if k%2 == 1 {
				from = "gpt"
			}
			sep := ","
			if k == turns-1 {
				sep = ""
			}
			n, _ := fmt.Fprintf(w, "      {\"from\": %q, \"value\": %q}%s\n", from, workload.Text(50+(i*7+k*13)%400, uint64(i*8+k)), sep)
			written += int64(n)
		}
		n, _ = fmt.Fprint(w, "    ]\n  }")
		written += int64(n)
	}
	fmt.Fprint(w, "\n]\n")
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkDatasetStream reads a ShareGPT file through, as OpenDataset
// does before a run, and reports the heap it took beyond what was in use
// before: flat, whatever the file's size.
func BenchmarkDatasetStream(b *testing.B) {
	for _, mb := range []int64{16, 128} {
		b.Run(fmt.Sprintf("file=%dMB", mb), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "sharegpt.json")
			writeShareGPT(b, path, mb<<20)
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(st.Size())
			b.ReportAllocs()
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			base, peak := ms.HeapAlloc, ms.HeapAlloc
			records := 0
			for b.Loop() {
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				r := workload.NewDatasetReader(f, "sharegpt.json")
				for n := 0; ; n++ {
					_, err := r.Next()
					if errors.Is(err, io.EOF) {
						records = n
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					if n%2000 == 0 {
						runtime.ReadMemStats(&ms)
						peak = max(peak, ms.HeapAlloc)
					}
				}
				f.Close()
			}
			b.ReportMetric(float64(st.Size())/(1<<20), "file-MB")
			b.ReportMetric(float64(records), "records")
			b.ReportMetric(float64(peak-base)/(1<<20), "peak-heap-MB")
		})
	}
}
