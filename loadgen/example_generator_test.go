package loadgen_test

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/workload"
)

// A closed-loop run: 8 streams kept busy for 2 seconds against a simulated
// server whose every decode step takes 20 ms (50 tokens/s per stream).
func ExampleGenerator() {
	p := loadgentest.FastProfile()
	p.DecodeBase = []loadgentest.BatchCost{{Batch: 1, Seconds: 0.020}}
	srv := loadgentest.NewServer(p)
	defer srv.Close()

	g := &loadgen.Generator{
		Client: &loadgen.Client{BaseURL: srv.URL + "/v1"},
		Source: loadgen.Repeat(&loadgen.Request{
			API: loadgen.Completions, Model: "bench", Prompt: workload.Text(32, 1),
			MaxTokens: 10000, IgnoreEOS: true,
		}),
		Load:     loadgen.Closed{Streams: 8},
		Warmup:   500 * time.Millisecond,
		Duration: 2 * time.Second,
	}
	run, err := g.Run(context.Background())
	if err != nil {
		fmt.Println("failed:", err)
		return
	}
	s := run.Summary
	fmt.Println("stopped by:", run.Stopped)
	fmt.Println("requests:", s.Requests, "cut at the window's end:", s.Canceled, "failed:", s.Failed)
	want := 8 / 0.020 // streams ÷ step time
	fmt.Printf("total tok/s within 5%% of %.0f: %v\n", want, math.Abs(s.OutputTokensPerSec-want) < 0.05*want)
	fmt.Println("time between tokens:", s.TBT.P50.Round(5*time.Millisecond))
	fmt.Printf("streams active on average: %.0f\n", s.AvgActive)
	// Output:
	// stopped by: window
	// requests: 8 cut at the window's end: 8 failed: 0
	// total tok/s within 5% of 400: true
	// time between tokens: 20ms
	// streams active on average: 8
}
