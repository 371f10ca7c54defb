package matrix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// shortPrompt is the prompt of a context-0 cell: a short request to
// generate.
const shortPrompt = "Write a long story about a lighthouse keeper who finds a message in a bottle."

// fillerWords are common English words, each one token with its leading
// space in the usual BPE vocabularies.
var fillerWords = strings.Fields(`the of and to in is was for that on with as at by from his
her they this are had not but have were which one you all she their there been has when who
will more no if out so said what up its about into than them can only other new some time
could these two may then first any like now my such over our even most made after also did
many before must through back years where much your way well down should because each just
those people how too little state good very make world still own see men work long here get
both between life being under never day same another know while last might us great old year
off come since against go came right used take three house water light river city garden
morning evening window stone bridge forest mountain harbor letter story music paper market
winter summer valley island station engine signal number table chair door road field`)

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
	calibErr   error   // why the calibration failed, once it has
	perWord    float64 // tokens per filler word, when calibrated
	base       float64 // tokens of a request with no filler words, when calibrated
}

// maxSizingRounds bounds the /tokenize rounds for one prompt.
const maxSizingRounds = 8

// filler returns head followed by n filler words drawn from seed.
func filler(head string, n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	var b strings.Builder
	b.Grow(len(head) + n*7)
	b.WriteString(head)
	for range n {
		b.WriteByte(' ')
		b.WriteString(fillerWords[rng.IntN(len(fillerWords))])
	}
	return b.String()
}

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
	words := p.wordsFor(target)
	return filler(head, words, seed), p.expect(words), nil
}

// Resize returns a prompt like one Build made of words filler words, whose
// size the server counted as counted instead of target: the word count is
// corrected by the prompt's own tokens per word (its count less the fixed
// overhead, over its words) or, given an earlier attempt of prevWords
// counted as prevCounted, by the rate between the two where that rate is
// within a factor of two of the prompt's own (two prompts a few words
// apart also differ in their heads and in the words drawn, and their
// counts then say little of the rate). head should differ from the first
// prompt's, in as few tokens as can be, so that the new one is not served
// from a prefix cache. It returns the new prompt and its word count.
func (p *promptSizer) Resize(target, counted, words, prevWords, prevCounted int, head string, seed uint64) (string, int) {
	rate := (float64(counted) - p.base) / float64(max(words, 1))
	if !(rate > 0) {
		rate = max(p.perWord, 0.1)
	}
	if prevWords > 0 && prevWords != words && prevCounted != counted {
		if between := float64(counted-prevCounted) / float64(words-prevWords); between >= rate/2 && between <= 2*rate {
			rate = between
		}
	}
	words = max(words+int(math.Round(float64(target-counted)/rate)), 1)
	return filler(head, words, seed), words
}

// wordsFor is the filler word count of a calibrated prompt of target
// tokens.
func (p *promptSizer) wordsFor(target int) int {
	return max(int(math.Round((float64(target)-p.base)/p.perWord)), 1)
}

// expect is the calibrated size of a prompt of words filler words.
func (p *promptSizer) expect(words int) int {
	return int(math.Round(p.base + p.perWord*float64(words)))
}

// WordsFor returns the filler word count of a calibrated prompt of target
// tokens, and whether the sizer is calibrated.
func (p *promptSizer) WordsFor(target int) (int, bool) {
	if !p.calibrated {
		return 0, false
	}
	return p.wordsFor(target), true
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
		// Each filler word is about n/words tokens: step by the difference.
		perWord := float64(n) / float64(max(words, 1))
		step := int(math.Round(float64(target-n) / max(perWord, 0.5)))
		if step == 0 {
			step = 1
			if n > target {
				step = -1
			}
		}
		words += step
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
	hc = withKey(hc, p.Client.APIKey, p.Client.BaseURL)
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
		if e := loadgen.AsNotHTTP("POST "+hreq.URL.Redacted(), err); e != nil {
			return 0, e
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

// Calibration sizes: a small request, then one of about calibrateTokens
// tokens (at most half of max_model_len), then one of half its words to
// check that the server counted the larger one in full.
const (
	calibrateSmallWords = 16
	calibrateTokens     = 1024
	// linearTolerance is how much lower the tokens per word of the larger
	// request's second half may be than its first half's: random words
	// vary by a few percent, a server that cut the request by more.
	linearTolerance = 0.2
)

// ErrUnsizable reports a server whose prompts cannot be sized: it has no
// /tokenize and reports no usable prompt usage.
var ErrUnsizable = errors.New("matrix: prompts cannot be sized")

// calibrate measures tokens per filler word from the prompt usage of small
// requests (max_tokens 1), each well within the server's context, so that
// the fixed overhead of the chat template cancels out. It checks that the
// counts lie on a line: the larger request's second half must count about
// as many tokens a word as its first half, which a server that truncated
// it would break; then the requests shrink.
func (p *promptSizer) calibrate(ctx context.Context, head string, seed uint64) error {
	usage := func(words int) (int, error) {
		req := &loadgen.Request{API: p.API, Model: p.Model, Prompt: filler(head, words, seed^0xca11), MaxTokens: 1, Usage: loadgen.UsageFinal}
		tl, err := p.send(ctx, req)
		if err != nil {
			return 0, fmt.Errorf("matrix: calibrate prompt size: %w", err)
		}
		if tl.PromptTokens <= 0 {
			return 0, fmt.Errorf("%w: the server has no /tokenize and reports no prompt usage", ErrUnsizable)
		}
		return tl.PromptTokens, nil
	}
	small := calibrateSmallWords
	a, err := usage(small)
	if err != nil {
		return err
	}
	budget := calibrateTokens
	if p.MaxModelLen > 0 {
		budget = min(budget, p.MaxModelLen/2)
	}
	large := max(small*budget/max(a, 1), 2*small)
	for range 4 {
		if large < 3*small {
			return fmt.Errorf("%w: no calibration request of %d words or more fit whole in the server's context (%d words counted %d tokens)", ErrUnsizable, 3*small, small, a)
		}
		b, err := usage(large)
		if err != nil {
			return err
		}
		mid := (small + large) / 2
		c, err := usage(mid)
		if err != nil {
			return err
		}
		perWord := float64(b-a) / float64(large-small)
		first := float64(c-a) / float64(mid-small)
		second := float64(b-c) / float64(large-mid)
		if perWord > 0 && second >= (1-linearTolerance)*first && (p.MaxModelLen <= 0 || b < p.MaxModelLen) {
			p.perWord = perWord
			p.base = float64(a) - perWord*float64(small)
			p.calibrated = true
			return nil
		}
		large /= 2 // the server may have cut the larger request: stay further within its context
	}
	return fmt.Errorf("%w: prompt usage did not grow with the prompt (%d tokens for %d words)", ErrUnsizable, a, small)
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
