// Command matrix runs the speed-test matrix and prints it: a prefill table
// and a grid of sustained decode throughput by context length and
// concurrency, with time to first token and time between tokens, and the
// cells that cannot fit in the server's KV cache marked Over capacity
// without being sent.
//
// With no flags it runs the seed page's matrix against llmload's simulated
// server (calibrated to the seed run) at a speed that finishes in a few
// minutes, and reports in the simulated server's own time:
//
//	go run ./examples/matrix
//
// Against a real server:
//
//	go run ./examples/matrix -url http://127.0.0.1:8000/v1 -model my-model
//
// The results are saved as JSON after every cell (-results); Ctrl-C stops
// the run and keeps every finished cell, a second Ctrl-C exits at once, and
// -resume FILE finishes an interrupted run. -render FILE renders a results
// file again, in any -format, without changing it. -compare A.json B.json
// sets two runs side by side: a figure is marked better or worse only when
// it moved by more than 5% and beyond the interval the spread of each
// run's requests gives (see matrix.Interval). Repeated runs of each side,
// -compare A1.json,A2.json B1.json,B2.json, add the runs' differences to
// that noise (see matrix.CompareRuns).
//
// A password in -url (http://user:pass@host/v1) and the API key are sent
// to the server and appear in no output, log or file: the results keep
// the URL with "xxxxx" for its password, and -resume asks for the URL
// again. Text from the server is printed without its control characters.
//
// The exit status is 0 when the run measured something, 1 when it failed
// or no cell could be measured, and 2 for flags that cannot work.
//
// The client runs on [loadgen.StreamTransport] (one goroutine a stream, and
// on Linux every chunk timed by the kernel's receive timestamp); -transport
// http uses net/http's transport instead, which honours HTTP_PROXY.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/cli"
	"github.com/llmload/llmload/internal/live"
	"github.com/llmload/llmload/internal/redact"
	"github.com/llmload/llmload/internal/requestlog"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/metrics"
)

// DefaultSpeed is the simulator's speed factor when none is given: fast
// enough that the seed's matrix runs in a few minutes, slow enough that the
// simulator keeps its schedule on a small machine.
const DefaultSpeed = 20

func main() { cli.Main(run, "stopping the run, keeping whatever it finished") }

// options are the command's flags.
type options struct {
	spec                 matrix.Spec
	keyEnv, profile, out string
	results, resume      string
	requestsOut          string
	metricsListen        string
	transport, render    string
	format               matrix.Format
	speed                float64
	simReasoning         int
	headers              cli.Headers
	compare              bool
	overwrite            bool
	quiet                bool
	shards               shardFlags
	// set holds the names of the flags given on the command line.
	set map[string]bool
}

func parse(args []string, stderr io.Writer) (*options, []string, error) {
	o := &options{}
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.spec.URL, "url", "", "base URL of the server's API, e.g. http://127.0.0.1:8000/v1 (empty: the built-in simulator)")
	fs.StringVar(&o.spec.Model, "model", "", "served model name")
	api := fs.String("api", "chat", "chat, completions, responses (OpenAI's Responses API) or messages (Anthropic's Messages API)")
	fs.StringVar(&o.keyEnv, "api-key-env", "", "name of the environment variable holding the API key")
	fs.Var(&o.headers, "header", "'Name: value' added to every generation request (repeatable); a credential's (Authorization, *key*, *token*) goes to -url's origin only and is never printed or saved")
	contexts := fs.String("contexts", "0,16K,32K,64K,128K,248K", "context lengths, the grid's rows (K = 1024)")
	conc := fs.String("concurrency", "1,2,4,8,16,32,64,128", "requests at once, the grid's columns")
	prefill := fs.String("prefill", "8K,16K,32K,64K,128K", "prefill contexts ('' skips the prefill table)")
	def := matrix.Spec{}.WithDefaults()
	fs.IntVar(&o.spec.PrefillRepeat, "prefill-repeat", def.PrefillRepeat, "cold requests that measure each prefill row (their median, and a range to compare)")
	dur := fs.Duration("duration", time.Duration(def.Duration), "measurement window of each cell")
	fs.IntVar(&o.spec.MaxTokens, "max-tokens", def.MaxTokens, "max output tokens per request")
	warmMin := fs.Duration("warmup-min", time.Duration(def.Warmup.Min), "least warm-up of a cell")
	warmFlow := fs.Duration("warmup-flow", time.Duration(def.Warmup.Flow), "how long tokens must flow from every stream before the window")
	warmTimeout := fs.Duration("warmup-timeout", time.Duration(def.Warmup.Timeout), "warm-up timeout, plus -warmup-per-k per 1,024 tokens of context")
	warmPerK := fs.Duration("warmup-per-k", time.Duration(def.Warmup.PerContextK), "warm-up timeout added per 1,024 tokens of context")
	sloTTFT := fs.Duration("slo-ttft", 0, "SLO on time to first token, for goodput (0: none)")
	sloTPOT := fs.Duration("slo-tpot", 0, "SLO on time per output token, for goodput (0: none)")
	sloLatency := fs.Duration("slo-latency", 0, "SLO on end-to-end latency, for goodput (0: none)")
	fs.Float64Var(&o.spec.ErrorThreshold, "error-threshold", def.ErrorThreshold, "share of failed requests above which a cell is Failed")
	kv := fs.Int("kv-tokens", 0, "KV-cache capacity in tokens, if the server does not publish it (e.g. from its start-up log)")
	maxSeqs := fs.Int("max-num-seqs", 0, "the server's max running requests, if known")
	maxLen := fs.Int("max-model-len", 0, "the server's max_model_len, if it does not publish it")
	fs.BoolVar(&o.spec.SkipQueued, "skip-queued", false, "do not measure the cells predicted to queue (more requests than -max-num-seqs or the server's own limit)")
	fs.Float64Var(&o.speed, "speed", DefaultSpeed, "the simulator's speed factor (only without -url)")
	fs.StringVar(&o.profile, "profile", "seed", "the simulator's profile (only without -url)")
	fs.IntVar(&o.simReasoning, "sim-reasoning", 0, "the simulator's reasoning tokens before each answer, as a reasoning model's (only without -url)")
	fs.StringVar(&o.out, "o", "", "write the report to this file instead of standard output")
	format := fs.String("format", matrix.FormatTable.String(), "report format: table, markdown, csv, json or html")
	fs.StringVar(&o.results, "results", "", "save the results as JSON here after every cell (default matrix-results-TIME.json)")
	fs.StringVar(&o.resume, "resume", "", "continue the interrupted run saved in this file")
	fs.StringVar(&o.metricsListen, "metrics-listen", "", "serve the client's own metrics for Prometheus at http://ADDR/metrics while the matrix runs (requests in flight, tokens, TTFT and time between tokens, errors by kind, labelled by cell), e.g. :9464")
	fs.BoolVar(&o.overwrite, "overwrite", false, "replace an existing -results file of another run")
	fs.StringVar(&o.requestsOut, "requests-out", "", "write every request of the cells' streams, as it ends, to this file: a line of JSON each, with its cell, times, tokens, outcome and the server's timings (added to with -resume)")
	fs.BoolVar(&o.compare, "compare", false, "compare two result files given as arguments, -compare A.json B.json, or repeated runs of each, -compare A1.json,A2.json B1.json,B2.json")
	fs.StringVar(&o.render, "render", "", "render this results file in -format (to -o), changing nothing in it, and exit")
	fs.BoolVar(&o.quiet, "quiet", false, "print only the report")
	fs.StringVar(&o.transport, "transport", "stream", "the client's HTTP transport: stream (loadgen.StreamTransport: kernel receive timestamps on Linux) or http (net/http's: honours HTTP_PROXY)")
	o.shards.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	var err error
	if err = o.spec.API.UnmarshalText([]byte(*api)); err != nil {
		return nil, nil, err
	}
	if err = o.format.UnmarshalText([]byte(*format)); err != nil {
		return nil, nil, err
	}
	if o.spec.Contexts, err = capacity.ParseTokenList(*contexts); err != nil {
		return nil, nil, fmt.Errorf("-contexts: %w", err)
	}
	if o.spec.Concurrency, err = capacity.ParseTokenList(*conc); err != nil {
		return nil, nil, fmt.Errorf("-concurrency: %w", err)
	}
	if o.spec.Prefill, err = capacity.ParseTokenList(*prefill); err != nil {
		return nil, nil, fmt.Errorf("-prefill: %w", err)
	}
	o.spec.Duration = matrix.Duration(*dur)
	o.spec.Warmup = &matrix.Warmup{Min: matrix.Duration(*warmMin), Flow: matrix.Duration(*warmFlow),
		Timeout: matrix.Duration(*warmTimeout), PerContextK: matrix.Duration(*warmPerK)}
	if *sloTTFT > 0 || *sloTPOT > 0 || *sloLatency > 0 {
		o.spec.SLO = &metrics.SLO{TTFT: *sloTTFT, TPOT: *sloTPOT, Latency: *sloLatency}
	}
	if *kv > 0 || *maxSeqs > 0 || *maxLen > 0 {
		o.spec.Limits = &capacity.Limits{KVTokens: *kv, MaxRunning: *maxSeqs, MaxModelLen: *maxLen, Source: "flags"}
	}
	if o.transport != "stream" && o.transport != "http" {
		return nil, nil, fmt.Errorf("unknown -transport %q (want stream or http)", o.transport)
	}
	if !(o.speed > 0 && o.speed <= maxSpeed) {
		return nil, nil, fmt.Errorf("-speed %g: the simulator's speed factor must be above 0 and at most %d", o.speed, maxSpeed)
	}
	if *dur <= 0 && o.set["duration"] {
		return nil, nil, fmt.Errorf("-duration %v: the window must be longer than 0", *dur)
	}
	if o.spec.MaxTokens <= 0 && o.set["max-tokens"] {
		return nil, nil, fmt.Errorf("-max-tokens %d: a request must generate at least one token", o.spec.MaxTokens)
	}
	if *kv < 0 || *maxSeqs < 0 || *maxLen < 0 {
		return nil, nil, errors.New("-kv-tokens, -max-num-seqs and -max-model-len cannot be negative")
	}
	if o.spec.ErrorThreshold == 0 && o.set["error-threshold"] {
		return nil, nil, errors.New("-error-threshold 0 would fail a cell for one broken request; give a share above 0 and at most 1")
	}
	// The spec as the run will check it, with a stand-in for the
	// simulator's URL: refused here, before anything starts.
	check := o.spec
	if check.URL == "" {
		check.URL = "http://127.0.0.1/v1"
	}
	if err := o.shards.checkConcurrency(&check); err != nil {
		return nil, nil, err
	}
	if err := check.WithDefaults().Validate(); err != nil {
		return nil, nil, asFlags(err)
	}
	if o.render != "" && o.compare {
		return nil, nil, errors.New("-render and -compare do not go together")
	}
	if err := o.shards.check(o); err != nil {
		return nil, nil, err
	}
	return o, fs.Args(), nil
}

// maxSpeed bounds -speed: beyond it the simulator's schedule is shorter
// than the machine's timer resolution.
const maxSpeed = 1000

// httpClient returns a client on the transport -transport names, sized for
// the largest concurrency of the spec.
func (o *options) httpClient() *http.Client {
	conns := slices.Max(append([]int{1}, o.spec.Concurrency...)) + 4 // and /metrics, /tokenize, the scout
	if o.transport == "http" {
		return &http.Client{Transport: loadgen.NewTransport(conns)}
	}
	return &http.Client{Transport: loadgen.NewStreamTransport(conns)}
}

// fail prints err on stderr as one line, without control characters.
func fail(stderr io.Writer, err error) {
	fmt.Fprintln(stderr, "matrix:", textsafe.Line(strings.TrimPrefix(err.Error(), "matrix: ")))
}

// specFlags are the flags that set each field of matrix.Spec.
var specFlags = map[string]string{
	"URL": "-url", "Contexts": "-contexts", "Concurrency": "-concurrency", "Prefill": "-prefill", "PrefillRepeat": "-prefill-repeat",
	"Duration": "-duration", "MaxTokens": "-max-tokens", "ErrorThreshold": "-error-threshold",
	"Warmup.Min": "-warmup-min", "Warmup.Flow": "-warmup-flow", "Warmup.Timeout": "-warmup-timeout",
	"Warmup.PerContextK": "-warmup-per-k", "SLO": "-slo-ttft, -slo-tpot or -slo-latency",
}

// asFlags words a spec's errors by the flags the user typed rather than
// the library's field names; an error it cannot word so is returned as it
// is.
func asFlags(err error) error {
	errs := []error{err}
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		errs = u.Unwrap()
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		se, ok := errors.AsType[*matrix.SpecError](e)
		if !ok || specFlags[se.Field] == "" {
			return err
		}
		msgs[i] = specFlags[se.Field] + " " + se.Reason
	}
	return errors.New(strings.Join(msgs, "; "))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, rest, err := parse(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fail(stderr, err)
		}
		return 2
	}
	if o.compare {
		return compare(rest, o, stdout, stderr)
	}
	if o.render != "" {
		return render(o, stdout, stderr)
	}
	if o.shards.follows() {
		return follow(ctx, o, stderr)
	}

	var resume *matrix.Results
	if o.resume != "" {
		if resume, err = matrix.LoadFile(o.resume); err != nil {
			fail(stderr, err)
			return 1
		}
		if err := o.checkResume(o.spec, resume); err != nil {
			fail(stderr, err)
			return 2
		}
		if err := o.resumeSpec(resume); err != nil {
			fail(stderr, err)
			return 2
		}
		if o.results == "" {
			o.results = o.resume
		}
	}
	if o.results == "" {
		o.results = "matrix-results-" + time.Now().Format("20060102-150405") + ".json"
	}
	if o.out != "" && o.format != matrix.FormatJSON && sameFile(o.out, o.results) {
		fail(stderr, fmt.Errorf("-o %s is the results file; write the %s report elsewhere", o.out, o.format))
		return 2
	}
	unlock, err := o.claimResults()
	if err != nil {
		fail(stderr, err)
		return 2
	}
	defer unlock()

	runner := &matrix.Runner{Spec: o.spec, Resume: resume}
	if o.spec.URL == "" || (resume != nil && resume.Server.Simulated) {
		srv, err := simulator(o)
		if err != nil {
			fail(stderr, err)
			return 2
		}
		defer srv.Close()
		runner.Spec.URL = srv.URL + "/v1"
		runner.Spec.Model = srv.Handler.Profile().Model
		if resume != nil {
			// A resumed simulated run gets a new simulator; its URL differs.
			resume.Spec.URL, resume.Spec.Model = runner.Spec.URL, runner.Spec.Model
		}
		runner.Client = &loadgen.Client{HTTPClient: o.httpClient()}
		if resume == nil {
			runner.Spec = runner.Spec.AtSpeed(o.speed) // a resumed run's spec is already
		}
		runner.Server = matrix.Server{Engine: "vllm", Simulated: true, Speed: o.speed, Profile: o.profile,
			Notes: []string{fmt.Sprintf("llmload's simulated server, profile %q, at %g× speed", o.profile, o.speed)}}
	} else {
		c := &loadgen.Client{HTTPClient: o.httpClient()}
		if o.keyEnv != "" {
			if c.APIKey = os.Getenv(o.keyEnv); c.APIKey == "" {
				fmt.Fprintf(stderr, "matrix: environment variable %s is empty\n", o.keyEnv)
				return 2
			}
		}
		runner.Client = c
	}
	runner.Client.Header = o.headers.Header()
	defer runner.Client.CloseIdleConnections()
	saveDelay, _ := time.ParseDuration(os.Getenv("LLMLOAD_SAVE_DELAY")) // for the interruption tests
	saved := false                                                      // the results file holds this run's results
	runner.Save = func(r *matrix.Results) error {
		time.Sleep(saveDelay)
		if runner.Server.Simulated {
			r = withPublicURL(r)
		}
		if err := matrix.SaveFile(o.results, r); err != nil {
			return err
		}
		saved = true
		return nil
	}
	if !o.quiet {
		runner.OnPlan = func(r *matrix.Results) { writeHints(stderr, r) }
		runner.Log = stderr
		if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			runner.Progress = stderr
		}
		if runner.Server.Simulated {
			what := "the matrix"
			if !o.set["contexts"] && !o.set["concurrency"] && !o.set["prefill"] && resume == nil {
				what = "the seed's matrix"
			}
			fmt.Fprintf(stderr, "Running %s against llmload's simulated server (profile %q) at %g× speed; the reports speak in the simulated server's own time, the log and the results file in wall time.\n", what, o.profile, o.speed)
		}
	}

	var lm *live.Metrics
	if o.metricsListen != "" {
		log := io.Writer(stderr)
		if o.quiet {
			log = io.Discard
		}
		if lm, err = live.Start(ctx, o.metricsListen, "", log); err != nil {
			fail(stderr, fmt.Errorf("-metrics-listen: %w", err))
			return 2
		}
		runner.OnCell = func(contextTokens, streams int, g *loadgen.Generator) { lm.Track(cellName(contextTokens, streams), g) }
		runner.OnRequest = func(contextTokens, streams int, _ metrics.Window, _ *loadgen.Request, tl *metrics.Timeline) {
			lm.Observe(cellName(contextTokens, streams), tl)
		}
	}
	closeRequests := func() error { return nil }
	if o.requestsOut != "" {
		requests, err := openRequests(o.requestsOut, resume != nil)
		if err != nil {
			fail(stderr, fmt.Errorf("-requests-out: %w", err))
			return 2
		}
		defer requests.Close() // on an early return; closing twice is harmless
		closeRequests = requests.Close
		runner.OnRequest = func(contextTokens, streams int, w metrics.Window, req *loadgen.Request, tl *metrics.Timeline) {
			name := cellName(contextTokens, streams)
			requests.Write(name, w, req, tl)
			if lm != nil {
				lm.Observe(name, tl)
			}
		}
	}
	endFleet := func() {}
	if o.shards.leads() {
		if endFleet, err = lead(o, runner, stderr); err != nil {
			fail(stderr, err)
			return 2
		}
	}
	res, err := runner.Run(ctx)
	endFleet()
	if cerr := closeRequests(); cerr != nil {
		fail(stderr, fmt.Errorf("-requests-out: %w", cerr))
		if err == nil {
			err = errors.New("the requests were not all written")
		}
	}
	if res != nil && runner.Server.Simulated {
		res = withPublicURL(res)
	}
	if res != nil {
		if werr := write(res, o, stdout); werr != nil {
			fail(stderr, werr)
			return 1
		}
	}
	// The file holds results when this run saved them, or when it is the
	// one this run resumed.
	onDisk := saved || (resume != nil && sameFile(o.results, o.resume))
	if saved {
		fmt.Fprintf(stderr, "results saved to %s\n", o.results)
	}
	if err != nil {
		fail(stderr, err)
		switch {
		case res != nil && !res.Complete && onDisk:
			fmt.Fprintf(stderr, "matrix: finish it with: go run ./examples/matrix -resume %s\n", o.results)
		case !onDisk:
			fmt.Fprintln(stderr, "matrix: nothing was saved")
		}
		return 1
	}
	if err := res.Measured(); err != nil {
		fail(stderr, fmt.Errorf("%w: see the notes above", err))
		return 1
	}
	return 0
}

// cellName labels a cell's requests and metrics: "16K × 8".
func cellName(contextTokens, streams int) string {
	return fmt.Sprintf("%s × %d", matrix.FormatTokens(contextTokens), streams)
}

// openRequests opens the -requests-out file: a new one, or, for a run
// resumed, the one its first part wrote to.
func openRequests(path string, resumed bool) (*requestlog.Writer, error) {
	if resumed {
		return requestlog.Append(path)
	}
	return requestlog.Create(path)
}

// resumeSpec takes the spec, and the simulator's speed and profile, of
// the run being resumed. Its URL's password was not saved: a run against
// a URL with one needs -url again.
func (o *options) resumeSpec(r *matrix.Results) error {
	given := o.spec.URL
	o.spec = r.Spec
	if r.Server.Simulated {
		speed := r.Server.Speed
		if speed == 0 {
			speed = 1 // saved runs at speed 1 omit it
		}
		if o.set["speed"] && o.speed != speed {
			return fmt.Errorf("-resume keeps the run's speed (%g×); drop -speed %g", speed, o.speed)
		}
		o.speed = speed
		if r.Server.Profile != "" {
			if o.set["profile"] && o.profile != r.Server.Profile {
				return fmt.Errorf("-resume keeps the run's profile (%q); drop -profile %s", r.Server.Profile, o.profile)
			}
			o.profile = r.Server.Profile
		}
		return nil
	}
	u, err := redact.Restore(r.Spec.URL, given)
	switch {
	case errors.Is(err, redact.ErrPasswordNeeded):
		return fmt.Errorf("the run's URL had a password, which was not saved: give it again with -url (%s)", r.Spec.URL)
	case err != nil:
		return fmt.Errorf("-url %s is not the URL of the run being resumed (%s)", redact.URL(given), r.Spec.URL)
	}
	o.spec.URL = u
	return nil
}

// sameFile reports whether two paths name the same file.
func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// render writes the results file -render names in -format, changing
// nothing in it.
func render(o *options, stdout, stderr io.Writer) int {
	if o.out != "" && sameFile(o.out, o.render) {
		fail(stderr, fmt.Errorf("-o %s is the file being rendered; -render never writes it", o.out))
		return 2
	}
	r, err := matrix.LoadFile(o.render)
	if err != nil {
		fail(stderr, err)
		return 1
	}
	// A file written before passwords were redacted may hold one.
	r.Spec.URL, r.Server.URL = redact.URL(r.Spec.URL), redact.URL(r.Server.URL)
	if err := write(r, o, stdout); err != nil {
		fail(stderr, err)
		return 1
	}
	return 0
}

// hints say, for each limit, the flag that gives it and what it means for
// the plan.
var hints = map[capacity.LimitName]struct{ flag, what, plan string }{
	capacity.LimitMaxRunning:  {"-max-num-seqs", "the requests it runs at once", "beyond it cells are predicted to queue"},
	capacity.LimitKVTokens:    {"-kv-tokens", "its KV cache", ""},
	capacity.LimitMaxModelLen: {"-max-model-len", "its context length", "longer rows are predicted over capacity"},
}

// writeHints says, before a run, which flags would make its plan exact:
// the limits the server did not publish and the user did not give.
func writeHints(w io.Writer, r *matrix.Results) {
	if r.Server.Simulated {
		return // the simulator's limits are its profile's
	}
	var engine capacity.Engine
	_ = engine.UnmarshalText([]byte(r.Server.Engine))
	gaps := r.Server.Limits.Gaps(engine)
	if len(gaps) == 0 {
		return
	}
	name := r.Server.Engine
	if name == "" {
		name = "the server"
	}
	fmt.Fprintf(w, "%s did not publish every limit; to make the plan exact, pass:\n", name)
	for _, g := range gaps {
		h := hints[g.Limit]
		s := h.what
		switch {
		case g.FollowsFrom != "":
			s = "or " + hints[g.FollowsFrom].flag + ": " + g.Where
		case g.Where != "":
			s += ", " + g.Where
		}
		if h.plan != "" {
			s += "; " + h.plan
		}
		fmt.Fprintf(w, "  %s N (%s)\n", h.flag, s)
	}
}

// simulator starts the built-in simulated server.
func simulator(o *options) (*loadgentest.Server, error) {
	p, err := loadgentest.ProfileByName(o.profile)
	if err != nil {
		return nil, err
	}
	if o.speed <= 0 {
		return nil, fmt.Errorf("-speed must be positive, not %g", o.speed)
	}
	if o.simReasoning < 0 {
		return nil, fmt.Errorf("-sim-reasoning holds %d, below 0", o.simReasoning)
	}
	p.Speed = o.speed
	p.TruthBytes = -1
	p.ReasoningTokens = o.simReasoning
	return loadgentest.NewServer(p), nil
}

// withPublicURL replaces the simulator's ephemeral loopback URL, which means
// nothing after the run, with a name.
func withPublicURL(r *matrix.Results) *matrix.Results {
	c := *r
	c.Spec.URL = "simulator"
	c.Server.URL = "simulator"
	return &c
}

// write writes a report in -format to -o, or to stdout.
func write(rep matrix.Report, o *options, stdout io.Writer) error {
	if o.out == "" {
		return o.format.Write(stdout, rep)
	}
	f, err := os.Create(o.out)
	if err != nil {
		return err
	}
	err = o.format.Write(f, rep)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func compare(files []string, o *options, stdout, stderr io.Writer) int {
	if len(files) != 2 {
		fmt.Fprintln(stderr, "matrix: -compare needs two result files, or two comma-separated lists of repeated runs: -compare A.json B.json")
		return 2
	}
	var sides [2][]*matrix.Results
	for i, list := range files {
		for _, name := range strings.Split(list, ",") {
			if name == "" {
				continue
			}
			r, err := matrix.LoadFile(name)
			if err != nil {
				fail(stderr, err)
				return 1
			}
			sides[i] = append(sides[i], r)
		}
	}
	if err := write(matrix.CompareRuns(sides[0], sides[1]), o, stdout); err != nil {
		fail(stderr, err)
		return 1
	}
	return 0
}
