// Benchlib sweeps 1, 4 and 16 streams, then searches for the most streams whose first tokens come within 50 ms,
// on llmload's simulator running 8 requests at once, and prints bench's results document: go run ./examples/benchlib
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"time"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/loadgen/workload"
	"github.com/llmload/llmload/metrics"
)

func main() {
	window := flag.Duration("duration", 2*time.Second, "each run's window")
	flag.Parse()
	p := loadgentest.FastProfile()
	p.MaxNumSeqs = 8 // a ninth request waits for a slot: 8 decode steps of 10 ms
	srv := loadgentest.NewServer(p)
	defer srv.Close()
	b := &sweep.Benchmark{Client: &loadgen.Client{BaseURL: srv.URL + "/v1"}, Duration: *window,
		Workload: &workload.Mix{Input: workload.Fixed(256), Output: workload.Fixed(8), Sizing: workload.SimulatorSizing(true),
			Builder: workload.Builder{Model: loadgentest.DefaultModel, IgnoreEOS: true}},
		Concurrency: []int{1, 4, 16}, Search: sweep.AxisConcurrency, Low: 1, High: 16, Step: 1,
		Objective: sweep.Objective{SLO: metrics.SLO{TTFT: 50 * time.Millisecond}, Quantile: 0.95}}
	res, err := b.Run(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	res.Server = capacity.Server{URL: "simulator", Model: loadgentest.DefaultModel, Simulated: true, Profile: p.Name}
	if err := res.Write(os.Stdout, "json"); err != nil {
		log.Fatal(err)
	}
}
