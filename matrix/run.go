package matrix

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/figure"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/counts"
	"github.com/llmload/llmload/internal/dcgm"
	"github.com/llmload/llmload/internal/keyed"
	"github.com/llmload/llmload/internal/redact"
	"github.com/llmload/llmload/internal/setting"
	"github.com/llmload/llmload/internal/sleep"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/matrix/internal/fleet"
	"github.com/llmload/llmload/metrics"
)

// Defaults of a [Runner].
const (
	// defaultScoutRetries is how many times a scout that failed in a way
	// that may pass (a reset, a 5xx, a 429) is sent again.
	defaultScoutRetries = 3
	// defaultScoutTimeout bounds a scout, plus
	// scoutTimePerToken for each prompt token until a prefill rate is
	// known, then ten times the time that rate gives.
	defaultScoutTimeout = 2 * time.Minute
	scoutTimePerToken   = 10 * time.Millisecond
	// defaultDiscoverTimeout bounds asking the server for its limits.
	defaultDiscoverTimeout = 30 * time.Second
	// defaultIdleTimeout bounds the wait for the server to be idle before
	// a prefill row or a cell.
	defaultIdleTimeout = 2 * time.Minute
	// defaultStuckAfter ends a cell early when no token has arrived for
	// this long (or for the spec's Duration, if shorter) while the server
	// reports requests waiting.
	defaultStuckAfter = 30 * time.Second
	// maxRetryAfter caps the wait a 429's Retry-After asks for.
	maxRetryAfter = 30 * time.Second
)

// Runner runs a speed-test matrix against one server: it plans every cell,
// sizes the prompts, measures the prefill table and then each cell of the
// decode grid, as the package documentation describes.
//
// Set the fields, then call Run once.
type Runner struct {
	// Spec says what to measure.
	Spec Spec
	// Client holds the settings of the requests' client (its HTTP client,
	// API key, headers, deadlines); the runner sends through a clone of it
	// (see [loadgen.Client.Clone]) to Spec.URL. Its BaseURL may be left
	// empty; one other than Spec.URL is refused. Nil means the defaults.
	Client *loadgen.Client
	// Server describes the server for the report; the runner completes
	// it (URL, model, engine, version, limits). Its Speed, for a
	// simulator, is recorded as it is: the runner runs the spec and
	// records every figure in wall time, and the reports convert them
	// into the simulated server's own time (see [capacity.Server]'s Speed).
	Server capacity.Server
	// Resume continues earlier results of the same spec: finished cells and
	// prefill rows are kept, the rest are run.
	Resume *Results
	// Save, if set, is called with the results after every prefill row and
	// every cell, so an interruption loses nothing finished.
	Save func(*Results) error
	// OnPlan, if set, is called with the results once the plan is made,
	// before any request is sent: every cell and prefill row predicted not
	// to fit is decided, the others are not yet.
	OnPlan func(*Results)
	// Log receives the plan and what happens, a line at a time; nil is
	// silent.
	Log io.Writer
	// Progress receives a live status line (rewritten with \r) every half
	// second while a cell runs; nil is silent.
	Progress io.Writer
	// IdleTimeout bounds the wait for the server to be idle before a cell;
	// 0 means 2 min.
	IdleTimeout time.Duration
	// StuckAfter ends a cell early when no token has arrived for this long
	// while the server reports requests waiting; 0 means 30 s or the
	// spec's Duration, whichever is shorter.
	StuckAfter time.Duration
	// ScoutRetries is how many times a scout that failed transiently is
	// sent again; 0 means 3, negative none.
	ScoutRetries int
	// DiscoverTimeout bounds asking the server for its limits (each of its
	// requests has its own 10 s bound); 0 means 30 s. A server that answers none of them in time
	// ends the run before anything else is sent.
	DiscoverTimeout time.Duration

	// Fleet, if set, runs each cell's streams on several processes: a
	// [github.com/llmload/llmload/matrix/shard.Leader] and the followers
	// that join it. The leader does everything else (discovery, prompts,
	// the prefill table, scouts, the server's /metrics) and merges the
	// shards' parts of each cell exactly into one cell of the same schema
	// as a single process's, with the shards in [Measurement].Shards. Nil
	// runs every stream in this process.
	Fleet fleet.Fleet

	// GPUMetrics, if set, are the URLs of the DCGM exporters (NVIDIA's
	// dcgm-exporter, such as http://gpu-node:9400/metrics) of the
	// server's GPUs, one a node: they are read about once a second while a
	// cell runs, and each cell gets the energy its window drew (see
	// [Measurement].Energy), over every GPU they list. An exporter that
	// cannot be read before the run starts ends it before anything is
	// sent. With a Fleet, the leader reads them. GPUHourlyCost, if set, is
	// the price of one GPU for an hour, in dollars, for each cell's cost of
	// a million output tokens.
	GPUMetrics    []string
	GPUHourlyCost float64

	// OnCell, if set, is called with each cell's generator before it
	// runs (with a Fleet, the generator of this process's share): its
	// Progress may be read while the cell runs, and a hook set on its
	// OnRequest receives each request of the cell's streams as it ends,
	// warm-up included (a scout's is not), with the cell's window so far
	// in g.Recorder.Window() (zero before it opens).
	OnCell func(contextTokens, streams int, g *loadgen.Generator)

	// secrets removes the URL's password and the API key from what the run
	// logs, saves and returns.
	secrets *redact.Redactor
}

// errStuck ends a cell whose requests are starved.
var errStuck = errors.New("matrix: no token arrived while requests waited for capacity")

// logf writes a line to Log, each line cleaned of control characters
// and credentials: errors carry the server's own text.
func (r *Runner) logf(format string, args ...any) {
	if r.Log != nil {
		var b strings.Builder
		for line := range strings.Lines(r.secrets.Redact(fmt.Sprintf(format, args...))) {
			b.WriteString(textsafe.Line(line) + "\n")
		}
		io.WriteString(r.Log, b.String())
	}
}

func (r *Runner) scoutRetries() int {
	return setting.Resolve(r.ScoutRetries, defaultScoutRetries)
}

// Run runs the matrix. Once it has started, it returns the results even
// when it fails or ctx ends; then Complete is false, the cell in progress
// (if any) keeps what its window measured, marked Partial, or, ended
// before its window counted a token, is left undecided (StatusUnknown),
// and the error says why. Resume runs both again. A spec or a Client
// that cannot work (a [*loadgen.ConfigError]) and results to resume of
// another spec are refused before anything is sent, with nil results.
//
// The password of the spec's URL and the client's API key are used for
// the requests (the key only for the URL's origin) and appear in nothing
// the run returns, saves or logs: the results hold the URL with its
// password replaced (see [redact.URL]).
func (r *Runner) Run(ctx context.Context) (*Results, error) {
	spec, c, err := r.settle()
	if err != nil {
		return nil, err
	}
	r.secrets = redact.New(spec.URL, append(redact.HeaderSecrets(c.Header), c.APIKey)...)
	res, err := r.run(ctx, spec, c)
	if res != nil {
		scrub(res, r.secrets)
	}
	return res, r.secrets.Error(err)
}

// Validate reports what [Runner.Run] would refuse before sending
// anything: a spec that cannot work ([*loadgen.ConfigError]s, with its defaults,
// split over the Fleet's shards), a Client that cannot
// ([*loadgen.ConfigError]), GPU settings that cannot, and results to
// resume of another spec. It runs the same checks Run runs, once.
func (r *Runner) Validate() error {
	_, _, err := r.settle()
	return err
}

// settle applies the spec's defaults and checks the runner's settings,
// once: it returns the spec and the client the run uses.
func (r *Runner) settle() (Spec, *loadgen.Client, error) {
	spec := r.Spec.WithDefaults()
	shards := 1
	if r.Fleet != nil {
		shards = r.Fleet.Shards()
	}
	if err := spec.validateSharded(shards); err != nil {
		return spec, nil, redact.New(spec.URL).Error(err)
	}
	c := &loadgen.Client{}
	if r.Client != nil {
		if r.Client.BaseURL != "" && strings.TrimRight(r.Client.BaseURL, "/") != strings.TrimRight(spec.URL, "/") {
			return spec, nil, fmt.Errorf("matrix: Runner.Client: %w", &loadgen.ConfigError{Field: "Client.BaseURL",
				Reason: fmt.Sprintf("is %s, not Spec.URL (%s): the runner sends to Spec.URL; leave it empty",
					redact.URL(r.Client.BaseURL), redact.URL(spec.URL))})
		}
		c = r.Client.Clone()
	}
	c.BaseURL = spec.URL
	switch h := r.GPUHourlyCost; {
	case !(h >= 0) || math.IsInf(h, 0):
		return spec, nil, fmt.Errorf("matrix: Runner.GPUHourlyCost is %v: give a price in dollars, 0 or more", h)
	case h > 0 && len(r.GPUMetrics) == 0:
		return spec, nil, errors.New("matrix: Runner.GPUHourlyCost is a GPU's price: it needs Runner.GPUMetrics, which count the GPUs")
	}
	if err := c.Validate(); err != nil {
		return spec, nil, fmt.Errorf("matrix: Runner.Client: %w", err)
	}
	if r.Resume != nil {
		if err := compatible(r.Resume.Spec, spec); err != nil {
			return spec, nil, err
		}
	}
	return spec, c, nil
}

func (r *Runner) run(ctx context.Context, spec Spec, c *loadgen.Client) (*Results, error) {
	res := r.Resume
	if res == nil {
		res = &Results{Schema: Schema, Started: time.Now().UTC()}
	}
	res.Spec = spec // settled: what the plan is made from (a resumed run's, checked compatible)
	res.Server = r.Server
	res.Server.URL = spec.URL
	res.Server.Model = spec.Model
	if res.Server.Speed == 1 {
		res.Server.Speed = 0 // a simulator at its own pace runs in real time
	}
	res.Complete = false
	save := func() error {
		if r.Save == nil {
			return nil
		}
		scrub(res, r.secrets)
		return r.Save(res)
	}

	hc := keyed.Client(c.HTTPClient, c, spec.URL)

	var gpus *dcgm.Meter
	if len(r.GPUMetrics) > 0 {
		gpus = dcgm.New(&http.Client{}, r.GPUMetrics, sampleEvery(spec))
		if err := gpus.Read(ctx); err != nil {
			return res, fmt.Errorf("matrix: Runner.GPUMetrics: %w", err)
		}
		gpus.Start(ctx)
		defer gpus.Close()
	}

	// The plan: the server's own limits where it publishes them, completed
	// by the ones the user gave.
	limits, err := r.discover(ctx, c, hc, spec, res)
	if err != nil {
		return res, err
	}
	res.Server.Limits = limits
	res.Cells = mergeCells(planCells(spec, limits), res.Cells)
	res.Prefill = mergePrefill(planPrefill(spec, limits), res.Prefill)
	if r.Log != nil {
		_ = writePlan(r.Log, res, limits)
	}
	if r.OnPlan != nil {
		r.OnPlan(res)
	}
	if err := save(); err != nil {
		return res, err
	}

	sampler := newSampler(hc, spec.URL, sampleEvery(spec))
	sampler.Start(ctx)
	defer sampler.Close()

	run := &cellRun{r: r, spec: spec, client: c, sampler: sampler, gpus: gpus, res: res, save: save,
		limits: limits, prompts: map[int]*prompt{}}
	run.sizer = &promptSizer{Client: c, API: spec.API, Model: spec.Model, HTTPClient: hc,
		MaxModelLen: limits.MaxModelLen, Send: run.sendSizing}
	run.runID = newRunID()
	if err := run.measureImages(ctx); err != nil {
		return res, err
	}

	if err := run.prefill(ctx); err != nil {
		return res, err
	}
	if err := run.grid(ctx); err != nil {
		return res, err
	}
	if ctx.Err() != nil {
		// A cell or a prefill row that ended with the context may have
		// kept what it measured; the run, all the same, did not finish.
		return res, context.Cause(ctx)
	}
	res.Complete = true
	res.Finished = time.Now().UTC()
	r.logf("done: %d cells", len(res.Cells))
	return res, save()
}

// discover asks the server for its limits, engine and version, and merges
// the limits the spec gives. An Ollama that has not loaded the model yet
// publishes no context length: one short request loads it, and it is
// asked again.
func (r *Runner) discover(ctx context.Context, c *loadgen.Client, hc *http.Client, spec Spec, res *Results) (capacity.Limits, error) {
	timeout := r.DiscoverTimeout
	if timeout <= 0 {
		timeout = defaultDiscoverTimeout
	}
	dctx, cancel := context.WithTimeoutCause(ctx, timeout, capacity.ErrNoAnswer)
	d, err := capacity.DiscoverModel(dctx, hc, spec.URL, spec.Model)
	timedOut := dctx.Err() != nil && ctx.Err() == nil
	cancel()
	if err != nil && ctx.Err() != nil {
		return capacity.Limits{}, context.Cause(ctx)
	}
	if errors.Is(err, capacity.ErrNoAnswer) || (err != nil && timedOut && !answered(d)) {
		// A server that takes a connection and says nothing would hold
		// every request of the run as long as the client allows.
		return capacity.Limits{}, fmt.Errorf("matrix: %s accepted a connection and answered nothing within %v: %w",
			redact.URL(spec.URL), min(timeout, capacity.DefaultProbeTimeout), capacity.ErrNoAnswer)
	}
	if timedOut {
		r.logf("capacity: the server's limits took longer than %v to read; the rest are unknown", timeout)
	}
	if d != nil && d.Engine == capacity.EngineOllama && d.Limits.MaxModelLen == 0 {
		r.logf("capacity: Ollama publishes its context length once the model is loaded: loading it")
		lctx, cancel := context.WithTimeout(ctx, defaultScoutTimeout)
		var tl metrics.Timeline
		_ = c.Measure(lctx, &loadgen.Request{API: spec.API, Model: spec.Model, Prompt: shortPrompt, MaxTokens: 1}, &tl, nil)
		cancel()
		if again, aerr := capacity.DiscoverModel(ctx, hc, spec.URL, spec.Model); aerr == nil {
			d = again
		}
	}
	var given capacity.Limits
	if spec.Limits != nil {
		given = *spec.Limits
	}
	limits := given
	if d != nil {
		limits = d.Complete(given)
		if limits.Source == "" {
			limits.Source = given.Source
		}
		if res.Server.Engine == capacity.EngineUnknown {
			res.Server.Engine = d.Engine
		}
		if res.Server.Version == "" {
			res.Server.Version = d.Version
		}
		res.Server.Notes = appendNew(res.Server.Notes, d.Notes...)
	}
	if err != nil {
		r.logf("capacity: %s", strings.TrimPrefix(err.Error(), "capacity: "))
	}
	return limits, nil
}

// compatible reports whether results of spec a can be resumed under the
// settled spec b.
func compatible(a, b Spec) error {
	a = a.WithDefaults() // the results' own, settled as b was
	if redact.URL(a.URL) != redact.URL(b.URL) || a.Model != b.Model || a.API != b.API || a.MaxTokens != b.MaxTokens || a.Duration != b.Duration {
		return fmt.Errorf("matrix: cannot resume: the results were made with another spec (url %s, model %q, api %s, max tokens %d, duration %v)",
			redact.URL(a.URL), a.Model, a.API, a.MaxTokens, a.Duration)
	}
	return nil
}

// answered reports whether the server answered any of discovery's
// requests.
func answered(d *capacity.Discovery) bool {
	if d == nil {
		return false
	}
	for _, p := range d.Probes {
		if p.Status != 0 {
			return true
		}
	}
	return false
}

// mergeCells keeps the decided cells of done (not partial) and plans the
// rest.
func mergeCells(plan, done []Cell) []Cell {
	for i, p := range plan {
		for _, d := range done {
			if d.ContextTokens == p.ContextTokens && d.Concurrency == p.Concurrency && d.Status != StatusUnknown && (d.Measurement == nil || !d.Measurement.Partial) {
				plan[i] = d
			}
		}
	}
	return plan
}

// mergePrefill keeps the rows of done that were measured or found over
// capacity, and plans the rest.
func mergePrefill(plan, done []Prefill) []Prefill {
	for i, p := range plan {
		for _, d := range done {
			if d.ContextTokens == p.ContextTokens && (d.Status == Valid || d.Status == OverCapacity) {
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
	tokens int // expected, as sized
	words  int // filler words, when calibrated
	round  int // how many times it was resized
	cold   bool
	// checked: the server counted it within 1% of its target, or it was
	// resized as often as allowed.
	checked bool
	// prevWords and prevCounted are the words and the server's count of
	// the prompt before the last resize.
	prevWords, prevCounted int
	// coldTTFT is the time to first token of its first, cold request;
	// warmTTFT the shortest of the later ones (0 before there is one),
	// the idle server's answer to a prompt it has cached. A scout that
	// finds the server still busy (with requests a cell's end cancelled,
	// which a server without metrics cannot be seen finishing) answers
	// later than that.
	coldTTFT, warmTTFT time.Duration
}

// maxResizes bounds how often a calibrated prompt is resized after its
// first request's usage: on a vocabulary whose words count one to eight
// tokens, a small prompt may take three steps of a word or two to land
// within 1%.
const maxResizes = 3

// cellRun is the state of one Run.
type cellRun struct {
	r       *Runner
	spec    Spec
	client  *loadgen.Client
	sampler *sampler
	gpus    *dcgm.Meter // nil without Runner.GPUMetrics
	sizer   *promptSizer
	res     *Results
	save    func() error
	limits  capacity.Limits
	runID   string
	prompts map[int]*prompt
	// prefillRate is the fastest prefill measured, in prompt tokens per
	// second, to bound later scouts.
	prefillRate float64
	// sizing tallies the failures of calibration requests, for the first
	// row or cell that needed the calibration.
	sizing tally
	// queueCap is the most requests the server ran at once in the last
	// cell found queued; 0 until one is.
	queueCap int
	// seq numbers the cells sent to a fleet.
	seq int
	// images go with every prompt (Spec.Images); imageTokens is what the
	// server counted for them, 0 when it reports no usage.
	images      []string
	imageTokens int
}

// tally counts requests and their failures by kind.
type tally struct {
	requests, errors int
	kinds            map[metrics.ErrorKind]int
}

func (t *tally) add(tl *metrics.Timeline) {
	t.requests++
	if tl.Kind == metrics.KindNone || tl.Kind == metrics.KindCanceled {
		return
	}
	t.errors++
	if t.kinds == nil {
		t.kinds = map[metrics.ErrorKind]int{}
	}
	t.kinds[tl.Kind]++
}

func (t *tally) merge(o tally) {
	t.requests += o.requests
	t.errors += o.errors
	t.kinds = counts.Add(t.kinds, o.kinds)
}

// promptFor returns the prompt of a context of the given size, building it
// on first use.
func (cr *cellRun) promptFor(ctx context.Context, tokens int) (*prompt, error) {
	if p, ok := cr.prompts[tokens]; ok {
		return p, nil
	}
	head := cr.head(tokens, 0)
	// The images' tokens are part of the context: the text is that much
	// shorter.
	target := tokens
	if tokens > 0 && cr.imageTokens > 0 {
		target = max(tokens-cr.imageTokens, 1)
	}
	text, n, err := cr.sizer.Build(ctx, target, head, cr.seed(tokens))
	if err != nil {
		return nil, err
	}
	if tokens > 0 {
		n += cr.imageTokens
	}
	p := &prompt{text: text, tokens: n, cold: true}
	if cr.sizer.method == sizedByUsage {
		p.words, _ = cr.sizer.WordsFor(target)
	} else {
		p.checked = tokens == 0 || abs(n-tokens) <= tokens/100 // counted by /tokenize
	}
	cr.prompts[tokens] = p
	return p, nil
}

// head is the unique beginning of a context's prompt; a resized prompt gets
// a new one, so that it is cold again.
func (cr *cellRun) head(tokens, round int) string {
	// Every round's head has the same words and length, so that a resize
	// is not thrown off by a head that grew.
	return fmt.Sprintf("[llmload run %s, context %d, size %d]", cr.runID, tokens, round)
}

func (cr *cellRun) seed(tokens int) uint64 {
	return binary.LittleEndian.Uint64([]byte(cr.runID + "llmload")[:8]) ^ uint64(tokens)
}

// sendSizing sends a calibration request, retrying transient failures as a
// scout does, and tallies its failures.
func (cr *cellRun) sendSizing(ctx context.Context, req *loadgen.Request) (*metrics.Timeline, error) {
	var t tally
	tl, err := cr.send(ctx, req, sizingTimeout, &t)
	cr.sizing.merge(t)
	return tl, err
}

// send sends one short request (a scout or a calibration request), within
// timeout, and sends it again after a failure that may
// pass (a reset, a 5xx, a 429 after its Retry-After), at most ScoutRetries
// times. Every attempt is tallied. It returns the last attempt.
func (cr *cellRun) send(ctx context.Context, req *loadgen.Request, timeout time.Duration, t *tally) (*metrics.Timeline, error) {
	var tl *metrics.Timeline
	var err error
	for attempt := 0; ; attempt++ {
		tl = &metrics.Timeline{}
		rctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("matrix: no answer within %v", timeout))
		err = cr.client.Measure(rctx, req, tl, nil)
		if err != nil && ctx.Err() == nil && rctx.Err() != nil {
			err = context.Cause(rctx)
			tl.Kind, tl.Err = metrics.KindHeaderTimeout, err
			if !tl.First.IsZero() {
				tl.Kind = metrics.KindStall
			}
		}
		cancel()
		t.add(tl)
		if err == nil || ctx.Err() != nil || attempt >= cr.r.scoutRetries() || !transient(tl.Kind) {
			return tl, err
		}
		pause := time.Duration(attempt+1) * 500 * time.Millisecond
		var se *loadgen.StatusError
		if errors.As(err, &se) && se.RetryAfter > 0 {
			pause = min(se.RetryAfter, maxRetryAfter)
		}
		cr.r.logf("  the request failed (%v); sending it again in %v", err, pause.Round(time.Millisecond))
		sleep.For(ctx, pause)
	}
}

// transient reports whether a failure may pass if the request is sent
// again.
func transient(k metrics.ErrorKind) bool {
	switch k {
	case metrics.KindConnect, metrics.KindRateLimited, metrics.KindServerStatus,
		metrics.KindTruncated, metrics.KindStreamError:
		return true
	}
	return false
}

// scoutTimeout bounds the scout of a prompt of tokens.
func (cr *cellRun) scoutTimeout(tokens int) time.Duration {
	if cr.prefillRate > 0 {
		return max(defaultScoutTimeout, time.Duration(10*float64(tokens)/cr.prefillRate*float64(time.Second)))
	}
	return defaultScoutTimeout + time.Duration(tokens)*scoutTimePerToken
}

// prefill measures the prefill table: one cold request per context that
// fits, smallest first.
func (cr *cellRun) prefill(ctx context.Context) error {
	order := make([]int, 0, len(cr.res.Prefill))
	for i, p := range cr.res.Prefill {
		if p.Status == StatusUnknown || p.Status == Failed {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		return cr.res.Prefill[order[a]].ContextTokens < cr.res.Prefill[order[b]].ContextTokens
	})
	for _, i := range order {
		tokens := cr.res.Prefill[i].ContextTokens
		row := cr.scout(ctx, tokens, "prefill row")
		if row.Status == Valid {
			cr.repeatPrefill(ctx, &row)
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		row.Predicted = cr.res.Prefill[i].Predicted
		cr.res.Prefill[i] = row.Prefill
		if row.Status == Valid {
			cr.r.logf("prefill %s: %d prompt tokens, TTFT %.1f ms (%s), %.1f tok/s", formatTokens(tokens), row.PromptTokens, row.TTFT, ttftRange(row.TTFTs), row.PromptTokensPerSec)
		} else {
			cr.r.logf("prefill %s: %s: %s", formatTokens(tokens), row.Status, row.Reason)
		}
		if err := cr.save(); err != nil {
			return err
		}
	}
	return nil
}

// repeatPrefill measures a prefill row the scout measured again, with
// more cold requests up to Spec.PrefillRepeat, each the row's prompt under
// a head of its own (so no prefix cache holds it), after the server is
// idle. The row's TTFT becomes their median, and TTFTs holds each; a
// request that fails is tallied in the row and leaves no TTFT.
func (cr *cellRun) repeatPrefill(ctx context.Context, row *scoutResult) {
	tokens := row.ContextTokens
	p := cr.prompts[tokens]
	head := cr.head(tokens, p.round)
	body, ok := strings.CutPrefix(p.text, head)
	if !ok || cr.spec.PrefillRepeat <= 1 {
		return
	}
	ttfts := []time.Duration{row.ttft}
	var t tally
	for k := 1; k < cr.spec.PrefillRepeat && ctx.Err() == nil; k++ {
		cr.waitIdle(ctx)
		prompt := fmt.Sprintf("[llmload run %s, context %d, cold %d]", cr.runID, tokens, k) + body
		req := &loadgen.Request{API: cr.spec.API, Model: cr.spec.Model, Prompt: prompt, Images: cr.images, MaxTokens: 1, Usage: loadgen.UsageFinal}
		tl, err := cr.send(ctx, req, cr.scoutTimeout(tokens), &t)
		if err == nil && tl.TTFT() > 0 && tl.OutputTokens() > 0 {
			ttfts = append(ttfts, tl.TTFT())
		}
	}
	row.Requests += t.requests
	row.Errors += t.errors
	row.ErrorKinds = counts.Add(row.ErrorKinds, t.kinds)
	row.TTFTs = make([]float64, len(ttfts))
	for i, d := range ttfts {
		row.TTFTs[i] = ms(d)
	}
	sorted := slices.Sorted(slices.Values(ttfts))
	median := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		median = (sorted[len(sorted)/2-1] + median) / 2
	}
	row.TTFT = ms(median)
	if median > 0 {
		row.PromptTokensPerSec = float64(row.PromptTokens) / median.Seconds()
	}
}

// ttftRange says a row's cold requests: "3 cold requests, 170.2–175.9 ms".
func ttftRange(ttfts []float64) string {
	if len(ttfts) < 2 {
		return "1 cold request"
	}
	return fmt.Sprintf("%d cold requests, %.1f–%.1f ms", len(ttfts), slices.Min(ttfts), slices.Max(ttfts))
}

// scoutResult is a scout's outcome: the prefill row it measured (with its
// status and the requests it sent) and its time to first token in wall
// time.
type scoutResult struct {
	Prefill
	ttft time.Duration
}

// scout sends a context's prompt with max_tokens 1, after the server is
// idle. The first scout of a context is cold and measures prefill; every
// scout warms the prefix cache. It checks the size the server counted: a
// calibrated prompt more than 1% off is resized (at most maxResizes times)
// and sent again; a prompt the server truncated or refused as too long
// makes the row Over capacity; a failure that persists through the retries
// makes it Failed. Every request sent is tallied in the row.
func (cr *cellRun) scout(ctx context.Context, tokens int, what string) (row scoutResult) {
	row.ContextTokens = tokens
	var t tally
	defer func() {
		t.merge(cr.sizing)
		cr.sizing = tally{}
		row.Requests, row.Errors, row.ErrorKinds = t.requests, t.errors, t.kinds
		if row.Status == Failed && row.Error == "" {
			row.Error = row.Reason
		}
	}()
	p, err := cr.promptFor(ctx, tokens)
	if err != nil {
		row.Status, row.Reason = Failed, "the prompt could not be sized: "+err.Error()
		return row
	}
	for {
		cr.waitIdle(ctx)
		req := &loadgen.Request{API: cr.spec.API, Model: cr.spec.Model, Prompt: p.text, Images: cr.images, MaxTokens: 1, Usage: loadgen.UsageFinal}
		tl, err := cr.send(ctx, req, cr.scoutTimeout(tokens), &t)
		wasCold := p.cold
		p.cold = false
		if ctx.Err() != nil {
			return row
		}
		if err != nil {
			row.Status, row.Reason = classifyScout(tl.Kind, err, what)
			return row
		}
		if tl.OutputTokens() == 0 {
			row.Status, row.Reason = Failed, emptyScout(what)
			return row
		}
		counted := tl.PromptTokens
		if counted <= 0 {
			counted = p.tokens // the server reports no usage: /tokenize's count
		}
		row.PromptTokens = counted
		row.ImageTokens = cr.imageTokens
		if why := cr.truncated(p, tokens, counted); why != "" {
			row.Status, row.Reason = OverCapacity, why
			return row
		}
		if !p.checked && tokens > 0 && abs(counted-tokens) > tokens/100 && p.round < maxResizes {
			// The calibration was off for this prompt: correct it with the
			// server's own count and send the new prompt, cold again.
			p.round++
			words, prevWords, prevCounted := max(p.words, 1), p.prevWords, p.prevCounted
			p.prevWords, p.prevCounted = words, counted
			p.text, p.words = cr.sizer.Resize(tokens, counted, words, prevWords, prevCounted, cr.head(tokens, p.round), cr.seed(tokens))
			p.tokens = tokens // what the new prompt aims at
			p.cold = true
			cr.r.logf("  prompt for %s: the server counted %d tokens; resized from %d to %d words", formatTokens(tokens), counted, words, p.words)
			continue
		}
		p.checked = true
		row.ttft = tl.TTFT()
		if wasCold {
			p.coldTTFT = row.ttft
		} else if row.ttft > 0 && (p.warmTTFT == 0 || row.ttft < p.warmTTFT) {
			p.warmTTFT = row.ttft
		}
		row.TTFT = row.ttft.Seconds() * 1000
		if row.ttft > 0 {
			row.PromptTokensPerSec = float64(counted) / row.ttft.Seconds()
			cr.prefillRate = max(cr.prefillRate, row.PromptTokensPerSec)
		}
		row.Status = Valid
		if tokens > 0 && abs(counted-tokens) > tokens/100 {
			cr.r.logf("  prompt for %s: %d tokens as the server counts them, more than 1%% off", formatTokens(tokens), counted)
		}
		return row
	}
}

// truncated says why the server did not take a prompt whole, or "": it
// counted far fewer tokens than were sent, the prompt fills its whole
// context, or a larger prompt counted no more than a smaller one did.
func (cr *cellRun) truncated(p *prompt, target, counted int) string {
	if target <= 0 {
		return ""
	}
	sent := max(p.tokens, target)
	if m := cr.limits.MaxModelLen; m > 0 && counted >= m {
		return fmt.Sprintf("the server cut the prompt to %d tokens, its whole context (max_model_len %d), of about %d sent", counted, m, sent)
	}
	if p.tokens > 0 && float64(counted) < 0.8*float64(p.tokens) {
		return fmt.Sprintf("the server counted %d prompt tokens of about %d sent: it truncated the prompt to its context", counted, p.tokens)
	}
	if p.round > 0 && p.words > p.prevWords && counted <= p.prevCounted {
		return fmt.Sprintf("the server counts no more than %d prompt tokens however long the prompt: it truncates prompts to its context", counted)
	}
	return ""
}

// waitIdle waits until the server reports nothing running or waiting, at
// most IdleTimeout. A server without metrics (or whose /metrics did not
// answer in time) is not waited for.
func (cr *cellRun) waitIdle(ctx context.Context) {
	timeout := cr.r.IdleTimeout
	if timeout <= 0 {
		timeout = defaultIdleTimeout
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if cr.sampler.Failing() {
			return
		}
		g, err := cr.sampler.Sample(ctx)
		if err != nil || g.Running < 0 {
			return
		}
		if g.Running == 0 && g.Waiting <= 0 {
			return
		}
		sleep.For(ctx, min(cr.sampler.every, 250*time.Millisecond))
	}
}

// sampleEvery is how often the server's /metrics are read: once a second,
// or more often for a short window, so that a window holds about thirty
// samples (at most twenty a second).
func sampleEvery(spec Spec) time.Duration {
	return min(max(spec.Duration/30, 50*time.Millisecond), time.Second)
}

// grid measures every undecided cell.
func (cr *cellRun) grid(ctx context.Context) error {
	todo := 0
	for _, c := range cr.res.Cells {
		if c.Status == StatusUnknown || (c.Measurement != nil && c.Measurement.Partial) {
			todo++
		}
	}
	done := 0
	for i := range cr.res.Cells {
		c := &cr.res.Cells[i]
		if c.Status != StatusUnknown && (c.Measurement == nil || !c.Measurement.Partial) {
			continue
		}
		done++
		cr.r.logf("cell %d of %d: context %s × %d", done, todo, formatTokens(c.ContextTokens), c.Concurrency)
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
	m := c.Measurement
	if m == nil {
		return fmt.Sprintf("%s: %s", c.Status.words(), c.Reason)
	}
	s := fmt.Sprintf("%s: %.1f tok/s total, %.1f per request, TTFT %.0f ms, TBT %.1f ms, %d tokens in %.1f s, warm-up %.1f s",
		c.Status.words(), m.OutputTokensPerSec, m.PerRequestTokensPerSec, m.TTFT.P50, m.TBT.P50, m.OutputTokens, m.MeasuredS, m.WarmupS)
	if c.Reason != "" {
		s += " (" + c.Reason + ")"
	}
	for _, n := range m.Notes {
		s += "; " + n
	}
	if len(m.Shards) > 0 {
		s += "; shards " + shardList(m.Shards)
	}
	if m.Energy != nil {
		s += "; " + figure.Energy(m.Energy)
	}
	return s
}
