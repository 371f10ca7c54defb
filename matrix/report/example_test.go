package report_test

import (
	"fmt"
	"os"
	"time"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/report"
)

// tinyResults is a hand-made 2 × 2 run: four cells, one of them queued and
// one over capacity, and one prefill measurement.
func tinyResults() *matrix.Results {
	return &matrix.Results{
		Schema:   matrix.Schema,
		Complete: true,
		Spec: matrix.Spec{
			Contexts: []int{0, 16 * 1024}, Concurrency: []int{1, 4}, Prefill: []int{8 * 1024},
			Duration: 30 * time.Second, MaxTokens: 8192,
		},
		Server: capacity.Server{Model: "Qwen3.5-4B-AWQ-4bit", Engine: "vllm", Version: "0.10.1"},
		Prefill: []matrix.Prefill{
			{ContextTokens: 8 * 1024, PromptTokens: 8192, TTFT: 3477, PromptTokensPerSec: 2356},
		},
		Cells: []matrix.Cell{
			{ContextTokens: 0, Concurrency: 1, Status: matrix.Valid, Measurement: &matrix.Measurement{
				OutputTokensPerSec: 81.5, PerRequestTokensPerSec: 81.8, TTFT: matrix.Quantiles{P50: 81}, TBT: matrix.Quantiles{P50: 12.2},
				AvgActive: 1, OutputTokens: 2444, MeasuredS: 30}},
			{ContextTokens: 0, Concurrency: 4, Status: matrix.Valid, Measurement: &matrix.Measurement{
				OutputTokensPerSec: 288.8, PerRequestTokensPerSec: 72.7, TTFT: matrix.Quantiles{P50: 227}, TBT: matrix.Quantiles{P50: 13.7},
				AvgActive: 4, OutputTokens: 8660, MeasuredS: 30}},
			{ContextTokens: 16 * 1024, Concurrency: 1, Status: matrix.RequestsQueued,
				Reason: "a waiting request was sampled", Measurement: &matrix.Measurement{
					OutputTokensPerSec: 69.0, PerRequestTokensPerSec: 69.2, TTFT: matrix.Quantiles{P50: 1272}, TBT: matrix.Quantiles{P50: 14.4},
					AvgActive: 0.9, OutputTokens: 2072, MeasuredS: 30}},
			{ContextTokens: 16 * 1024, Concurrency: 4, Status: matrix.OverCapacity,
				Reason: "4 × (16384 + 8192) = 98304 tokens > 80000 KV tokens"},
		},
	}
}

// A table prints the run as the seed page shows it: the prefill table,
// then the decode grid of total tok/s with the TTFT under each cell.
func ExampleWrite() {
	if err := report.Write(os.Stdout, report.Table, tinyResults()); err != nil {
		panic(err)
	}
	// Output:
	// Speed test matrix — Qwen3.5-4B-AWQ-4bit on vllm 0.10.1
	// 2 contexts (0–16K) × 2 concurrency levels (1–4) · prefill at 8K
	// 30 s per cell · max output 8,192 tokens
	//
	// Prefill · prompt tok/s by context length
	//
	// Context  Prompt tok/s      TTFT
	// -------  ------------  --------
	// 8K              2,356  3,477 ms
	//
	// Sustained decode · total tok/s with the TTFT under it · rows are context length, columns are simultaneous requests
	//
	// Context                1              4
	// -------  ---------------  -------------
	// 0                   81.5          288.8
	//               81 ms TTFT    227 ms TTFT
	//
	// 16K                 69.0  Over capacity
	//          Requests queued
	//            1,272 ms TTFT
	//
	// Requests queued: the server could not run all requests at once, so some waited in a queue.
	// Over capacity: not run because this many requests at this context would exceed the server's KV cache or limits, or sent and cut or refused for length, or starved (no output).
	// TTFT is measured after the benchmark warms the server's prompt cache, so it mostly excludes prefill.
	//
	// Notes
	//   16K × 1: Requests queued — a waiting request was sampled
}

// Compare one run a side: each figure of the next run divided by the
// base run's; changes beyond 5% are marked ▲ (faster) or ▼ (slower).
func ExampleCompare_oneRunEach() {
	base, next := tinyResults(), tinyResults()
	next.Cells[0].Measurement = &matrix.Measurement{OutputTokensPerSec: 91.3, PerRequestTokensPerSec: 91.6,
		TTFT: matrix.Quantiles{P50: 73}, TBT: matrix.Quantiles{P50: 10.9}, OutputTokens: 2739, MeasuredS: 30}
	next.Cells[2].Status = matrix.Valid

	cmp := report.Compare([]*matrix.Results{base}, []*matrix.Results{next})
	c := cmp.Cell(0, 1)
	fmt.Printf("0 × 1: total tok/s %.2f× (%s), TTFT %.2f× (%s)\n",
		c.OutputTokensPerSec.Ratio, c.OutputTokensPerSec.Change, c.TTFTp50.Ratio, c.TTFTp50.Change)
	fmt.Println("16K × 1:", cmp.Cell(16*1024, 1).Note())
	fmt.Println()
	if err := cmp.Write(os.Stdout, report.Table); err != nil {
		panic(err)
	}
	// Output:
	// 0 × 1: total tok/s 1.12× (better), TTFT 0.90× (better)
	// 16K × 1: Requests queued → Valid
	//
	// Speed test matrix comparison — next ÷ base
	// Base: Qwen3.5-4B-AWQ-4bit on vllm 0.10.1
	// Next: Qwen3.5-4B-AWQ-4bit on vllm 0.10.1
	// Ratios are next ÷ base. ▲ better, ▼ worse: by more than 5% and beyond both runs' intervals (the spread of their requests); ~ more than 5% apart but within that noise; unmarked: within 5%. For TTFT and time between tokens, lower is better.
	//
	// Prefill · prompt tok/s
	//
	// Context   Base   Next  Ratio
	// -------  -----  -----  -----
	// 8K       2,356  2,356  1.00×
	//
	// Sustained decode · total tok/s ratio with the TTFT ratio under it · rows are context length, columns are simultaneous requests
	//
	// Context                        1              4
	// -------  -----------------------  -------------
	// 0                        1.12× ▲          1.00×
	//                     TTFT 0.90× ▲     TTFT 1.00×
	//
	// 16K                        1.00×  Over capacity
	//                       TTFT 1.00×
	//          Requests queued → Valid
}

// Compare tells change from noise with repeated runs: two runs of a
// server before a change, at 80 and 92 tok/s, hold 91 tok/s after it
// within their spread, though it is 6% above their median; 120 tok/s
// stands out of it.
func ExampleCompare() {
	run := func(total float64) *matrix.Results {
		return &matrix.Results{Schema: matrix.Schema, Complete: true, Cells: []matrix.Cell{{
			ContextTokens: 0, Concurrency: 1, Status: matrix.Valid, Requests: 12,
			Measurement: &matrix.Measurement{OutputTokensPerSec: total, PerRequestTokensPerSec: total,
				TTFT: matrix.Quantiles{P50: 80, P90: 82, P99: 85}, TBT: matrix.Quantiles{P50: 1000 / total, P90: 1000 / total, P99: 1000 / total},
				OutputTokens: int(30 * total), MeasuredS: 30}}}}
	}
	before := []*matrix.Results{run(80), run(92)}
	for _, after := range []float64{91, 120} {
		c := report.Compare(before, []*matrix.Results{run(after)}).Cell(0, 1)
		fmt.Printf("%.1f → %.1f tok/s: %.2f× %s\n", c.OutputTokensPerSec.Base, c.OutputTokensPerSec.Next, c.OutputTokensPerSec.Ratio, c.OutputTokensPerSec.Change)
	}
	// Output:
	// 86.0 → 91.0 tok/s: 1.06× noise
	// 86.0 → 120.0 tok/s: 1.40× better
}

// Write a report in a format named on a command line: a Format is its
// name, and [Write] and [Comparison.Write] take it alike; a name that is not a
// format is an error that says which are.
func ExampleFormat() {
	format := report.Format("csv") // from a flag
	if err := report.Write(os.Stdout, format, tinyResults()); err != nil {
		fmt.Println(err)
	}
	fmt.Println(report.Write(os.Stdout, "pdf", tinyResults()))
	// Output:
	// phase,context_tokens,concurrency,status,total_tok_s,per_request_tok_s,ttft_ms,tbt_ms,avg_active,completed,output_tokens,measured_s
	// prefill,8192,1,valid,2356.0,,3477,,,,,
	// decode,0,1,valid,81.5,81.8,81,12.2,1.00,0,2444,30.0
	// decode,0,4,valid,288.8,72.7,227,13.7,4.00,0,8660,30.0
	// decode,16384,1,requests_queued,69.0,69.2,1272,14.4,0.90,0,2072,30.0
	// decode,16384,4,over_capacity,,,,,,,,
	// report: unknown format "pdf" (want table, markdown, csv, json, html or series-csv)
}
