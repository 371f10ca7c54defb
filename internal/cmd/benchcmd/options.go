package benchcmd

import (
	"flag"
	"fmt"
	"io"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/cmd/cli"
)

// defaultSpeed is the simulator's speed factor when none is given.
const defaultSpeed = 10

// Options are the command's flags: the client's, the request body's, the
// images', the benchmark's ([Flags]), the simulator's, the GPUs' and the
// outputs'.
type Options struct {
	Client                     cli.ClientFlags
	Body                       cli.BodyFlags
	Images                     cli.ImageFlags
	Bench                      Flags
	Sim                        cli.SimFlags
	GPU                        cli.GPUFlags
	Format, Out                string
	RequestsOut, MetricsListen string
	ServerTimings, Quiet       bool
	Overwrite                  bool
	serverTimingsSet           bool // -server-timings was given, true or false
	extra                      map[string]any
}

// Parse parses the command's arguments, and refuses, before anything
// runs, flags that cannot work together and outputs that would destroy a
// file.
func Parse(args []string, stderr io.Writer) (*Options, error) {
	o := &Options{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.Client.Register(fs, "")
	o.Body.Register(fs)
	o.Images.Register(fs)
	o.Bench.Register(fs)
	fs.StringVar(&o.Format, "format", "table", "report format: table, json, html, or series-csv (each run's time series)")
	fs.StringVar(&o.Out, "o", "", "write the report to this file instead of standard output")
	fs.BoolVar(&o.ServerTimings, "server-timings", false, "ask the server for its own timings of each request (include_metrics: vLLM with --enable-per-request-metrics) and split TTFT into its queue, its prefill and the rest; on unless set to false with the simulator and a server identified as vLLM")
	fs.StringVar(&o.MetricsListen, "metrics-listen", "", "serve the client's own metrics for Prometheus at http://ADDR/metrics while the runs go on (requests in flight, tokens, TTFT and time between tokens, errors by kind, labelled by run), e.g. :9464")
	fs.StringVar(&o.RequestsOut, "requests-out", "", "write every request, as it ends, to this file: a line of JSON each, with its run, times, tokens, outcome and the server's timings")
	fs.BoolVar(&o.Overwrite, "overwrite", false, "replace an existing -requests-out file")
	o.Sim.Register(fs, "sim-profile", defaultSpeed)
	o.GPU.Register(fs)
	fs.BoolVar(&o.Quiet, "quiet", false, "print only the report")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.Client.WarnShortSecrets(stderr)
	fs.Visit(func(f *flag.Flag) { o.serverTimingsSet = o.serverTimingsSet || f.Name == "server-timings" })
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q: every setting is a flag", fs.Args())
	}
	if err := o.Bench.Parse(fs); err != nil {
		return nil, err
	}
	return o, o.check()
}

// check refuses the flags that cannot work, each with the others.
func (o *Options) check() error {
	switch o.Format {
	case "table", "json", "html", "series-csv":
	default:
		return fmt.Errorf("unknown -format %q (want table, json, html or series-csv)", o.Format)
	}
	if err := o.Client.Check(); err != nil {
		return err
	}
	if err := o.checkFiles(); err != nil {
		return err
	}
	if err := o.Bench.CheckAPI(o.Client.API); err != nil {
		return err
	}
	var err error
	if o.extra, err = o.Body.Extra(o.Client.API); err != nil {
		return err
	}
	if err := o.Images.Check(o.Client.API); err != nil {
		return err
	}
	if err := o.GPU.Check(o.Client.URL); err != nil {
		return err
	}
	return o.Sim.Check()
}

// checkFiles refuses, before anything is read or run, outputs that
// would destroy a file: -o or -requests-out the same file as an input
// or as each other, at a symbolic link, a named pipe or a device, and an
// existing -requests-out without -overwrite. -o replaces an existing
// report, whole.
func (o *Options) checkFiles() error {
	outputs := []cli.FileFlag{{Name: "o", Path: o.Out}, {Name: "requests-out", Path: o.RequestsOut}}
	if err := cli.Distinct(outputs, append(o.Bench.Files(), o.Body.Files()...)...); err != nil {
		return err
	}
	if err := cli.CheckOutput("o", o.Out, true); err != nil {
		return err
	}
	return cli.CheckOutput("requests-out", o.RequestsOut, o.Overwrite)
}

// askServerTimings reports whether the requests ask server s for its own
// timings: as -server-timings says when it was given, otherwise for the
// simulator and a server identified as vLLM, which send them.
func (o *Options) askServerTimings(s capacity.Server) bool {
	if o.serverTimingsSet {
		return o.ServerTimings
	}
	return s.Simulated || s.Engine == capacity.EngineVLLM
}
