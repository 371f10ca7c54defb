// Command stream sends one streaming request to an OpenAI-compatible server
// and prints its timeline: when the request was written, when the headers and
// the first token arrived, every chunk's arrival and tokens, the usage and
// why the stream ended. It is curl for LLM streams.
//
//	go run ./examples/stream -url http://127.0.0.1:8000/v1 -model bench -prompt "Hello" -max-tokens 32
//	go run ./examples/stream -json ... | jq .ttft_ms
//
// On Linux every chunk is timed by the kernel's receive timestamp
// ([loadgen.StreamTransport]); -transport http uses net/http's transport
// instead, which honours HTTP_PROXY, and -transport poll reads the stream
// on a shared poller, one system call a chunk (StreamTransport.Poll).
//
// The exit status is 0 when the stream completed and 1 when the request
// failed; with -json the JSON is printed either way.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/llmload/llmload/internal/cmd/cli"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

func main() { cli.Main(run, "") }

// result is the -json output.
type result struct {
	TTFTms           float64             `json:"ttft_ms"`
	TTFOms           float64             `json:"ttfo_ms"`
	HeadersMs        float64             `json:"headers_ms"`
	LatencyMs        float64             `json:"latency_ms"`
	OutputTokens     int                 `json:"output_tokens"`
	ReasoningTokens  int                 `json:"reasoning_tokens"`
	AnswerTokens     int                 `json:"answer_tokens"`
	ToolCall         bool                `json:"tool_call"`
	ContentChunks    int                 `json:"content_chunks"`
	ExtraTokens      int                 `json:"extra_tokens"`
	TokenSource      metrics.TokenSource `json:"token_source"`
	PromptTokens     int                 `json:"prompt_tokens"`
	CompletionTokens int                 `json:"completion_tokens"`
	CachedTokens     int                 `json:"cached_tokens"`
	FinishReason     string              `json:"finish_reason"`
	Done             bool                `json:"done"`
	ErrorKind        metrics.ErrorKind   `json:"error_kind"`
	Error            string              `json:"error"`
	Text             string              `json:"text"`
	Reasoning        string              `json:"reasoning,omitempty"`
	ChunkTimesMs     []float64           `json:"chunk_times_ms"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stream", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf cli.ClientFlags
	cf.Register(fs, "http://127.0.0.1:8000/v1")
	var body cli.BodyFlags
	body.Register(fs)
	prompt := fs.String("prompt", "Write a haiku about load testing.", "the prompt (chat: one user message)")
	maxTokens := fs.Int("max-tokens", 64, "max_tokens (0: the server's default)")
	ignoreEOS := fs.Bool("ignore-eos", false, "ask the server to ignore end-of-sequence and generate max-tokens")
	asJSON := fs.Bool("json", false, "print one JSON object instead of the timeline")
	stall := fs.Duration("stall-timeout", 0, "longest gap between tokens (0: the client's default)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cf.WarnShortSecrets(stderr)
	if err := cf.Generating("stream"); err != nil {
		fmt.Fprintln(stderr, "stream:", err)
		return 2
	}
	c, err := cf.Client(1)
	if err != nil {
		fmt.Fprintln(stderr, "stream:", err)
		return 2
	}
	c.StallTimeout = *stall
	defer c.CloseIdleConnections()
	req := &loadgen.Request{API: cf.API, Model: cf.Model, Prompt: *prompt, MaxTokens: *maxTokens, IgnoreEOS: *ignoreEOS}
	if req.Extra, err = body.Extra(cf.API); err != nil {
		fmt.Fprintln(stderr, "stream:", err)
		return 2
	}
	if _, err := req.Body(); err != nil {
		fmt.Fprintln(stderr, "stream:", err)
		return 2
	}
	secrets := cf.Redactor()
	resp, err := c.Do(ctx, req)

	r := result{
		OutputTokens: resp.OutputTokens(), ContentChunks: resp.Chunks, ExtraTokens: resp.ExtraTokens,
		TokenSource: resp.Source, PromptTokens: resp.PromptTokens, CompletionTokens: resp.CompletionTokens,
		CachedTokens: resp.CachedTokens, FinishReason: resp.FinishReason, Done: resp.Done,
		ErrorKind: resp.Kind, Text: resp.Text, Reasoning: resp.Reasoning,
		ReasoningTokens: resp.ReasoningTokens, AnswerTokens: resp.AnswerTokens(), ToolCall: resp.ToolCall,
		TTFTms: ms(resp.TTFT()), TTFOms: ms(resp.TTFO()), LatencyMs: ms(resp.Latency()), ChunkTimesMs: []float64{},
	}
	if err != nil {
		r.Error = secrets.Redact(err.Error())
	}
	if !resp.Headers.IsZero() && !resp.Sent.IsZero() {
		r.HeadersMs = ms(resp.Headers.Sub(resp.Sent))
	}
	for _, t := range resp.ChunkTimes {
		r.ChunkTimesMs = append(r.ChunkTimesMs, ms(t.Sub(resp.Sent)))
	}

	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	} else {
		printTimeline(stdout, resp, r)
	}
	if err != nil {
		if !*asJSON {
			// The server's words, without its escape sequences or the
			// credentials.
			fmt.Fprintln(stderr, "stream:", textsafe.Line(secrets.Redact(err.Error())))
		}
		var se *loadgen.StatusError
		if errors.As(err, &se) && se.RetryAfter > 0 && !*asJSON {
			fmt.Fprintf(stderr, "stream: the server asks to retry after %v\n", se.RetryAfter)
		}
		return 1
	}
	return 0
}

func printTimeline(w io.Writer, resp *loadgen.Response, r result) {
	if resp.Sent.IsZero() {
		fmt.Fprintf(w, "%10s  request not written\n", "0.0 ms")
	} else {
		fmt.Fprintf(w, "%10s  request written\n", "0.0 ms")
	}
	if r.HeadersMs > 0 {
		fmt.Fprintf(w, "%7.1f ms  response headers\n", r.HeadersMs)
	}
	prev := 0.0
	answered := false
	for i, t := range r.ChunkTimesMs {
		label := "chunk"
		if i == 0 {
			label = "first token (TTFT)"
		}
		if !answered && r.ReasoningTokens > 0 && resp.ChunkTimes[i].Equal(resp.FirstAnswer) {
			label, answered = "first answer (TTFO)", true
		}
		fmt.Fprintf(w, "%7.1f ms  %-20s +%.1f ms\n", t, label, t-prev)
		prev = t
	}
	fmt.Fprintf(w, "%7.1f ms  end", r.LatencyMs)
	switch {
	case r.Error != "":
		fmt.Fprintf(w, " (failed: %s)\n", r.ErrorKind)
	case r.Done:
		fmt.Fprintf(w, " ([DONE], finish_reason %q)\n", r.FinishReason)
	default:
		fmt.Fprintf(w, " (finish_reason %q)\n", r.FinishReason)
	}
	if r.Error != "" && r.HeadersMs == 0 {
		return // no answer came: nothing to count
	}
	fmt.Fprintf(w, "\noutput tokens %d in %d chunks", r.OutputTokens, r.ContentChunks)
	if r.TokenSource != "" {
		fmt.Fprintf(w, " (counted by %s", r.TokenSource)
		if r.ExtraTokens > 0 {
			fmt.Fprintf(w, "; %d more from the final usage", r.ExtraTokens)
		}
		fmt.Fprint(w, ")")
	}
	fmt.Fprintf(w, ", usage: prompt %d, completion %d", r.PromptTokens, r.CompletionTokens)
	if r.CachedTokens > 0 {
		fmt.Fprintf(w, ", cached %d", r.CachedTokens)
	}
	fmt.Fprintln(w)
	if r.ReasoningTokens > 0 {
		fmt.Fprintf(w, "reasoning %d tokens, answer %d; first answer token (TTFO) at %.1f ms\n", r.ReasoningTokens, r.AnswerTokens, r.TTFOms)
	}
	if tbt := resp.TimeBetweenTokens(); tbt > 0 {
		fmt.Fprintf(w, "time between tokens %.2f ms (%.1f tok/s)\n", ms(tbt), 1/tbt.Seconds())
	}
	// The model's text is the server's: printed without control
	// characters, as everything else from it.
	if r.Reasoning != "" {
		fmt.Fprintf(w, "\nreasoning: %s\n", textsafe.Text(r.Reasoning))
	}
	fmt.Fprintf(w, "\n%s\n", textsafe.Text(r.Text))
}
