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
		Client:   &loadgen.Client{BaseURL: "http://127.0.0.1:8000/v1"},
		Source:   loadgen.Repeat(&loadgen.Request{Model: "my-model", Prompt: "hi", MaxTokens: 64}),
		Load:     loadgen.Open{Rate: 10, Burstiness: 0.5},
		Duration: time.Minute,
	}
	err := g.Validate()
	var ce *loadgen.ConfigError
	if errors.As(err, &ce) {
		fmt.Println("field:", ce.Field)
	}
	fmt.Println(err)
	// Output:
	// field: Open.Burstiness
	// loadgen: Open.Burstiness is 0.5 with poisson arrivals: it is the shape of Gamma arrivals; set Arrival to Gamma, or drop it
}
