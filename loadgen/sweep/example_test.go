package sweep_test

import (
	"context"
	"fmt"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/loadgen/workload"
)

// A sweep of a simulated server: one request at a time, then as many as
// it takes, then two rates between.
func ExampleSweep() {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	client := &loadgen.Client{BaseURL: srv.URL + "/v1"}

	// Each run gets its own requests: 8 synthetic prompts of 100 to 400
	// tokens, with 8-token outputs.
	target := func(loadgen.Load) (*loadgen.Generator, error) {
		syn := &workload.Synthetic{Input: workload.Uniform(100, 400), Output: workload.Fixed(8), Sizing: workload.SimulatorSizing(true)}
		feed := workload.NewFeed(syn.Reader(), &workload.Builder{Model: loadgentest.DefaultModel, IgnoreEOS: true})
		return &loadgen.Generator{Client: client, Source: feed.Source, Requests: 8}, nil
	}
	// The rate runs' arrivals are evenly spaced.
	sw := &sweep.Sweep{Target: target, Rates: 2, Throughput: 8, Open: loadgen.Open{Arrival: loadgen.Constant}}
	res, err := sw.Run(context.Background())
	if err != nil {
		fmt.Println("failed:", err)
		return
	}
	runs := res.Runs
	for _, r := range runs[:2] {
		fmt.Printf("%-12v completed %d\n", r.Load, r.Summary.Completed)
	}
	low, high := runs[2].Load.(loadgen.Open), runs[3].Load.(loadgen.Open)
	fmt.Println(low.Arrival, high.Arrival, "completed", runs[2].Summary.Completed, runs[3].Summary.Completed)
	fmt.Println("rates between the two:", runs[0].Capacity < low.Rate && high.Rate < runs[1].Capacity)
	// Output:
	// concurrency 1 completed 8
	// concurrency 8 completed 8
	// constant constant completed 8 8
	// rates between the two: true
}
