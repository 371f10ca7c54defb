package loadgentest_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tmaxmax/go-sse"

	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/loadgen/workload"
)

// Start a simulated server and stream one chat completion from it.
func Example() {
	p := loadgentest.FastProfile()
	p.Speed = 100 // 0.1 ms decode steps
	srv := loadgentest.NewServer(p)
	defer srv.Close()

	body, _ := json.Marshal(map[string]any{
		"model":          "bench",
		"messages":       []map[string]string{{"role": "user", "content": workload.Text(100, 1)}},
		"max_tokens":     8,
		"stream":         true,
		"stream_options": map[string]bool{"include_usage": true},
	})
	resp, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()

	var text strings.Builder
	for ev, err := range sse.Read(resp.Body, nil) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if ev.Data == "[DONE]" {
			break
		}
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &c); err != nil {
			fmt.Println(err)
			return
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
		}
		if c.Usage != nil {
			sizing := workload.SimulatorSizing(true) // the simulator's chat template
			fmt.Printf("usage: %d prompt tokens (100 + the chat template's %d), %d completion tokens\n",
				c.Usage.PromptTokens, sizing.MessageTokens+sizing.ReplyTokens, c.Usage.CompletionTokens)
		}
	}
	fmt.Printf("text: %q\n", text.String())
	fmt.Println("tokens in the text:", len(strings.Fields(text.String())))
	// Output:
	// usage: 108 prompt tokens (100 + the chat template's 8), 8 completion tokens
	// text: " the of and to in is that it"
	// tokens in the text: 8
}
