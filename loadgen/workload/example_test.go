package workload_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/workload"
)

// Synthetic prompts of log-normal lengths, each the size it says as the
// simulator counts it, template included.
func ExampleSynthetic() {
	srv := loadgentest.NewServer(loadgentest.FastProfile())
	defer srv.Close()
	c := &loadgen.Client{BaseURL: srv.URL + "/v1"}

	in, _ := workload.ParseLength("lognormal:300,100")
	s := &workload.Synthetic{Input: in, Output: workload.Fixed(4), Sizing: workload.SimulatorSizing(true), Seed: 1}
	b := &workload.Builder{Model: loadgentest.DefaultModel, IgnoreEOS: true}
	for i := range 3 {
		it := s.Item(i)
		resp, err := c.Do(context.Background(), b.Request(it))
		if err != nil {
			fmt.Println("failed:", err)
			return
		}
		fmt.Printf("item %d: %d prompt tokens asked, %d counted; %d output tokens\n", i, it.InputTokens, resp.PromptTokens, resp.OutputTokens())
	}
	// Output:
	// item 0: 133 prompt tokens asked, 133 counted; 4 output tokens
	// item 1: 370 prompt tokens asked, 370 counted; 4 output tokens
	// item 2: 170 prompt tokens asked, 170 counted; 4 output tokens
}

// A malformed record stops a dataset before anything is sent, naming its
// line.
func ExampleNewDatasetReader() {
	data := `{"prompt": "What is the capital of India?", "output_tokens": 10}
{"prompt": "What is the capital of Iran?", "output_tokens": "ten"}
{"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello! How can I help?"}]}
`
	r := workload.NewDatasetReader(strings.NewReader(data), "prompts.jsonl")
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			fmt.Println(err)
			continue
		}
		it := rec.Item(nil, nil)
		fmt.Printf("line %d: %q, %d output tokens\n", rec.Line, it.Messages[0].Content, it.OutputTokens)
	}
	// Output:
	// line 1: "What is the capital of India?", 10 output tokens
	// workload: prompts.jsonl:2: output_tokens is a string, want a number
	// line 3: "Hi", 7 output tokens
}
