package sweep

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// A Target makes the Generator of one run: the client, the requests (a
// new Source), how long the run lasts (Duration or Requests) and its
// warm-up. [Run] sets its Load to the load given, unless the Target set
// one (such as a trace's [loadgen.Schedule]), and, for an [Objective], the
// Recorder's SLO. It is called once a run and
// must return a Generator no other run uses.
type Target func(load loadgen.Load) (*loadgen.Generator, error)

// DefaultQuantile is an [Objective]'s share of requests when it sets
// none.
const DefaultQuantile = 0.9

// Objective is what a rate must give its requests to count as sustained:
// at least Quantile of the requests the run judged must complete within
// every objective of SLO — their goodput, at least Quantile of their
// throughput. With Quantile 0.99 and an SLO of TTFT 500 ms and TPOT 50 ms,
// 99% of the requests must complete, each within both. A run judges the
// requests that completed or failed in its window, and those cut at its
// end that had already missed the SLO (see
// [github.com/llmload/llmload/metrics.SLO]); a request cut before
// it could miss it counts neither way. A TPOT objective alone does not
// see requests wait in a server's queue; a TTFT or latency objective
// does.
type Objective struct {
	SLO metrics.SLO `json:"slo"`
	// Quantile is the share of requests that must meet the SLO; 0 means
	// DefaultQuantile.
	Quantile float64 `json:"quantile,omitempty"`
}

func (o Objective) quantile() float64 {
	if o.Quantile > 0 {
		return o.Quantile
	}
	return DefaultQuantile
}

// Validate reports an objective that cannot be met or checked.
func (o Objective) Validate() error {
	switch {
	case o.SLO == (metrics.SLO{}):
		return errors.New("sweep: the objective sets no TTFT, TTFO, TPOT or latency: give at least one")
	case o.SLO.TTFT < 0 || o.SLO.TPOT < 0 || o.SLO.Latency < 0 || o.SLO.TTFO < 0:
		return fmt.Errorf("sweep: the objective %+v has a negative time", o.SLO)
	case !(o.Quantile >= 0 && o.Quantile <= 1):
		return fmt.Errorf("sweep: the objective's quantile %v is not a share from 0 to 1", o.Quantile)
	}
	return nil
}

// String describes the objective: "90% of requests within TTFT 500ms,
// TPOT 50ms".
func (o Objective) String() string {
	s := fmt.Sprintf("%g%% of requests within", o.quantile()*100)
	sep := " "
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"TTFT", o.SLO.TTFT}, {"TTFO", o.SLO.TTFO}, {"TPOT", o.SLO.TPOT}, {"latency", o.SLO.Latency}} {
		if f.d > 0 {
			s += sep + f.name + " " + f.d.String()
			sep = ", "
		}
	}
	return s
}

// Result is one run of a load: the run's summary of its window, with its
// distributions, and the figures a serving benchmark reports.
type Result struct {
	// Label names the run in reports: "synchronous", "throughput",
	// "constant 3.2 req/s".
	Label string `json:"label"`
	// Load is the run's load, an open loop's with the seed of its
	// arrivals (the one drawn for a zero Seed); in a stored document, a
	// schedule's times are not kept.
	Load loadgen.Load `json:"load"`
	// Requests counts the requests of the window: completed, failed and
	// cut at its end (the warm-up's are in Summary.Warmup alone).
	Requests int `json:"requests"`
	// RequestRate is the requests completed a second of window; for an
	// open loop that kept up, the rate it was given.
	RequestRate float64 `json:"request_rate"`
	// Capacity is the requests a second the run's output rate stands for:
	// OutputTokensPerSec ÷ a completed request's mean output. Unlike
	// RequestRate, it does not depend on how many requests happen to end
	// inside a window not much longer than they are; a sweep and a search
	// take the throughput run's as the highest rate the server completes.
	Capacity float64 `json:"capacity"`
	// OutputTokensPerSec is the window's output tokens a second.
	OutputTokensPerSec float64 `json:"output_tok_s"`
	// InputTokensPerSec is the input tokens of the requests completed in
	// the window (the server's usage), a second of window: with
	// RequestRate, the throughput of an Embeddings or Rerank run.
	InputTokensPerSec float64 `json:"input_tok_s,omitempty"`
	// Summary holds every column of the window; Histograms its full
	// distributions (HdrHistogram's V2 encoding), for merging and
	// re-rendering without the run.
	Summary    metrics.Summary    `json:"summary"`
	Histograms metrics.Histograms `json:"histograms"`
	// Late counts the open loop's arrivals that could not start on time;
	// Lateness is how late every arrival started.
	Late     int                  `json:"late,omitempty"`
	Lateness metrics.Distribution `json:"lateness,omitzero"`
	// Queued counts the open loop's arrivals that found every slot of its
	// cap taken and waited for one (Summary.LatencyFromDue counts their
	// latency from their scheduled arrival, their wait on the client
	// included); zero in a closed loop.
	Queued int `json:"queued,omitempty"`
	// Series is the run over time, warm-up and window (see
	// [metrics.Series]), when its Recorder kept one ([metrics.Recorder].Every).
	Series *metrics.Series `json:"series,omitempty"`
	// Stopped says why the run ended.
	Stopped loadgen.StopReason `json:"stopped"`
	// OverCapacity, when not empty, says why an open-loop run was
	// stopped early as over the server's capacity: its requests in flight
	// grew without bound (see [Run]). Its figures are of a queue still
	// growing, and it did not meet any objective.
	OverCapacity string `json:"over_capacity,omitempty"`
	// ClientLimited, when not empty, says why the client itself may have
	// limited the run (see [loadgen.Health]): its figures may be the
	// client's, not the server's.
	ClientLimited string `json:"client_limited,omitempty"`
	// ReadMode says how the client read the run's response bodies (see
	// [loadgen.Run].ReadMode): "shared pollers", "a goroutine per
	// stream" or "net/http".
	ReadMode string `json:"read_mode,omitempty"`
	// OutsideServer, when not empty, flags a run whose TTFT was largely
	// spent outside the server (Summary.Split.Outside), as the client's
	// ("client": it was short of CPU) or the network's ("network").
	OutsideServer string `json:"outside_server,omitempty"`
	// GoodShare is the share of the requests the run judged (see
	// [Objective]) that met the objective, and Met whether it was at least
	// the objective's quantile; both are zero without an objective.
	GoodShare float64 `json:"good_share,omitempty"`
	Met       bool    `json:"met,omitempty"`
	// Models holds each model's share of the run, by name, when the
	// requests named several (the generator's Recorder with ByModel):
	// its requests, rates, summary and distributions in the same window.
	Models map[string]Result `json:"models,omitempty"`
	// Energy is what the server's GPUs drew in the window, as their DCGM
	// exporters reported it, and what an output token cost; nil when they
	// were not read (the bench command's -gpu-metrics reads them).
	Energy *metrics.Energy `json:"energy,omitempty"`
}

// Run runs one load against the generator target makes, checks it
// against obj (if it sets anything) and returns its result. The error is
// the generator's: the result then holds what was measured before it. An
// open loop at a rate the server cannot sustain is stopped early, without
// an error, and its result says so (Result.OverCapacity): its requests in
// flight stayed at the load's cap for a second, or kept growing over two
// seconds or more of its window once 10 requests had completed (the last
// quarter of the samples, taken every 100 ms, each above every one of the
// first quarter, their mean at least twice the first's plus 8), as
// GuideLLM stops over-saturated rates. A nil target or load is an error,
// the target's [fs.ErrInvalid] (see [errors.Is]), and nothing is sent.
func Run(ctx context.Context, target Target, load loadgen.Load, label string, obj Objective) (Result, error) {
	if target == nil {
		return Result{Label: label, Load: load}, fmt.Errorf("sweep: Run's target is nil: give a Target that makes each run's Generator: %w", fs.ErrInvalid)
	}
	if load == nil {
		return Result{Label: label}, errors.New("sweep: the load is nil: give a loadgen.Closed, Open or Schedule")
	}
	if target == nil {
		return Result{Label: label, Load: load}, errors.New("sweep: the Target is nil: give the function that makes the run's Generator")
	}
	g, err := target(load)
	if err != nil {
		return Result{Label: label, Load: load}, err
	}
	if g == nil {
		return Result{Label: label, Load: load}, errors.New("sweep: the Target returned no Generator")
	}
	if g.Load == nil {
		g.Load = load
	}
	load = g.Load
	if obj.SLO != (metrics.SLO{}) {
		if g.Recorder == nil {
			g.Recorder = &metrics.Recorder{}
		}
		g.Recorder.SLO = obj.SLO
	}
	var overCapacity string
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	done := make(chan struct{})
	var wg sync.WaitGroup
	if cap := openCap(load); cap > 0 {
		wg.Go(func() { watchSaturation(g, cap, stop, &overCapacity, done) })
	}
	run, err := g.Run(runCtx)
	close(done)
	wg.Wait()
	if errors.Is(err, errOverCapacity) && ctx.Err() == nil {
		err = nil
	} else {
		overCapacity = ""
	}
	res := resultOf(run, load, label, obj)
	if overCapacity != "" {
		res.OverCapacity, res.Met = overCapacity, false
	}
	return res, err
}

// openCap is an open loop's cap on requests in flight, or 0 for another
// load.
func openCap(l loadgen.Load) int {
	if o, ok := l.(loadgen.Open); ok {
		if o.MaxInFlight > 0 {
			return o.MaxInFlight
		}
		return loadgen.DefaultMaxInFlight
	}
	return 0
}

// resultOf reduces a run to its result.
func resultOf(run *loadgen.Run, load loadgen.Load, label string, obj Objective) Result {
	if o, ok := load.(loadgen.Open); ok && run.Seed != 0 {
		o.Seed = run.Seed // the seed drawn for a zero one: given again, it repeats the arrivals
		load = o
	}
	s := run.Summary
	r := Result{
		Label: label, Load: load, Summary: s, Histograms: run.Recorder.Recording(metrics.ScopeWindow).Histograms,
		Requests:           s.Requests - s.WarmupRequests,
		OutputTokensPerSec: s.OutputTokensPerSec,
		Late:               run.Late, Lateness: run.Lateness, Stopped: run.Stopped,
		ReadMode: run.ReadMode,
	}
	if run.Health.Limited {
		r.ClientLimited = run.Health.Reason
	}
	r.Series = run.Recorder.Series()
	if _, closed := load.(loadgen.Closed); !closed && load != nil {
		r.Queued = run.Queued
	}
	r.OutsideServer = outsideServer(s.Split, run.Health.Limited)
	r.rates(obj)
	if rec := run.Recorder.Recording(metrics.ScopeWindow); len(rec.Models) > 1 {
		r.Models = make(map[string]Result, len(rec.Models))
		for name, m := range rec.Models {
			mr := Result{Label: label, Load: load, Summary: m.Summary, Histograms: m.Histograms,
				Requests: m.Summary.Requests - m.Summary.WarmupRequests, OutputTokensPerSec: m.Summary.OutputTokensPerSec}
			mr.rates(obj)
			r.Models[name] = mr
		}
	}
	return r
}

// rates sets the figures r's summary gives: its request rate, capacity and
// share of requests that met obj.
func (r *Result) rates(obj Objective) {
	s := &r.Summary
	if d := s.Window.Duration(); d > 0 {
		r.RequestRate = float64(s.Completed) / d.Seconds()
		r.InputTokensPerSec = float64(s.InputTokens) / d.Seconds()
	}
	r.Capacity = r.RequestRate
	if s.CompletedTokens > 0 {
		r.Capacity = r.OutputTokensPerSec / (float64(s.CompletedTokens) / float64(s.Completed))
	}
	if judged := s.Completed + s.Failed + s.Missed; obj.SLO != (metrics.SLO{}) && judged > 0 {
		r.GoodShare = float64(s.Good) / float64(judged)
		r.Met = r.GoodShare >= obj.quantile()
	}
}

// outsideServer says whose a large rest of the TTFT was: "client" when the
// client was short of CPU, "network" otherwise; "" when it was small.
func outsideServer(sp metrics.TTFTSplit, clientLimited bool) string {
	switch {
	case !sp.Outside:
		return ""
	case clientLimited:
		return "client"
	}
	return "network"
}

// outsideShare returns the share of the mean TTFT spent outside the
// server, from 0 to 1; 0 when nothing was split.
func outsideShare(s metrics.TTFTSplit) float64 {
	if s.Requests == 0 || s.TTFT.Mean <= 0 {
		return 0
	}
	return min(max(float64(s.Rest.Mean)/float64(s.TTFT.Mean), 0), 1)
}
