package workload_test

import (
	"context"
	"errors"
	"fmt"

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
func ExampleOpenDataset() {
	_, err := workload.OpenDataset("testdata/sharegpt-malformed.jsonl")
	var fe *workload.FileError
	if errors.As(err, &fe) {
		fmt.Println("line", fe.Errs[0].Line)
	}
	fmt.Println(err)
	// Output:
	// line 2
	// workload: sharegpt-malformed.jsonl has 3 malformed records: line 2: not valid JSON: unexpected end of JSON input; line 5: conversations[0] is from "robot": want human, gpt or system (or user, assistant, chatgpt, bard, bing, model); line 6: conversations is a string, want an array
}
