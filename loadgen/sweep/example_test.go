package sweep_test

import (
	"context"
	"fmt"
	"time"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/loadgen/workload"
	"github.com/llmload/llmload/metrics"
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
	sw := &sweep.Sweep{Target: target, Rates: 2, ThroughputStreams: 8, Open: loadgen.Open{Arrival: loadgen.Constant}}
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

// A benchmark of a simulated server by concurrency: a closed loop of 1, 2
// and 4 streams, each sending 8 synthetic requests, then a search for the
// most streams whose requests end within an hour. Every level does, so the
// range bounds the answer, and the search takes the run of 4 streams, the
// top of its range, as its own.
func ExampleBenchmark() {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	b := &sweep.Benchmark{
		Client: &loadgen.Client{BaseURL: srv.URL + "/v1"},
		// Each run's own prompts: 64 tokens in, 8 out.
		Workload: &workload.Mix{Input: workload.Fixed(64), Output: workload.Fixed(8), Sizing: workload.SimulatorSizing(true),
			Builder: workload.Builder{Model: loadgentest.DefaultModel, IgnoreEOS: true}},
		Requests:    8,
		Concurrency: []int{1, 2, 4},
		Search:      sweep.AxisConcurrency, Low: 1, High: 4,
		Objective: sweep.Objective{SLO: metrics.SLO{Latency: time.Hour}},
	}
	res, err := b.Run(context.Background())
	if err != nil {
		fmt.Println("failed:", err)
		return
	}
	fmt.Println(res.Profile, res.Axis, "of", res.Workload)
	for _, r := range res.Runs {
		fmt.Printf("%-13v completed %d, met %v\n", r.Load, r.Summary.Completed, r.Met)
	}
	f := res.Search
	fmt.Printf("found %d streams, run %d: %s\n", f.Concurrency, f.Below+1, f.Reason)
	// Output:
	// slo concurrency of synthetic prompts, 64 tokens in, 8 out
	// concurrency 1 completed 8, met true
	// concurrency 2 completed 8, met true
	// concurrency 4 completed 8, met true
	// found 4 streams, run 3: met at the top of the range, 4 streams: the range, not the objective, bounds the concurrency
}
