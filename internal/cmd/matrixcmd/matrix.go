// Package matrixcmd is the speed-test matrix's command (examples/matrix)
// but its main: the flags that make a spec and a sharded run, the results
// file (claimed, saved, resumed), rendering and comparing saved results,
// the simulator and the observers of a run. What every command shares is
// package cli's.
package matrixcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/cmd/cli"
	"github.com/llmload/llmload/internal/cmd/live"
	"github.com/llmload/llmload/internal/cmd/requestlog"
	"github.com/llmload/llmload/internal/redact"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/report"
	"github.com/llmload/llmload/metrics"
)

// Usage is an error in what the user asked for, as against one met
// doing it: a command exits with status 2 for it.
type Usage struct{ Err error }

func (u Usage) Error() string { return u.Err.Error() }
func (u Usage) Unwrap() error { return u.Err }

// Render writes the results file at path in format to out (stdout when
// out is empty), changing nothing in it.
func Render(path, out string, format report.Format, stdout io.Writer) error {
	if out != "" && cli.SameFile(out, path) {
		return Usage{fmt.Errorf("-o %s is the file being rendered; -render never writes it", out)}
	}
	r, err := matrix.LoadFile(path)
	if err != nil {
		return err
	}
	// A file written before passwords were redacted may hold one.
	r.Spec.URL, r.Server.URL = redact.URL(r.Spec.URL), redact.URL(r.Server.URL)
	return cli.WriteOutput(out, stdout, func(w io.Writer) error { return report.Write(w, format, r) })
}

// Compare sets the runs of two results files side by side, or two
// comma-separated lists of repeated runs, and writes the comparison in
// format to out (stdout when out is empty).
func Compare(files []string, out string, format report.Format, stdout io.Writer) error {
	if len(files) != 2 {
		return Usage{errors.New("-compare needs two result files, or two comma-separated lists of repeated runs: -compare A.json B.json")}
	}
	var sides [2][]*matrix.Results
	for i, list := range files {
		for _, name := range strings.Split(list, ",") {
			if name == "" {
				continue
			}
			r, err := matrix.LoadFile(name)
			if err != nil {
				return err
			}
			sides[i] = append(sides[i], r)
		}
	}
	return cli.WriteOutput(out, stdout, func(w io.Writer) error { return report.Compare(sides[0], sides[1]).Write(w, format) })
}

// PublicURL returns r with the simulator's ephemeral loopback URL, which
// means nothing after the run, replaced with a name.
func PublicURL(r *matrix.Results) *matrix.Results {
	c := *r
	c.Spec.URL = "simulator"
	c.Server.URL = "simulator"
	return &c
}

// hints say, for each limit, the flag that gives it and what it means for
// the plan.
var hints = map[capacity.LimitName]struct{ flag, what, plan string }{
	capacity.LimitMaxRunning:  {"-max-num-seqs", "the requests it runs at once", "beyond it cells are predicted to queue"},
	capacity.LimitKVTokens:    {"-kv-tokens", "its KV cache", ""},
	capacity.LimitMaxModelLen: {"-max-model-len", "its context length", "longer rows are predicted over capacity"},
}

// WriteHints says, before a run, which flags would make its plan exact:
// the limits the server did not publish and the user did not give.
func WriteHints(w io.Writer, r *matrix.Results) {
	if r.Server.Simulated {
		return // the simulator's limits are its profile's
	}
	gaps := r.Server.Limits.Gaps(r.Server.Engine)
	if len(gaps) == 0 {
		return
	}
	name := string(r.Server.Engine)
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

// saveDelay slows every save of a [ResultsFile] by a duration, for the
// tests of an interruption during a save, which set it at build time:
// -ldflags "-X github.com/llmload/llmload/internal/cmd/matrixcmd.saveDelay=5s".
var saveDelay string

// A ResultsFile is the file a run's results are saved to after every
// cell, with the simulator's URL replaced by a name when Simulated.
type ResultsFile struct {
	Path      string
	Simulated bool
	// Saved reports whether the file holds this run's results.
	Saved bool
}

// Save saves r; it is a [matrix.Runner]'s Save.
func (f *ResultsFile) Save(r *matrix.Results) error {
	if d, err := time.ParseDuration(saveDelay); err == nil {
		time.Sleep(d)
	}
	if f.Simulated {
		r = PublicURL(r)
	}
	if err := matrix.SaveFile(f.Path, r); err != nil {
		return err
	}
	f.Saved = true
	return nil
}

// Resume returns the spec of the run r saved, to finish it, and sets sim
// to its simulator's speed and profile, refusing a -speed or -profile
// (in set, the flags given) that differs. The URL's password was not
// saved: a run against a URL with one needs it again in url (-url).
func Resume(r *matrix.Results, url string, sim *cli.SimFlags, set map[string]bool) (matrix.Spec, error) {
	spec := r.Spec
	if r.Server.Simulated {
		speed := r.Server.Speed
		if speed == 0 {
			speed = 1 // saved runs at speed 1 omit it
		}
		if set["speed"] && sim.Speed != speed {
			return spec, fmt.Errorf("-resume keeps the run's speed (%g×); drop -speed %g", speed, sim.Speed)
		}
		sim.Speed = speed
		if r.Server.Profile != "" {
			if set["profile"] && sim.Profile != r.Server.Profile {
				return spec, fmt.Errorf("-resume keeps the run's profile (%q); drop -profile %s", r.Server.Profile, sim.Profile)
			}
			sim.Profile = r.Server.Profile
		}
		return spec, nil
	}
	u, err := redact.Restore(r.Spec.URL, url)
	switch {
	case errors.Is(err, redact.ErrPasswordNeeded):
		return spec, fmt.Errorf("the run's URL had a password, which was not saved: give it again with -url (%s)", r.Spec.URL)
	case err != nil:
		return spec, fmt.Errorf("-url %s is not the URL of the run being resumed (%s)", redact.URL(url), r.Spec.URL)
	}
	spec.URL = u
	return spec, nil
}

// Simulate points runner at a new simulated server the flags f describe,
// for a run against no -url or the rest of a simulated one
// (runner.Resume), and returns what stops it. It says so on log (nil:
// nowhere), naming the matrix the seed's when seedGrid (the grid's flags
// were not given).
func Simulate(f *cli.SimFlags, runner *matrix.Runner, seedGrid bool, log io.Writer) (func(), error) {
	srv, err := f.Start()
	if err != nil {
		return nil, err
	}
	runner.Spec.URL = srv.URL + "/v1"
	runner.Spec.Model = srv.Handler.Profile().Model
	what := "the matrix"
	if r := runner.Resume; r != nil {
		// A resumed simulated run gets a new simulator; its URL differs.
		r.Spec.URL, r.Spec.Model = runner.Spec.URL, runner.Spec.Model
	} else {
		runner.Spec = runner.Spec.AtSpeed(f.Speed) // a resumed run's spec is already
		if seedGrid {
			what = "the seed's matrix"
		}
	}
	runner.Server = capacity.Server{Engine: "vllm", Simulated: true, Speed: f.Speed, Profile: f.Profile,
		Notes: []string{fmt.Sprintf("llmload's simulated server, profile %q, at %g× speed", f.Profile, f.Speed)}}
	if log != nil {
		fmt.Fprintf(log, "Running %s against llmload's simulated server (profile %q) at %g× speed; the reports speak in the simulated server's own time, the log and the results file in wall time.\n", what, f.Profile, f.Speed)
	}
	return srv.Close, nil
}

// Observe has runner write every request of its cells' streams, as it
// ends, to the file at requestsOut (added to, for a resumed run; an
// existing one replaced only when replace), and
// serve its metrics for Prometheus at metricsListen (saying where on
// log), each where given. It returns what closes the file: its error is
// the file's first.
func Observe(ctx context.Context, runner *matrix.Runner, requestsOut string, replace bool, metricsListen string, log io.Writer) (func() error, error) {
	var lm *live.Metrics
	var err error
	if metricsListen != "" {
		if lm, err = live.Start(ctx, metricsListen, "", log); err != nil {
			return nil, fmt.Errorf("-metrics-listen: %w", err)
		}
	}
	var requests *requestlog.Writer
	switch {
	case requestsOut != "" && runner.Resume != nil:
		requests, err = requestlog.Append(requestsOut) // where the run's first part wrote
	case requestsOut != "":
		requests, err = requestlog.Create(requestsOut, replace)
	}
	if err != nil {
		return nil, fmt.Errorf("-requests-out: %w", err)
	}
	if requests != nil || lm != nil {
		runner.OnCell = func(contextTokens, streams int, g *loadgen.Generator) {
			name := CellName(contextTokens, streams)
			if lm != nil {
				lm.Track(name, g)
			}
			g.OnRequest = func(req *loadgen.Request, tl *metrics.Timeline) {
				if requests != nil {
					requests.Write(name, g.Recorder.Window(), req, tl)
				}
				if lm != nil {
					lm.Observe(name, tl)
				}
			}
		}
	}
	return func() error {
		if requests == nil {
			return nil
		}
		return requests.Close()
	}, nil
}

// formats are the report formats -format takes, in the order its usage
// names them.
var formats = []report.Format{report.Table, report.Markdown, report.CSV, report.JSON, report.HTML, report.SeriesCSV}

// FormatVar defines -format: *f is report.Table unless the command line
// names another of the report formats; any other name is refused as the
// flags are parsed, before a run.
func FormatVar(fs *flag.FlagSet, f *report.Format, usage string) {
	*f = report.Table
	fs.Func("format", usage, func(s string) error {
		if g := report.Format(s); slices.Contains(formats, g) {
			*f = g
			return nil
		}
		names := make([]string, len(formats))
		for i, g := range formats {
			names[i] = string(g)
		}
		return fmt.Errorf("unknown format %q (want %s)", s, strings.Join(names, ", "))
	})
}
