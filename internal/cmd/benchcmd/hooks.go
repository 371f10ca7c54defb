package benchcmd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/llmload/llmload/internal/cmd/live"
	"github.com/llmload/llmload/internal/cmd/requestlog"
	"github.com/llmload/llmload/internal/dcgm"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/metrics"
)

// gpuEvery is how often -gpu-metrics are read.
const gpuEvery = time.Second

// Hooks are what the command adds to each run of a benchmark, set as its
// OnRun and OnResult: every request written to -requests-out and counted
// in -metrics-listen's metrics, the energy -gpu-metrics read in the
// run's window, and a line of progress.
type Hooks struct {
	ctx        context.Context
	requests   *requestlog.Writer
	lm         *live.Metrics
	gpus       *dcgm.Meter
	hourlyCost float64
	progress   func(sweep.Result)
	// Notes say what the energy of a run could not tell, in the order of
	// the runs.
	Notes []string
}

// Hooks creates -requests-out's file, serves -metrics-listen's metrics
// and reads -gpu-metrics, each where given, for the runs of s.
func (o *Options) Hooks(ctx context.Context, s *Setup, stderr io.Writer) (*Hooks, error) {
	log := io.Writer(stderr)
	if o.Quiet {
		log = io.Discard
	}
	h := &Hooks{ctx: ctx, hourlyCost: o.GPU.HourlyCost, progress: func(sweep.Result) {}}
	var err error
	if o.RequestsOut != "" {
		if h.requests, err = requestlog.Create(o.RequestsOut, o.Overwrite); err != nil {
			return nil, fmt.Errorf("-requests-out: %w", err)
		}
	}
	if o.MetricsListen != "" {
		if h.lm, err = live.Start(ctx, o.MetricsListen, "", log); err != nil {
			h.Close()
			return nil, fmt.Errorf("-metrics-listen: %w", err)
		}
	}
	if !o.Quiet {
		h.progress = progress(stderr, o.Client.API)
	}
	simBase := ""
	if o.Client.URL == "" {
		simBase = s.Client.BaseURL
	}
	if h.gpus, err = o.GPU.Meter(ctx, simBase, gpuEvery); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// OnRun writes each request of g's run to -requests-out as it ends and
// counts it in the live metrics, labelled by the run's load, and marks
// the run's window for the GPUs' energy.
func (h *Hooks) OnRun(load loadgen.Load, g *loadgen.Generator) {
	if h.gpus != nil {
		g.OnWindow = h.gpus.Mark
	}
	if h.requests == nil && h.lm == nil {
		return
	}
	if g.Recorder == nil {
		g.Recorder = &metrics.Recorder{}
	}
	rec, run := g.Recorder, load.String()
	if h.lm != nil {
		h.lm.Track(run, g)
	}
	g.OnRequest = func(req *loadgen.Request, tl *metrics.Timeline) {
		if h.requests != nil {
			h.requests.Write(run, rec.Window(), req, tl)
		}
		if h.lm != nil {
			h.lm.Observe(run, tl)
		}
	}
}

// OnResult gives the run the energy the GPUs drew in its window, if they
// are read, and prints its line of progress.
func (h *Hooks) OnResult(r *sweep.Result) {
	if w := r.Summary.Window; h.gpus != nil && !w.Start.IsZero() {
		e, err := h.gpus.Energy(h.ctx, w, r.Summary.OutputTokens, h.hourlyCost)
		if err != nil {
			h.Notes = append(h.Notes, r.Label+": the GPUs' energy: "+err.Error())
		}
		if e != nil {
			for _, n := range e.Notes {
				h.Notes = append(h.Notes, r.Label+": the GPUs' energy: "+n)
			}
		}
		r.Energy = e
	}
	h.progress(*r)
}

// Close stops reading the GPUs and closes -requests-out's file: an error
// is a request that was not written there.
func (h *Hooks) Close() error {
	if h.gpus != nil {
		h.gpus.Close()
	}
	if h.requests == nil {
		return nil
	}
	if err := h.requests.Close(); err != nil {
		return fmt.Errorf("-requests-out: %w: not every request was written there; the report is whole", err)
	}
	return nil
}
