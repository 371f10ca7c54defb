// Command soak keeps many concurrent streams open against an
// OpenAI-compatible server for a long time and reports, every interval, the
// memory, goroutines and throughput of the client process, and of the
// simulator when it runs one, so that a leak or a slowdown in llmload shows
// as a trend. By default it keeps 10,000 streams against llmload's simulator
// for 10 minutes:
//
//	go run ./internal/harness/soak
//	go run ./internal/harness/soak -streams 1000 -duration 2m -interval 5s
//	go run ./internal/harness/soak -url http://127.0.0.1:8000/v1 -json > soak.jsonl
//
// The load is a closed-loop [loadgen.Generator]: -streams workers, started
// evenly over -ramp, each keeping one long completions request in flight
// (-max-tokens tokens with ignore_eos) and sending another as soon as one
// ends. Its live counters come from [loadgen.Generator.Progress]. The
// client's transport is [loadgen.StreamTransport] (one goroutine a stream);
// -transport http compares net/http's (three).
//
// Without -url, soak starts the simulator ([loadgentest.FastProfile]: 10 ms
// per decode step whatever the batch, so 100 tokens/s per stream at -speed 1,
// and room for 16,384 running requests) in a child process: the same binary,
// run with a hidden -serve flag. A client and a server in one process would
// need two file descriptors per stream. The child is stopped at the end, and
// on Linux it is also killed if soak dies.
//
// Every interval, soak prints the elapsed time; the resident set size (RSS),
// Go heap in use and goroutines of each process, and their CPU use in cores;
// the streams in flight and those that have their first token; tokens/s over
// the interval and since the start; and failed requests by kind. At the end
// it prints RSS at 10%, 50% and 100% of the run (1, 5 and 10 minutes by
// default) and whether RSS stayed flat after warm-up: whether it grew by less
// than 10% over the second half of the run (report.go says why the second
// half). With -json, every report is one JSON object per line; -memprofile
// writes heap profiles of both processes before the load stops.
//
// Both processes raise their soft open-file limit to the hard limit at start;
// soak refuses to start if that is below -streams plus a margin, or if the
// ephemeral port range is too small for -streams connections.
//
// The exit status is 0 when the run completed with no failed request and,
// for runs long enough to judge, flat RSS; 1 otherwise; 2 for bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/cmd/cli"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

func main() { cli.Main(run, "stopping the soak and reporting what it measured") }

// Defaults of the flags.
const (
	defaultStreams   = 10_000
	defaultDuration  = 10 * time.Minute
	defaultInterval  = 10 * time.Second
	defaultRamp      = 20 * time.Second
	defaultMaxTokens = 2048 // 20 s at 100 tokens/s: each stream is re-sent about 30 times in 10 minutes
)

// fdMargin is the number of file descriptors a process needs besides one
// per stream: the listener, the stats connection, pipes, the binary, /proc.
const fdMargin = 100

// config is what the flags set.
type config struct {
	Streams   int           `json:"streams"`
	Duration  time.Duration `json:"duration"`
	Interval  time.Duration `json:"interval"`
	Ramp      time.Duration `json:"ramp"`
	URL       string        `json:"url,omitempty"`
	Model     string        `json:"model,omitempty"`
	Speed     float64       `json:"speed"`
	MaxTokens int           `json:"max_tokens"`
	Transport string        `json:"transport"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.IntVar(&cfg.Streams, "streams", defaultStreams, "concurrent streams to keep in flight")
	fs.DurationVar(&cfg.Duration, "duration", defaultDuration, "how long to keep them")
	fs.DurationVar(&cfg.Interval, "interval", defaultInterval, "time between reports")
	fs.DurationVar(&cfg.Ramp, "ramp", defaultRamp, "time over which the streams start, evenly spread")
	fs.StringVar(&cfg.URL, "url", "", "base URL of an OpenAI-compatible API, such as http://127.0.0.1:8000/v1 (empty: start the simulator in a child process)")
	fs.StringVar(&cfg.Model, "model", "", "model name to send (empty: none; the simulator serves any request without one)")
	fs.Float64Var(&cfg.Speed, "speed", 1, "simulator speed factor: 10 runs it ten times faster than real time")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", defaultMaxTokens, "max_tokens of each request (sent with ignore_eos)")
	fs.StringVar(&cfg.Transport, "transport", "stream", "the client's HTTP transport: stream (loadgen.StreamTransport, one goroutine a stream) or http (net/http's, three)")
	asJSON := fs.Bool("json", false, "print one JSON object per report line instead of text")
	memProfile := fs.String("memprofile", "", "write heap profiles of the client (FILE) and the simulator (FILE.sim) at the end, before the load stops")
	serve := fs.String("serve", "", "run only the simulator, listening on `ADDR`, and print its address (soak starts its child this way)")
	fs.Usage = func() { usage(fs) }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "soak: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if cfg.Speed <= 0 {
		fmt.Fprintf(stderr, "soak: -speed must be positive, got %g\n", cfg.Speed)
		return 2
	}
	if *serve != "" {
		return serveSimulator(ctx, *serve, cfg.Speed, stdout, stderr)
	}
	if cfg.Transport != "stream" && cfg.Transport != "http" {
		fmt.Fprintf(stderr, "soak: -transport must be stream or http, got %q\n", cfg.Transport)
		return 2
	}
	if cfg.Streams < 1 || cfg.Duration <= 0 || cfg.Interval <= 0 || cfg.Ramp < 0 || cfg.MaxTokens < 1 {
		fmt.Fprintln(stderr, "soak: -streams, -duration, -interval and -max-tokens must be positive, -ramp not negative")
		return 2
	}
	if err := checkLimits(cfg.Streams); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	var rep reporter = &textReporter{w: stdout}
	if *asJSON {
		rep = &jsonReporter{w: stdout}
	}
	s := &soak{cfg: cfg, rep: rep, stderr: stderr, memProfile: *memProfile}
	return s.run(ctx)
}

// usage prints the flags, leaving out -serve, which soak passes to itself.
func usage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprintln(w, "Usage: soak [flags]")
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "serve" {
			return
		}
		name, help := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  -%s %s\n    \t%s (default %q)\n", f.Name, name, help, f.DefValue)
	})
}

// checkLimits raises this process's open-file limit and checks that it, and
// the ephemeral port range, leave room for streams connections.
func checkLimits(streams int) error {
	need := streams + fdMargin
	soft, hard, err := raiseFileLimit()
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	if soft > 0 && soft < uint64(need) {
		return fmt.Errorf("soak: the open-file limit is %d (hard limit %d), below the %d that %d streams need "+
			"(one descriptor per stream in the client, and in the simulator, plus %d); raise the hard limit or run fewer -streams",
			soft, hard, need, streams, fdMargin)
	}
	if lo, hi, ok := ephemeralPorts(); ok && hi-lo+1 < need {
		return fmt.Errorf("soak: the ephemeral port range %d–%d holds %d ports, fewer than the %d that %d connections to one server need; "+
			"widen net.ipv4.ip_local_port_range or run fewer -streams", lo, hi, hi-lo+1, need, streams)
	}
	return nil
}

// fastStep is the decode step of loadgentest.FastProfile at speed 1: each
// running stream gets one token per step.
const fastStep = 10 * time.Millisecond

// errSoakDone ends the load once the last sample has been taken.
var errSoakDone = errors.New("soak: the soak is over")

// soak is one run.
type soak struct {
	cfg        config
	rep        reporter
	stderr     io.Writer
	memProfile string

	sim *simulator // nil with -url
}

func (s *soak) run(ctx context.Context) int {
	url := s.cfg.URL
	if url == "" {
		sim, err := startSimulator(ctx, s.cfg.Speed, s.stderr)
		if err != nil {
			fmt.Fprintln(s.stderr, err)
			return 1
		}
		defer sim.stop()
		s.sim = sim
		url = sim.url
	}
	var tr http.RoundTripper = loadgen.NewStreamTransport(s.cfg.Streams)
	if s.cfg.Transport == "http" {
		tr = loadgen.NewTransport(s.cfg.Streams)
	}
	hc := &http.Client{Transport: tr}
	defer hc.CloseIdleConnections()
	rec := &metrics.Recorder{}
	gen := &loadgen.Generator{
		Client: &loadgen.Client{BaseURL: url, HTTPClient: hc},
		Source: loadgen.Repeat(&loadgen.Request{
			API:       loadgen.Completions,
			Model:     s.cfg.Model,
			Prompt:    "Tell a story that never ends.",
			MaxTokens: s.cfg.MaxTokens,
			IgnoreEOS: true,
		}),
		Load: loadgen.Closed{Streams: s.cfg.Streams, Ramp: s.cfg.Ramp},
		// The soak ends the run itself, after its last sample (see drive):
		// the window's end is only a backstop.
		Duration: s.cfg.Duration + time.Minute,
		Recorder: rec,
	}

	s.rep.start(s.header())
	genCtx, stopGen := context.WithCancelCause(ctx)
	defer stopGen(nil)
	if s.sim != nil {
		stopAfter := context.AfterFunc(s.sim.exited, func() { stopGen(s.sim.exitError()) })
		defer stopAfter()
	}
	type result struct {
		run *loadgen.Run
		err error
	}
	done := make(chan result, 1)
	sampler := newSampler(s.sim, rec)
	sampler.take(gen.Progress()) // the baseline: nothing started yet
	go func() {
		r, err := gen.Run(genCtx)
		done <- result{r, err}
	}()
	samples := s.drive(genCtx, gen, sampler)
	if s.memProfile != "" && genCtx.Err() == nil {
		if err := s.writeProfiles(); err != nil {
			fmt.Fprintln(s.stderr, err)
		}
	}
	stopGen(errSoakDone)
	res := <-done

	f := s.final(samples, res.run, rec)
	code := 0
	switch {
	case res.err != nil && !errors.Is(res.err, errSoakDone):
		f.Stopped = res.err.Error()
		code = 1
	case f.Failed > 0:
		code = 1
	case f.Client.Flat != nil && !*f.Client.Flat, f.Simulator != nil && f.Simulator.Flat != nil && !*f.Simulator.Flat:
		code = 1
	}
	if s.sim != nil {
		// Stop the simulator now, so the report can say whether it exited
		// cleanly; the deferred stop is then a no-op.
		if err := s.sim.stop(); err != nil {
			f.SimulatorExit = err.Error()
		}
	}
	s.rep.final(f)
	return code
}

// drive takes a sample at every multiple of the interval until the duration
// has passed or ctx ends, reporting each, and returns them all. A sample
// that comes late (the machine is busy) does not bring the next ones closer:
// the ticks it missed are skipped. The last sample is taken at the duration,
// while the load is still on.
func (s *soak) drive(ctx context.Context, gen *loadgen.Generator, sm *sampler) []Sample {
	interval, end := s.cfg.Interval, s.cfg.Duration
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		at := min((time.Since(sm.start)/interval+1)*interval, end)
		t.Reset(time.Until(sm.start.Add(at)))
		select {
		case <-t.C:
		case <-ctx.Done():
			// A last sample, unless the previous one is just as fresh.
			if prev := sm.samples[len(sm.samples)-1]; time.Since(sm.start)-time.Duration(prev.Elapsed) >= interval/10 {
				s.rep.sample(sm.take(gen.Progress()))
			}
			return sm.samples
		}
		s.rep.sample(sm.take(gen.Progress()))
		if at >= end {
			return sm.samples
		}
	}
}

func (s *soak) header() Header {
	h := Header{Config: s.cfg, ClientPID: os.Getpid(), Server: s.cfg.URL}
	if s.sim != nil {
		h.SimulatorPID = s.sim.pid
		h.Server = s.sim.url + " (simulator, fast profile)"
	}
	return h
}

// final builds the final report.
func (s *soak) final(samples []Sample, r *loadgen.Run, rec *metrics.Recorder) Final {
	sum := rec.Recording(metrics.ScopeWindow).Summary
	f := Final{Samples: len(samples) - 1, Stopped: "duration"}
	if r != nil {
		f.Launched = r.Launched
		f.Health = &r.Health
	}
	f.Requests, f.Failed, f.Canceled = sum.Requests, sum.Failed, sum.Canceled
	f.Errors = sum.Errors
	last := samples[len(samples)-1]
	f.Elapsed = last.Elapsed
	f.Tokens = last.Tokens
	f.TokensPerSec = last.CumTokensPerSec
	f.Engine = last.Engine
	f.Client = judgeProcess(samples, s.cfg, func(x Sample) *Proc { return &x.Client })
	if s.sim != nil {
		sp := judgeProcess(samples, s.cfg, func(x Sample) *Proc { return x.Simulator })
		f.Simulator = &sp
		f.NominalTokensPerSec = float64(s.cfg.Streams) * s.cfg.Speed / fastStep.Seconds()
	}
	return f
}

// writeProfiles writes the heap profiles asked for by -memprofile.
func (s *soak) writeProfiles() error {
	if err := writeHeapProfile(s.memProfile); err != nil {
		return err
	}
	if s.sim != nil {
		return s.sim.heapProfile(s.memProfile + ".sim")
	}
	return nil
}

// fmtErrors formats failed requests by kind, "none" if there are none.
func fmtErrors(m map[metrics.ErrorKind]int) string {
	if len(m) == 0 {
		return "none"
	}
	var b strings.Builder
	for _, k := range metrics.Kinds() {
		if n := m[k]; n > 0 {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%s=%d", k, n)
		}
	}
	return b.String()
}
