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

	"github.com/llmload/llmload/loadgen"
)

// ShortPrompt is the prompt of a context-0 cell: a short request to
// generate.
const ShortPrompt = "Write a long story about a lighthouse keeper who finds a message in a bottle."

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

// PromptSizer builds prompts of an exact number of tokens for one server.
// It asks the server's /tokenize where it offers one, else calibrates a
// tokens-per-word rate from the usage of two small requests.
type PromptSizer struct {
	Client *loadgen.Client
	API    loadgen.API
	Model  string
	// HTTPClient reaches /tokenize; nil means Client's.
	HTTPClient *http.Client
	// Method says how prompts are sized, once the first is built:
	// "tokenize" or "calibrated".
	Method string

	calibrated bool
	perWord    float64 // tokens per filler word, when calibrated
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

// Build returns a prompt of target tokens (as the server's tokenizer counts
// the text alone, without a chat template), beginning with head so that it
// is unique, and its size as measured. Target 0 returns ShortPrompt.
func (p *PromptSizer) Build(ctx context.Context, target int, head string, seed uint64) (string, int, error) {
	if target <= 0 {
		n, _ := p.count(ctx, ShortPrompt)
		return ShortPrompt, n, nil
	}
	if p.Method == "" || p.Method == "tokenize" {
		text, n, err := p.byTokenize(ctx, target, head, seed)
		if err == nil {
			p.Method = "tokenize"
			return text, n, nil
		}
		if !errors.Is(err, errNoTokenize) {
			return "", 0, err
		}
	}
	p.Method = "calibrated"
	if !p.calibrated {
		if err := p.calibrate(ctx, head, seed); err != nil {
			return "", 0, err
		}
	}
	words := int(math.Round(float64(target) / p.perWord))
	text := filler(head, max(words-len(strings.Fields(head)), 0), seed)
	return text, target, nil
}

var errNoTokenize = errors.New("matrix: the server has no /tokenize")

// byTokenize sizes a prompt with the server's /tokenize, adjusting the word
// count until the token count is target or the rounds run out.
func (p *PromptSizer) byTokenize(ctx context.Context, target int, head string, seed uint64) (string, int, error) {
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

// count asks /tokenize for the token count of text.
func (p *PromptSizer) count(ctx context.Context, text string) (int, error) {
	hc := p.HTTPClient
	if hc == nil {
		hc = p.Client.HTTPClient
	}
	hc = withKey(hc, p.Client.APIKey, p.Client.BaseURL)
	body, _ := json.Marshal(map[string]any{"model": p.Model, "prompt": text, "add_special_tokens": false})
	root := strings.TrimSuffix(strings.TrimRight(p.Client.BaseURL, "/"), "/v1")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, root+"/tokenize", bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("matrix: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		if e := loadgen.AsNotHTTP("POST "+req.URL.Redacted(), err); e != nil {
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
	return len(out.Tokens), nil
}

// calibrate measures tokens per filler word from the prompt usage of two
// small requests (max_tokens 1), so that the fixed overhead of the chat
// template cancels out.
func (p *PromptSizer) calibrate(ctx context.Context, head string, seed uint64) error {
	usage := func(words int) (int, error) {
		req := &loadgen.Request{API: p.API, Model: p.Model, Prompt: filler(head, words, seed^0xca11), MaxTokens: 1, Usage: loadgen.UsageFinal}
		resp, err := p.Client.Do(ctx, req)
		if err != nil {
			return 0, err
		}
		if resp.PromptTokens == 0 {
			return 0, errors.New("matrix: the server reports no prompt usage and has no /tokenize; prompts cannot be sized")
		}
		return resp.PromptTokens, nil
	}
	const small, large = 256, 2048
	a, err := usage(small)
	if err != nil {
		return fmt.Errorf("matrix: calibrate prompt size: %w", err)
	}
	b, err := usage(large)
	if err != nil {
		return fmt.Errorf("matrix: calibrate prompt size: %w", err)
	}
	p.perWord = float64(b-a) / float64(large-small)
	if p.perWord <= 0 {
		return fmt.Errorf("matrix: calibrate prompt size: usage did not grow with the prompt (%d then %d tokens)", a, b)
	}
	p.calibrated = true
	return nil
}
