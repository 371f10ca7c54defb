package llmload_test

import (
	"context"
	"fmt"
	"time"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
)

// The whole pipeline in a few lines: a simulated vLLM server calibrated to
// the seed run, a small matrix against it, and each cell's verdict. The
// 248K row is predicted over capacity from the server's own figures and
// never sent. Results hold wall-clock time: at 20× speed, the 2 s each cell
// measured are 40 s of the simulated server's time, which is what the
// reports show.
func Example() {
	p := loadgentest.SeedProfile()
	p.Speed = 20 // twenty times faster than real time
	srv := loadgentest.NewServer(p)
	defer srv.Close()

	r := &matrix.Runner{
		Spec: matrix.Spec{
			URL: srv.URL + "/v1", Model: "bench",
			Contexts: []int{0, 248 * 1024}, Concurrency: []int{1, 2}, Prefill: []int{},
			Duration: 2 * time.Second, MaxTokens: 8192,
		},
		Server: capacity.Server{Speed: p.Speed},
		Client: &loadgen.Client{HTTPClient: srv.Client()},
	}
	res, err := r.Run(context.Background())
	if err != nil {
		fmt.Println("failed:", err)
		return
	}
	for _, c := range res.Cells {
		fmt.Printf("%gK × %d: %s", float64(c.ContextTokens)/1024, c.Concurrency, c.Status)
		if c.Measurement != nil {
			fmt.Printf(", measured for %.0f s of wall-clock time", c.Measurement.MeasuredS)
		} else {
			fmt.Printf(" (%s)", c.Predicted.Reason)
		}
		fmt.Println()
	}
	// Output:
	// 0K × 1: valid, measured for 2 s of wall-clock time
	// 0K × 2: valid, measured for 2 s of wall-clock time
	// 248K × 1: over_capacity (max_model_len)
	// 248K × 2: over_capacity (max_model_len)
}
