package matrix

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/loadgen"
)

// Runner runs a speed-test matrix against one server: it plans every cell,
// sizes the prompts, measures the prefill table and then each cell of the
// decode grid, as the package documentation describes.
//
// Set the fields, then call Run once.
type Runner struct {
	// Spec says what to measure.
	Spec Spec
	// Client sends the requests. Nil means a client for Spec.URL.
	Client *loadgen.Client
	// Speed is the simulator's speed factor: the runner waits Speed times
	// less than the spec says and reports times in the simulated server's
	// own clock. 0 means 1 (a real server).
	Speed float64
	// Server describes the server for the report; the runner completes
	// it (URL, model, engine, limits).
	Server Server
	// Resume continues earlier results of the same spec: finished cells and
	// prefill rows are kept, the rest are run.
	Resume *Results
	// Save, if set, is called with the results after every prefill row and
	// every cell, so an interruption loses nothing finished.
	Save func(*Results) error
	// Log receives the plan and what happens, a line at a time; nil is
	// silent.
	Log io.Writer
	// Progress receives a live status line (rewritten with \r) every half
	// second while a cell runs; nil is silent.
	Progress io.Writer
	// IdleTimeout bounds the wait for the server to be idle before a cell;
	// 0 means two minutes of the server's time.
	IdleTimeout time.Duration
	// StuckAfter ends a cell early when no token has arrived for this long
	// while the server reports requests waiting; 0 means 30 s of the
	// server's time.
	StuckAfter time.Duration

	// secrets removes the URL's password and the API key from what the run
	// logs, saves and returns.
	secrets *loadgen.Redactor
}

// errNoTokens is a request that completed without a token, not even in
// its usage.
var errNoTokens = errors.New("the server completed the request with no tokens")

// errStuck ends a cell whose requests are starved.
var errStuck = errors.New("matrix: no token arrived while requests waited for capacity")

func (r *Runner) speed() float64 {
	if r.Speed <= 0 {
		return 1
	}
	return r.Speed
}

// wall converts a duration of the server's own time into wall time.
func (r *Runner) wall(d time.Duration) time.Duration {
	return time.Duration(float64(d) / r.speed())
}

// logf writes a line to Log, each line cleaned of control characters
// and credentials: errors carry the server's own text.
func (r *Runner) logf(format string, args ...any) {
	if r.Log != nil {
		var b strings.Builder
		for line := range strings.Lines(r.secrets.Redact(fmt.Sprintf(format, args...))) {
			b.WriteString(loadgen.CleanLine(line) + "\n")
		}
		io.WriteString(r.Log, b.String())
	}
}

// Run runs the matrix. Once it has started, it returns the results even
// when it fails or ctx ends; then Complete is false, the cell in progress
// (if any) is marked Partial, and the error says why. A spec that cannot
// work ([*SpecError]), a Client that cannot ([*loadgen.ConfigError]) or
// results to resume of another spec are refused before anything is sent,
// with nil results.
//
// The password of the spec's URL and the client's API key are used for
// the requests (the key only for the URL's origin) and appear in nothing
// the run returns, saves or logs: the results hold the URL with its
// password replaced (see [loadgen.RedactURL]).
func (r *Runner) Run(ctx context.Context) (*Results, error) {
	spec := r.Spec.WithDefaults()
	if err := spec.Validate(); err != nil {
		return nil, loadgen.NewRedactor(spec.URL).Error(err)
	}
	c := r.Client
	if c == nil {
		c = &loadgen.Client{BaseURL: spec.URL}
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("matrix: Runner.Client: %w", err)
	}
	r.secrets = loadgen.NewRedactor(spec.URL, c.APIKey)
	res, err := r.run(ctx, spec, c)
	if res != nil {
		scrub(res, r.secrets)
	}
	return res, r.secrets.Error(err)
}

func (r *Runner) run(ctx context.Context, spec Spec, c *loadgen.Client) (*Results, error) {
	res := r.Resume
	if res != nil {
		if err := compatible(res.Spec, spec); err != nil {
			return nil, err
		}
	} else {
		res = &Results{Schema: Schema, Spec: spec, Started: time.Now().UTC()}
	}
	res.Server = r.Server
	res.Server.URL = spec.URL
	res.Server.Model = spec.Model
	if r.Speed > 0 && r.Speed != 1 {
		res.Server.Speed = r.Speed
	}
	res.Complete = false
	save := func() error {
		if r.Save == nil {
			return nil
		}
		scrub(res, r.secrets)
		return r.Save(res)
	}

	hc := withKey(c.HTTPClient, c.APIKey, spec.URL)

	// The plan: the server's own limits where it publishes them, completed
	// by the ones the user gave.
	limits := capacity.Limits{}
	d, err := capacity.Discover(ctx, hc, spec.URL)
	if err != nil && ctx.Err() != nil {
		return res, context.Cause(ctx)
	}
	if d != nil {
		limits = d.Limits
		if res.Server.Engine == "" && d.Engine != capacity.EngineUnknown {
			res.Server.Engine = d.Engine.String()
		}
		res.Server.Notes = appendNew(res.Server.Notes, d.Notes...)
	}
	if err != nil {
		r.logf("capacity: %v", err)
	}
	if spec.Limits != nil {
		limits = limits.Merge(*spec.Limits)
		if limits.Source == "" {
			limits.Source = spec.Limits.Source
		}
	}
	res.Server.Limits = limits
	plan := Plan(spec, limits)
	res.Cells = mergeCells(plan, res.Cells)
	if r.Log != nil {
		_ = WritePlan(r.Log, res.Cells, limits)
	}
	if err := save(); err != nil {
		return res, err
	}

	sampler := NewSampler(hc, spec.URL, max(r.wall(time.Second), 50*time.Millisecond))
	sampler.Start(ctx)
	defer sampler.Close()

	run := &cellRun{r: r, spec: spec, client: c, sampler: sampler, res: res, save: save,
		sizer: &PromptSizer{Client: c, API: spec.API, Model: spec.Model, HTTPClient: hc}, prompts: map[int]prompt{}}
	run.runID = newRunID()

	if err := run.prefill(ctx); err != nil {
		return res, err
	}
	if err := run.grid(ctx); err != nil {
		return res, err
	}
	res.Complete = true
	res.Finished = time.Now().UTC()
	r.logf("done: %d cells", len(res.Cells))
	return res, save()
}

// compatible reports whether results of spec a can be resumed under spec b.
func compatible(a, b Spec) error {
	a, b = a.WithDefaults(), b.WithDefaults()
	if loadgen.RedactURL(a.URL) != loadgen.RedactURL(b.URL) || a.Model != b.Model || a.API != b.API || a.MaxTokens != b.MaxTokens || a.Duration != b.Duration {
		return fmt.Errorf("matrix: cannot resume: the results were made with another spec (url %s, model %q, api %s, max tokens %d, duration %v)",
			loadgen.RedactURL(a.URL), a.Model, a.API, a.MaxTokens, time.Duration(a.Duration))
	}
	return nil
}

// mergeCells keeps the decided cells of done (not partial) and plans the
// rest.
func mergeCells(plan, done []Cell) []Cell {
	for i, p := range plan {
		for _, d := range done {
			if d.ContextTokens == p.ContextTokens && d.Concurrency == p.Concurrency && d.Status != StatusUnknown && (d.Measurement == nil || !d.Partial) {
				plan[i] = d
			}
		}
	}
	return plan
}

func appendNew(list []string, more ...string) []string {
	for _, m := range more {
		if !slices.Contains(list, m) {
			list = append(list, m)
		}
	}
	return list
}

func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// prompt is one context's prompt.
type prompt struct {
	text   string
	tokens int // as sized
	cold   bool
}

// cellRun is the state of one Run.
type cellRun struct {
	r       *Runner
	spec    Spec
	client  *loadgen.Client
	sampler *Sampler
	sizer   *PromptSizer
	res     *Results
	save    func() error
	runID   string
	prompts map[int]prompt
}

// promptFor returns the prompt of a context of the given size, building it
// on first use.
func (cr *cellRun) promptFor(ctx context.Context, tokens int) (prompt, error) {
	if p, ok := cr.prompts[tokens]; ok {
		return p, nil
	}
	head := fmt.Sprintf("[llmload run %s, context %d]", cr.runID, tokens)
	seed := binary.LittleEndian.Uint64([]byte(cr.runID + "llmload")[:8]) ^ uint64(tokens)
	text, n, err := cr.sizer.Build(ctx, tokens, head, seed)
	if err != nil {
		return prompt{}, err
	}
	if tokens > 0 && abs(n-tokens) > tokens/100 {
		cr.r.logf("prompt for %s: %d tokens, more than 1%% off", FormatTokens(tokens), n)
	}
	p := prompt{text: text, tokens: n, cold: true}
	cr.prompts[tokens] = p
	return p, nil
}

// prefill measures the prefill table: one cold request per context.
func (cr *cellRun) prefill(ctx context.Context) error {
	contexts := slices.Clone(cr.spec.Prefill)
	sort.Ints(contexts)
	for _, tokens := range contexts {
		if slices.ContainsFunc(cr.res.Prefill, func(p Prefill) bool { return p.ContextTokens == tokens && p.Error == "" }) {
			continue
		}
		row, err := cr.scout(ctx, tokens)
		if err != nil && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		cr.res.Prefill = slices.DeleteFunc(cr.res.Prefill, func(p Prefill) bool { return p.ContextTokens == tokens })
		cr.res.Prefill = append(cr.res.Prefill, row)
		if row.Error == "" {
			cr.r.logf("prefill %s: %d prompt tokens, TTFT %.0f ms, %.1f tok/s", FormatTokens(tokens), row.PromptTokens, row.TTFTms, row.PromptTokS)
		} else {
			cr.r.logf("prefill %s: %s", FormatTokens(tokens), row.Error)
		}
		if err := cr.save(); err != nil {
			return err
		}
	}
	return nil
}

// scout sends a context's prompt once with max_tokens 1, after the server
// is idle. The first scout of a context is cold and measures prefill; every
// scout warms the prefix cache.
func (cr *cellRun) scout(ctx context.Context, tokens int) (Prefill, error) {
	row := Prefill{ContextTokens: tokens}
	p, err := cr.promptFor(ctx, tokens)
	if err != nil {
		row.Error = err.Error()
		return row, err
	}
	cr.waitIdle(ctx)
	req := &loadgen.Request{API: cr.spec.API, Model: cr.spec.Model, Prompt: p.text, MaxTokens: 1, Usage: loadgen.UsageFinal}
	resp, err := cr.client.Do(ctx, req)
	p.cold = false
	cr.prompts[tokens] = p
	if err != nil {
		row.Error = err.Error()
		return row, err
	}
	if resp.OutputTokens() == 0 {
		row.Error = errNoTokens.Error()
		return row, errNoTokens
	}
	s := cr.r.speed()
	row.PromptTokens = resp.PromptTokens
	if row.PromptTokens == 0 {
		row.PromptTokens = p.tokens
	}
	ttft := resp.TTFT()
	row.TTFTms = ttft.Seconds() * 1000 * s
	if ttft > 0 {
		row.PromptTokS = float64(row.PromptTokens) / (ttft.Seconds() * s)
	}
	return row, nil
}

// waitIdle waits until the server reports nothing running or waiting, at
// most IdleTimeout. A server without metrics is not waited for.
func (cr *cellRun) waitIdle(ctx context.Context) {
	timeout := cr.r.IdleTimeout
	if timeout <= 0 {
		timeout = cr.r.wall(2 * time.Minute)
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		g, err := cr.sampler.Sample(ctx)
		if err != nil || g.Running < 0 {
			return
		}
		if g.Running == 0 && g.Waiting <= 0 {
			return
		}
		sleepCtx(ctx, min(cr.r.wall(time.Second), 250*time.Millisecond))
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// grid measures every undecided cell.
func (cr *cellRun) grid(ctx context.Context) error {
	todo := 0
	for _, c := range cr.res.Cells {
		if c.Status == StatusUnknown || (c.Measurement != nil && c.Partial) {
			todo++
		}
	}
	done := 0
	for i := range cr.res.Cells {
		c := &cr.res.Cells[i]
		if c.Status != StatusUnknown && (c.Measurement == nil || !c.Partial) {
			continue
		}
		done++
		cr.r.logf("cell %d of %d: context %s × %d", done, todo, FormatTokens(c.ContextTokens), c.Concurrency)
		err := cr.cell(ctx, c, done, todo)
		if serr := cr.save(); serr != nil {
			return serr
		}
		if err != nil {
			return err
		}
		cr.r.logf("  %s", describe(c))
	}
	return nil
}

func describe(c *Cell) string {
	if c.Measurement == nil {
		return fmt.Sprintf("%s: %s", c.Status, c.Reason)
	}
	s := fmt.Sprintf("%s: %.1f tok/s total, %.1f per request, TTFT %.0f ms, TBT %.1f ms, %d tokens in %.1f s",
		c.Status, c.TotalTokS, c.PerRequestTokS, c.TTFTms.P50, c.TBTms.P50, c.OutputTokens, c.MeasuredS)
	if c.Reason != "" {
		s += " (" + c.Reason + ")"
	}
	return s
}
