package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// Whether RSS stayed flat.
//
// Warm-up is the first half of the run. RSS is judged flat when it grew by
// less than maxGrowth from the sample at half the run (5 minutes of the
// default 10) to the last sample, taken while the load is still on.
//
// Why half and not the first minute: RSS follows the high-water mark of the
// Go heap, which swings between the live heap and about twice it
// (GOGC=100), and reaches its steady height only once a whole collection
// cycle has run under the full load. With 10,000 streams the client
// allocates little per token and collects about once a minute, so at one
// minute its RSS is still climbing to the plateau it then keeps (measured:
// 386 MB at 1 minute, 464–465 MB from 1.5 to 10 minutes, with a live heap of
// 117–120 MB all along). A leak grows with time or with requests, so it
// shows in the second half as much as in the first: 1 KB kept per request
// would add about 100 MB over the second half of a default run, some +20%.
// The 10% margin is for the sawtooth and for the scavenger, which returns
// freed memory to the OS only slowly. The growth of the live heap over the
// same span, which has no sawtooth and so shows smaller leaks, is reported
// beside. Runs whose second half is shorter than minJudged are not judged.
const (
	maxGrowth      = 0.10
	minJudged      = time.Minute
	warmupFraction = 0.5
)

// checkpointFractions are the points of the run at which RSS is reported.
var checkpointFractions = []float64{0.1, 0.5, 1}

// Header opens a report.
type Header struct {
	Config       config `json:"config"`
	Server       string `json:"server"`
	ClientPID    int    `json:"client_pid"`
	SimulatorPID int    `json:"simulator_pid,omitempty"`
}

// Checkpoint is one process's figures at a fraction of the run.
type Checkpoint struct {
	Fraction   float64 `json:"fraction"`
	At         secs    `json:"at_s"`
	RSS        int64   `json:"rss_bytes"`
	Goroutines int     `json:"goroutines"`
}

// ProcSummary is how one process's memory went over the run.
type ProcSummary struct {
	RSSAt []Checkpoint `json:"rss_at"`
	// BaselineAt is the first sample after warm-up; Growth is the RSS
	// growth from it to the end, (EndRSS − BaselineRSS) ÷ BaselineRSS, and
	// PeakRSS the highest RSS from it on.
	BaselineAt  secs    `json:"baseline_at_s"`
	BaselineRSS int64   `json:"baseline_rss_bytes"`
	EndRSS      int64   `json:"end_rss_bytes"`
	PeakRSS     int64   `json:"peak_rss_bytes"`
	Growth      float64 `json:"rss_growth"`
	// LiveHeapGrowth is the growth of the live heap over the same span.
	LiveHeapGrowth float64 `json:"live_heap_growth"`
	// Flat reports whether Growth stayed below maxGrowth; null when the run
	// was too short to judge. Verdict says it in words.
	Flat    *bool  `json:"rss_flat"`
	Verdict string `json:"verdict"`
	// Goroutines is the count at the end; RSSPerStream the end RSS ÷ the
	// streams.
	Goroutines   int   `json:"goroutines"`
	RSSPerStream int64 `json:"rss_per_stream_bytes"`
}

// Final closes a report.
type Final struct {
	Elapsed secs `json:"elapsed_s"`
	// Stopped is "duration" when the soak ran its course, else why it
	// stopped.
	Stopped string `json:"stopped"`
	Samples int    `json:"samples"`
	// Launched counts requests sent; Requests those that ended, of which
	// Failed failed (by kind in Errors) and Canceled were cut at the end.
	Launched int                       `json:"launched"`
	Requests int                       `json:"requests"`
	Failed   int                       `json:"failed"`
	Canceled int                       `json:"canceled"`
	Errors   map[metrics.ErrorKind]int `json:"errors,omitempty"`
	// Tokens counts the tokens received, TokensPerSec per second of the
	// run, ramp included; NominalTokensPerSec is what the simulator's fast
	// profile would produce for every stream at once (0 with -url).
	Tokens              int64   `json:"tokens"`
	TokensPerSec        float64 `json:"tok_s"`
	NominalTokensPerSec float64 `json:"nominal_tok_s,omitempty"`

	// Engine is the simulator's engine at the last sample (nil with
	// -url): its Behind is how much wall time it could not keep up with
	// its steps, which the tokens/s fall short of the nominal rate by.
	Engine *Engine `json:"engine,omitempty"`

	Client        ProcSummary     `json:"client"`
	Simulator     *ProcSummary    `json:"simulator,omitempty"`
	SimulatorExit string          `json:"simulator_exit,omitempty"`
	Health        *loadgen.Health `json:"client_health,omitempty"`
}

// point is one process's memory at a sample.
type point struct {
	at   time.Duration
	rss  int64
	live int64 // the live heap after the last collection; 0: unknown
}

// flatness is the judgement of a series of readings.
type flatness struct {
	base, end  point
	peak       int64   // the highest RSS from base on
	growth     float64 // of RSS, from base to end
	liveGrowth float64 // of the live heap, from base to end; 0 if unknown
	flat       *bool
	verdict    string
}

// judgeFlat judges whether RSS stayed flat after warmup (see maxGrowth).
// Readings with an RSS of 0 (unknown) are ignored.
func judgeFlat(pts []point, warmup time.Duration) flatness {
	var f flatness
	i := 0
	for i < len(pts) && (pts[i].at < warmup || pts[i].rss <= 0) {
		i++
	}
	if i == len(pts) {
		f.verdict = "not judged: no reading after warm-up"
		return f
	}
	f.base = pts[i]
	for _, p := range pts[i:] {
		if p.rss > 0 {
			f.end = p
			f.peak = max(f.peak, p.rss)
		}
	}
	f.growth = float64(f.end.rss-f.base.rss) / float64(f.base.rss)
	desc := fmt.Sprintf("RSS %+.1f%% from %v to %v (%s to %s, peak %s)",
		100*f.growth, secs(f.base.at), secs(f.end.at), mb(f.base.rss), mb(f.end.rss), mb(f.peak))
	if f.base.live > 0 && f.end.live > 0 {
		f.liveGrowth = float64(f.end.live-f.base.live) / float64(f.base.live)
		desc += fmt.Sprintf(", live heap %+.1f%% (%s to %s)", 100*f.liveGrowth, mb(f.base.live), mb(f.end.live))
	}
	if span := f.end.at - f.base.at; span < minJudged {
		f.verdict = fmt.Sprintf("not judged: %s; %v after warm-up, %v needed", desc, secs(span), minJudged)
		return f
	}
	flat := f.growth < maxGrowth
	f.flat = &flat
	if flat {
		f.verdict = fmt.Sprintf("flat: %s; RSS limit %+.0f%%", desc, 100*maxGrowth)
	} else {
		f.verdict = fmt.Sprintf("NOT flat: %s; RSS limit %+.0f%%", desc, 100*maxGrowth)
	}
	return f
}

// judgeProcess summarizes one process's samples; get returns its figures
// in a sample, or nil.
func judgeProcess(samples []Sample, cfg config, get func(Sample) *Proc) ProcSummary {
	var ps ProcSummary
	var pts []point
	for _, s := range samples[1:] { // the first is taken before the load starts
		if p := get(s); p != nil {
			pts = append(pts, point{time.Duration(s.Elapsed), p.RSS, p.HeapLive})
		}
	}
	if len(pts) == 0 {
		ps.Verdict = "not judged: no sample"
		return ps
	}
	lastAt := time.Duration(samples[len(samples)-1].Elapsed)
	for _, f := range checkpointFractions {
		target := time.Duration(f * float64(cfg.Duration))
		if lastAt < target-cfg.Interval/2 {
			continue // the run did not get there
		}
		var best *Sample
		for i := range samples[1:] {
			s := &samples[1+i]
			if get(*s) != nil && (best == nil || absDur(time.Duration(s.Elapsed)-target) < absDur(time.Duration(best.Elapsed)-target)) {
				best = s
			}
		}
		if best == nil {
			continue
		}
		p := get(*best)
		ps.RSSAt = append(ps.RSSAt, Checkpoint{Fraction: f, At: best.Elapsed, RSS: p.RSS, Goroutines: p.Goroutines})
	}
	warmup := max(time.Duration(warmupFraction*float64(cfg.Duration)), cfg.Ramp)
	fl := judgeFlat(pts, warmup)
	ps.BaselineAt, ps.BaselineRSS = secs(fl.base.at), fl.base.rss
	ps.EndRSS, ps.PeakRSS, ps.Growth, ps.LiveHeapGrowth = fl.end.rss, fl.peak, fl.growth, fl.liveGrowth
	ps.Flat, ps.Verdict = fl.flat, fl.verdict
	last := get(samples[len(samples)-1])
	if last != nil {
		ps.Goroutines = last.Goroutines
		ps.RSSPerStream = last.RSS / int64(cfg.Streams)
	}
	return ps
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// mb formats a number of bytes in MiB.
func mb(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/(1<<20)) }

// A reporter writes the report as the run goes.
type reporter interface {
	start(Header)
	sample(Sample)
	final(Final)
}

// jsonReporter writes one JSON object per line, with a "type" of "start",
// "sample" or "final".
type jsonReporter struct{ w io.Writer }

func (r *jsonReporter) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"type": "error", "error": err.Error()})
	}
	r.w.Write(append(b, '\n'))
}

func (r *jsonReporter) start(h Header) {
	r.write(struct {
		Type string `json:"type"`
		Header
	}{"start", h})
}

func (r *jsonReporter) sample(s Sample) {
	r.write(struct {
		Type string `json:"type"`
		Sample
	}{"sample", s})
}

func (r *jsonReporter) final(f Final) {
	r.write(struct {
		Type string `json:"type"`
		Final
	}{"final", f})
}

// textReporter writes a table, one line per sample, and a summary.
type textReporter struct {
	w     io.Writer
	sim   bool
	lines int
}

func (r *textReporter) start(h Header) {
	c := h.Config
	r.sim = h.SimulatorPID != 0
	fmt.Fprintf(r.w, "soak: %d streams for %v against %s, ramp %v, completions of %d tokens (ignore_eos), %s transport; client pid %d",
		c.Streams, c.Duration, h.Server, c.Ramp, c.MaxTokens, c.Transport, h.ClientPID)
	if r.sim {
		fmt.Fprintf(r.w, ", simulator pid %d, speed %g", h.SimulatorPID, c.Speed)
	}
	fmt.Fprintf(r.w, "\n\n")
}

func (r *textReporter) sample(s Sample) {
	if r.lines%30 == 0 {
		fmt.Fprintf(r.w, "%8s | %-39s |", "", "client")
		if r.sim {
			fmt.Fprintf(r.w, " %-45s |", "simulator")
		}
		fmt.Fprintf(r.w, " %-18s | %-21s |\n", "streams", "tokens/s")
		fmt.Fprintf(r.w, "%8s | %6s %6s %6s %6s %6s %4s |", "elapsed", "rss", "heap", "live", "stack", "gorout", "cpu")
		if r.sim {
			fmt.Fprintf(r.w, " %6s %6s %6s %6s %6s %4s %5s |", "rss", "heap", "live", "stack", "gorout", "cpu", "tk/ch")
		}
		fmt.Fprintf(r.w, " %8s %9s | %10s %10s | %s\n", "in-fl.", "w/token", "interval", "cumul.", "failed")
	}
	r.lines++
	m := func(b int64) string { return fmt.Sprintf("%.0fM", float64(b)/(1<<20)) }
	p := s.Client
	fmt.Fprintf(r.w, "%8v | %6s %6s %6s %6s %6d %4.2f |", s.Elapsed, m(p.RSS), m(p.HeapInuse), m(p.HeapLive), m(p.Stacks), p.Goroutines, p.CPU)
	if r.sim {
		if q := s.Simulator; q != nil {
			var tpc float64
			if s.Engine != nil {
				tpc = s.Engine.TokensPerChunk
			}
			fmt.Fprintf(r.w, " %6s %6s %6s %6s %6d %4.2f %5.1f |", m(q.RSS), m(q.HeapInuse), m(q.HeapLive), m(q.Stacks), q.Goroutines, q.CPU, tpc)
		} else {
			fmt.Fprintf(r.w, " %45s |", "")
		}
	}
	fmt.Fprintf(r.w, " %8d %9d | %10.0f %10.0f | %d", s.InFlight, s.WithToken, s.TokensPerSec, s.CumTokensPerSec, s.Failed)
	if len(s.Errors) > 0 {
		fmt.Fprintf(r.w, " (%s)", fmtErrors(s.Errors))
	}
	if s.Simulator != nil && s.Simulator.Err != "" {
		fmt.Fprintf(r.w, " [simulator: %s]", s.Simulator.Err)
	}
	fmt.Fprintln(r.w)
}

func (r *textReporter) final(f Final) {
	w := r.w
	fmt.Fprintf(w, "\nend after %v (stopped: %s)\n", f.Elapsed, f.Stopped)
	fmt.Fprintf(w, "requests: %d sent, %d ended: %d failed (%s), %d cut at the end\n",
		f.Launched, f.Requests, f.Failed, fmtErrors(f.Errors), f.Canceled)
	fmt.Fprintf(w, "tokens:   %d received, %.0f tokens/s over the run", f.Tokens, f.TokensPerSec)
	if f.NominalTokensPerSec > 0 {
		fmt.Fprintf(w, " (the simulator's nominal rate for every stream at once: %.0f)", f.NominalTokensPerSec)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "RSS:\n")
	rows := map[float64][2]*Checkpoint{}
	for i := range f.Client.RSSAt {
		c := &f.Client.RSSAt[i]
		row := rows[c.Fraction]
		row[0] = c
		rows[c.Fraction] = row
	}
	if f.Simulator != nil {
		for i := range f.Simulator.RSSAt {
			c := &f.Simulator.RSSAt[i]
			row := rows[c.Fraction]
			row[1] = c
			rows[c.Fraction] = row
		}
	}
	row := func(at, client, sim string) {
		if f.Simulator == nil {
			fmt.Fprintf(w, "  %-14s %s\n", at, client)
		} else {
			fmt.Fprintf(w, "  %-14s %-26s %s\n", at, client, sim)
		}
	}
	row("at", "client", "simulator")
	cell := func(c *Checkpoint) string {
		if c == nil {
			return "-"
		}
		return fmt.Sprintf("%s, %d goroutines", mb(c.RSS), c.Goroutines)
	}
	for _, fr := range checkpointFractions {
		cs, ok := rows[fr]
		if !ok {
			continue
		}
		at := cs[0]
		if at == nil {
			at = cs[1]
		}
		row(fmt.Sprintf("%v (%.0f%%)", at.At, 100*fr), cell(cs[0]), cell(cs[1]))
	}
	ps := func(name string, p *ProcSummary) {
		fmt.Fprintf(w, "%s RSS %s; at the end %s per stream, %d goroutines\n", name, p.Verdict,
			fmt.Sprintf("%.1f KB", float64(p.RSSPerStream)/1024), p.Goroutines)
	}
	ps("client", &f.Client)
	if f.Simulator != nil {
		ps("simulator", f.Simulator)
	}
	if e := f.Engine; e != nil && f.Elapsed > 0 {
		fmt.Fprintf(w, "simulator engine: %v behind its schedule over the run (%.0f%%)", e.Behind, 100*float64(e.Behind)/float64(f.Elapsed))
		if e.Chunks > 0 {
			fmt.Fprintf(w, "; %.1f tokens per chunk written", float64(e.Tokens)/float64(e.Chunks))
		}
		fmt.Fprintln(w)
	}
	if f.SimulatorExit != "" {
		fmt.Fprintf(w, "simulator: %s\n", f.SimulatorExit)
	}
	if h := f.Health; h != nil {
		fmt.Fprintf(w, "client health: %.0f%% of its CPUs, timers late by %v at p99", 100*h.CPU, h.Lag.P99)
		if h.Limited {
			fmt.Fprintf(w, "; limited by the client: %s", h.Reason)
		}
		fmt.Fprintln(w)
	}
}
