package matrix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/keyed"
	"github.com/llmload/llmload/internal/nothttp"
	"github.com/llmload/llmload/internal/sizing"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// shortPrompt is the prompt of a context-0 cell: a short request to
// generate.
const shortPrompt = "Write a long story about a lighthouse keeper who finds a message in a bottle."

// sizingMethod is how a prompt sizer sizes prompts.
type sizingMethod uint8

const (
	// notSized: no prompt has been built yet.
	notSized sizingMethod = iota
	// sizedByTokenize: the server's /tokenize counted each prompt, with
	// the chat template for the chat API.
	sizedByTokenize
	// sizedByUsage: a tokens-per-word rate calibrated from the
	// usage.prompt_tokens of small requests, then checked against the
	// usage of each prompt's first request.
	sizedByUsage
)

// sizingTimeout bounds each request a prompt sizer makes.
const sizingTimeout = 2 * time.Minute

// promptSizer builds prompts whose size, as the server counts a request's
// prompt tokens (chat template included), is a target. It asks the
// server's /tokenize where it offers one; otherwise it calibrates a
// tokens-per-word rate from the usage of small requests that fit well
// within the server's context, never from a response the server may have
// truncated.
type promptSizer struct {
	Client *loadgen.Client
	API    loadgen.API
	Model  string
	// HTTPClient reaches /tokenize; nil means Client's.
	HTTPClient *http.Client
	// MaxModelLen, if known, bounds the calibration requests: they stay
	// within a quarter of it.
	MaxModelLen int
	// Send, if set, sends the calibration requests (for a caller that
	// retries them or counts their failures); nil means Client.Measure
	// with sizingTimeout.
	Send func(ctx context.Context, req *loadgen.Request) (*metrics.Timeline, error)
	// method says how prompts are sized, once the first is built.
	method sizingMethod

	calibrated bool
	calibErr   error       // why the calibration failed, once it has
	rate       sizing.Rate // tokens of a request of filler words, when calibrated
}

// maxSizingRounds bounds the /tokenize rounds for one prompt.
const maxSizingRounds = 8

// filler returns head followed by n filler words drawn from seed.
func filler(head string, n int, seed uint64) string { return sizing.Headed(head, n, seed) }

// Build returns a prompt of target tokens as the server counts them,
// beginning with head so that it is unique, and its expected size. Target
// 0 returns shortPrompt. With /tokenize the size is the server's own count;
// calibrated, it is an estimate for the caller to check against the usage
// of the prompt's first request (see Resize).
func (p *promptSizer) Build(ctx context.Context, target int, head string, seed uint64) (string, int, error) {
	if target <= 0 {
		n, err := p.count(ctx, shortPrompt)
		if err != nil {
			n = 0 // counted by the first request's usage instead
		}
		return shortPrompt, n, nil
	}
	if p.method == notSized || p.method == sizedByTokenize {
		text, n, err := p.byTokenize(ctx, target, head, seed)
		if err == nil {
			p.method = sizedByTokenize
			return text, n, nil
		}
		if !errors.Is(err, errNoTokenize) {
			return "", 0, err
		}
	}
	p.method = sizedByUsage
	if p.calibErr != nil {
		return "", 0, p.calibErr
	}
	if !p.calibrated {
		if err := p.calibrate(ctx, head, seed); err != nil {
			if ctx.Err() == nil {
				p.calibErr = err // a server that cannot be calibrated is not asked again
			}
			return "", 0, err
		}
	}
	words := p.rate.Words(target)
	return filler(head, words, seed), p.rate.Tokens(words), nil
}

// Resize returns a prompt like one Build made of words filler words, whose
// size the server counted as counted instead of target, and its word
// count: resized by [sizing.Resize], the one rule every prompt of llmload
// is resized by, given the prompt's earlier attempt of prevWords words
// counted as prevCounted (0 for none). head should differ from the first
// prompt's, in as few tokens as can be, so that the new one is not served
// from a prefix cache.
func (p *promptSizer) Resize(target, counted, words, prevWords, prevCounted int, head string, seed uint64) (string, int) {
	words = sizing.Resize(target, counted, words, p.rate.Base, prevWords, prevCounted)
	return filler(head, words, seed), words
}

// WordsFor returns the filler word count of a calibrated prompt of target
// tokens, and whether the sizer is calibrated.
func (p *promptSizer) WordsFor(target int) (int, bool) {
	if !p.calibrated {
		return 0, false
	}
	return p.rate.Words(target), true
}

var errNoTokenize = errors.New("matrix: the server has no /tokenize")

// byTokenize sizes a prompt with the server's /tokenize, adjusting the word
// count until the token count is target or the rounds run out.
func (p *promptSizer) byTokenize(ctx context.Context, target int, head string, seed uint64) (string, int, error) {
	words := target - len(strings.Fields(head))
	best, bestN := "", -1
	for range maxSizingRounds {
		text := filler(head, max(words, 0), seed)
		n, err := p.count(ctx, text)
		if err != nil {
			return "", 0, err
		}
		if bestN < 0 || abs(n-target) < abs(bestN-target) {
			best, bestN = text, n
		}
		if n == target {
			break
		}
		words = sizing.Resize(target, n, max(words, 0), 0, 0, 0)
	}
	return best, bestN, nil
}

func abs(x int) int { return max(x, -x) }

// count asks /tokenize for the number of prompt tokens a request with text
// has: with the chat template (as one user message) for the chat API, with
// the special tokens the server adds for completions.
func (p *promptSizer) count(ctx context.Context, text string) (int, error) {
	hc := p.HTTPClient
	if hc == nil {
		hc = p.Client.HTTPClient
	}
	hc = keyed.Client(hc, p.Client, p.Client.BaseURL)
	req := map[string]any{"model": p.Model}
	if p.API != loadgen.Completions { // messages, as chat, responses and messages send them
		req["messages"] = []map[string]string{{"role": "user", "content": text}}
		req["add_generation_prompt"] = true
	} else {
		req["prompt"] = text
	}
	body, _ := json.Marshal(req)
	root := strings.TrimSuffix(strings.TrimRight(p.Client.BaseURL, "/"), "/v1")
	ctx, cancel := context.WithTimeout(ctx, sizingTimeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, root+"/tokenize", bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("matrix: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(hreq)
	if err != nil {
		if what, sent, ok := nothttp.Parse(err); ok {
			return 0, &loadgen.Error{Kind: metrics.KindNotEventStream, Err: &loadgen.NotEventStreamError{
				URL: "POST " + hreq.URL.Redacted(), NotHTTP: true, Status: what, Body: sent}}
		}
		return 0, fmt.Errorf("matrix: POST /tokenize: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
		return 0, errNoTokenize
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%w (%s)", errNoTokenize, resp.Status)
	}
	var out struct {
		Count  *int  `json:"count"`
		Tokens []int `json:"tokens"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return 0, fmt.Errorf("%w: %v", errNoTokenize, err)
	}
	if out.Count != nil {
		return *out.Count, nil
	}
	if out.Tokens == nil {
		return 0, fmt.Errorf("%w: no count in its answer", errNoTokenize)
	}
	return len(out.Tokens), nil
}

// calibrate measures tokens per filler word from the prompt usage of
// small requests, each well within the server's context, checked to lie
// on a line so that a truncated answer is never believed (see
// [sizing.Calibrate]). An error is [workload.ErrUncalibrated] when the
// server's counts say nothing.
//
// [workload.ErrUncalibrated]: https://pkg.go.dev/github.com/llmload/llmload/loadgen/workload#ErrUncalibrated
func (p *promptSizer) calibrate(ctx context.Context, head string, seed uint64) error {
	rate, err := sizing.Calibrate(ctx, p.send, p.API, p.Model, p.MaxModelLen, func(words int) string {
		return filler(head, words, seed^0xca11)
	})
	if err != nil {
		return fmt.Errorf("matrix: %w", err)
	}
	p.rate, p.calibrated = rate, true
	return nil
}

func (p *promptSizer) send(ctx context.Context, req *loadgen.Request) (*metrics.Timeline, error) {
	if p.Send != nil {
		return p.Send(ctx, req)
	}
	ctx, cancel := context.WithTimeout(ctx, sizingTimeout)
	defer cancel()
	tl := &metrics.Timeline{}
	err := p.Client.Measure(ctx, req, tl, nil)
	return tl, err
}
