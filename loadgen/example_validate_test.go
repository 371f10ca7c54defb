package loadgen_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/llmload/llmload/loadgen"
)

// A Generator whose settings cannot work, or would silently override one
// another, is refused before anything is sent, with an error naming the
// field and saying what to do. Run refuses it the same way.
func ExampleGenerator_Validate() {
	g := &loadgen.Generator{
		Client:      &loadgen.Client{BaseURL: "http://127.0.0.1:8000/v1"},
		Source:      loadgen.Repeat(&loadgen.Request{Model: "my-model", Prompt: "hi", MaxTokens: 64}),
		Rate:        10,
		Concurrency: 16,
		Duration:    time.Minute,
	}
	err := g.Validate()
	var ce *loadgen.ConfigError
	if errors.As(err, &ce) {
		fmt.Println("field:", ce.Field)
	}
	fmt.Println(err)
	// Output:
	// field: Generator.Concurrency
	// loadgen: Generator.Concurrency is 16 with Rate 10: an open loop has no workers to count; cap its requests in flight with MaxInFlight, or set Rate to 0 for a closed loop of Concurrency workers
}
