// Command simserver runs the llmload simulated inference server on its own,
// so curl or any benchmark tool can talk to it:
//
//	go run ./examples/simserver -profile seed -speed 10
//	curl -N localhost:8000/v1/chat/completions -d '{"messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true}'
//
// Flags:
//
//	-addr     listen address (default 127.0.0.1:8000)
//	-profile  built-in profile: seed or fast (default seed)
//	-speed    speed factor: 10 runs the model ten times faster than real time (default 1)
//	-model    served model name (default the profile's, "bench")
//	-prompt-tokens-details
//	          report cached prompt tokens in usage, as vLLM's --enable-prompt-tokens-details
//
// It stops gracefully on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/llmload/llmload/loadgen/loadgentest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8000", "listen address")
	profile := flag.String("profile", "seed", "built-in profile: seed or fast")
	speed := flag.Float64("speed", 1, "speed factor: 10 runs the model ten times faster than real time")
	model := flag.String("model", "", `served model name (default the profile's, "bench")`)
	details := flag.Bool("prompt-tokens-details", false, "report cached prompt tokens in usage, as vLLM's --enable-prompt-tokens-details")
	reasoning := flag.Int("reasoning-tokens", 0, "make the first N output tokens of every response reasoning, as a reasoning model's")
	reasoningField := flag.String("reasoning-field", "reasoning", "the chat delta's reasoning field: reasoning (vLLM) or reasoning_content (SGLang, earlier vLLM)")
	truthBytes := flag.Int64("truth-bytes", 0, "memory for the ground truth served at /debug/truth: about 16 bytes a chunk and 256 a request; 0 keeps the profile's (the fast profile records none), negative records none")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("simserver: %v", err)
	}
	if err := serve(ctx, ln, config{Profile: *profile, Speed: *speed, Model: *model, PromptTokensDetails: *details,
		ReasoningTokens: *reasoning, ReasoningField: *reasoningField, TruthBytes: *truthBytes}); err != nil {
		log.Fatal(err)
	}
}

// config is what the flags choose.
type config struct {
	Profile             string  // a built-in profile's name
	Speed               float64 // the speed factor
	Model               string  // the served model name; empty: the profile's
	PromptTokensDetails bool    // report cached prompt tokens in usage
	ReasoningTokens     int     // the reasoning tokens before each answer
	ReasoningField      string  // the chat delta's field for them
	TruthBytes          int64   // the ground truth's memory; 0: the profile's
}

// serve runs the simulator cfg describes on ln until ctx is done, then ends
// the streams in flight and shuts the server down. It closes ln.
func serve(ctx context.Context, ln net.Listener, cfg config) error {
	name := cfg.Profile
	p, err := loadgentest.ProfileByName(name)
	if err != nil {
		ln.Close()
		return fmt.Errorf("simserver: %w", err)
	}
	if cfg.Speed <= 0 {
		ln.Close()
		return fmt.Errorf("simserver: -speed must be positive, got %g", cfg.Speed)
	}
	p.Speed = cfg.Speed
	if cfg.Model != "" {
		p.Model = cfg.Model
	}
	p.PromptTokensDetails = cfg.PromptTokensDetails
	if cfg.ReasoningTokens < 0 {
		ln.Close()
		return fmt.Errorf("simserver: -reasoning-tokens holds %d, below 0", cfg.ReasoningTokens)
	}
	switch cfg.ReasoningField {
	case "", "reasoning", "reasoning_content":
	default:
		ln.Close()
		return fmt.Errorf("simserver: -reasoning-field %q: want reasoning or reasoning_content", cfg.ReasoningField)
	}
	p.ReasoningTokens, p.ReasoningField = cfg.ReasoningTokens, cfg.ReasoningField
	if cfg.TruthBytes != 0 {
		p.TruthBytes = cfg.TruthBytes
	}
	h := loadgentest.NewHandler(p)
	defer h.Close()

	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	got := h.Profile()
	log.Printf("simserver: serving %q (profile %s, speed %g, max_model_len %d, KV cache %d tokens) on http://%s",
		got.Model, name, got.Speed, got.MaxModelLen, got.KVCacheTokens, ln.Addr())

	select {
	case err := <-errc:
		return fmt.Errorf("simserver: %w", err)
	case <-ctx.Done():
	}
	log.Print("simserver: shutting down")
	h.Close() // ends the streams in flight, so Shutdown does not wait on them
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("simserver: shutdown: %w", err)
	}
	return nil
}
