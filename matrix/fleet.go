package matrix

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/sleep"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/matrix/internal/fleet"
	"github.com/llmload/llmload/metrics"
)

// Shard is one process's part in a cell of a sharded run.
type Shard struct {
	// Index numbers the shards: 0 is the leader, followers from 1 in the
	// order they joined.
	Index int `json:"index"`
	// Name is the shard's host name (a pod's, on Kubernetes).
	Name string `json:"name,omitempty"`
	// Streams is the shard's share of the cell's concurrency.
	Streams int `json:"streams"`
	// ClockOffsetMs is the shard's clock minus the leader's, measured
	// before the cell by an NTP-style exchange, and ClockErrorMs its bound
	// (half the exchange's round trip); the leader's are 0. The shard's
	// window was set on its own clock by the offset.
	ClockOffsetMs float64 `json:"clock_offset_ms"`
	ClockErrorMs  float64 `json:"clock_error_ms"`
	// OutputTokens is what the shard counted in the window.
	OutputTokens int `json:"output_tokens"`
	// ClientLimited reports that the shard's client may have limited it.
	ClientLimited bool `json:"client_limited,omitempty"`
	// Lost says why the shard's part is not in the cell: it died, fell
	// silent or failed mid-cell. Empty when it took part.
	Lost string `json:"lost,omitempty"`
}

// clockNoteShare is the share of the window beyond which a shard's clock
// offset, or its uncertainty, is noted in the cell.
const clockNoteShare = 0.01

// fleetCell is a sharded cell on the leader's side. A nil *fleetCell is a
// cell that one process runs alone.
type fleetCell struct {
	fc   fleet.Cell
	own  fleet.Share
	gate *shareGate

	// Set by merge.
	shards  []Shard
	notes   []string
	lost    int // streams of the shards lost
	partial bool
}

// startFleet starts a cell on the Runner's fleet, if it has one, and
// returns it with the streams of the leader's own share; without a fleet
// it returns nil and every stream.
func (cr *cellRun) startFleet(ctx context.Context, c *Cell, req *loadgen.Request, warmupTimeout, queueAfter time.Duration) (*fleetCell, int, error) {
	if cr.r.Fleet == nil {
		return nil, c.Concurrency, nil
	}
	cr.seq++
	w := *cr.spec.WarmupRule
	sh := fleet.Share{
		Seq: cr.seq, ContextTokens: c.ContextTokens, Concurrency: c.Concurrency,
		API: req.API, Model: req.Model, Prompt: req.Prompt, Images: req.Images, MaxTokens: req.MaxTokens,
		ServerTimings: req.ServerTimings,
		WarmupMin:     w.Min,
		Flow:          w.Flow,
		QueueAfter:    queueAfter,
		WarmupTimeout: warmupTimeout,
		Duration:      cr.spec.Duration,
		Series:        max(cr.spec.Series, 0),
		SLO:           cr.spec.SLO,
	}
	fc, err := cr.r.Fleet.StartCell(ctx, sh)
	if err != nil {
		return nil, 0, err
	}
	f := &fleetCell{fc: fc, own: fc.Own()}
	return f, f.own.Streams, nil
}

// configure makes the leader's generator a share of the fleet's cell: its
// window opens when the fleet's does, once every shard has warmed up; the
// fleet bounds the warm-up.
func (f *fleetCell) configure(g *loadgen.Generator, warm *warmup) {
	if f == nil {
		return
	}
	warm.knownCap = 0 // a cap the server ran is over every shard's streams, not the leader's
	f.gate = &shareGate{warm: warm, ctl: f.fc, timeout: g.WarmupTimeout, start: time.Now()}
	g.WarmupUntil, g.OpenAt, g.WarmupTimeout = f.gate.until, f.gate.openAt, 0
}

// launch waits for the leader's share's launch.
func (f *fleetCell) launch(ctx context.Context) error {
	if f == nil {
		return nil
	}
	f.gate.start = f.own.Launch
	if !sleep.Until(ctx, f.own.Launch) {
		return ctx.Err()
	}
	return nil
}

// merge collects the followers' parts and merges them with the leader's
// into the cell's: run's summary and figures become the whole cell's,
// recording and streams too. It returns an error only when the parts do
// not merge.
func (f *fleetCell) merge(ctx context.Context, run *loadgen.Run, recording *metrics.Recording, streams **Streams, warm *warmup) error {
	if f == nil {
		return nil
	}
	run.Warmup = warmedUp(run, recording.Summary.Window, f.own.Launch)
	own := &sharePart{Recording: *recording, Streams: *streams, Health: run.Health, Warmup: textDuration(run.Warmup),
		WarmupEnded: warm.reason, Queued: f.gate.queued, WarmupTimedOut: f.gate.timedOut}
	parts := f.collect(ctx, own) // an interrupted run waits briefly for the parts
	window := f.own.Duration

	var recs []metrics.Recording
	var common metrics.Window // the kept shards' windows' intersection
	var ss []*Streams
	health := loadgen.Health{}
	run.WarmupTimedOut = false
	// A share stopped before its window opened (the run interrupted in
	// its launch or warm-up) measured no window: while another share
	// did, it is left out of the merge like a lost one, since its tokens
	// and its empty window are not the cell's.
	if !slices.ContainsFunc(parts, windowed) {
		return errNoWindow
	}
	for _, sp := range parts {
		sh := sp.Shard
		if sp.Part != nil && sp.Part.Recording.Summary.Window.Duration() <= 0 {
			sh.Lost = "it stopped before its window opened"
			if sp.Part.Error != "" {
				sh.Lost += ": " + sp.Part.Error
			}
			sp.Part = nil
		}
		if sp.Part == nil {
			f.lose(sh)
			continue
		}
		p := sp.Part
		// The shard's window and times onto the leader's clock.
		off := sh.offset()
		r := onLeaderClock(p.Recording, off)
		// The merged window is the windows' intersection: a shard whose
		// window opened so late (a starved follower, a clock that moved
		// after the exchange) that it would cut the cell's window by half
		// or more is left out with the reason, as a lost one is, rather
		// than failing the cell or shrinking it to noise.
		if len(recs) > 0 {
			inter := intersect(common, r.Summary.Window)
			if inter.Duration() < recs[0].Summary.Window.Duration()/2 {
				sh.Lost = fmt.Sprintf("its window %s overlapped the others' %s for %s only", clockSpan(r.Summary.Window, recs[0].Summary.Window.Start),
					clockSpan(common, recs[0].Summary.Window.Start), inter.Duration().Round(time.Millisecond))
				f.lose(sh)
				continue
			}
			common = inter
		} else {
			common = r.Summary.Window
		}
		recs = append(recs, r)
		ss = append(ss, p.Streams)
		sh.OutputTokens, sh.ClientLimited = r.Summary.OutputTokens, p.Health.Limited
		f.shards = append(f.shards, sh)

		if p.Error != "" && sh.Index > 0 {
			f.partial = true
			f.notes = append(f.notes, fmt.Sprintf("shard %d%s stopped early: %s", sh.Index, nameOf(sh.Name), p.Error))
		}
		if abs64(off) > time.Duration(clockNoteShare*float64(window)) || sh.ClockErrorMs > clockNoteShare*window.Seconds()*1000 {
			f.notes = append(f.notes, fmt.Sprintf("shard %d%s's clock was %s the leader's (±%.2f ms), more than %.0f%% of the window; its window was set by that offset",
				sh.Index, nameOf(sh.Name), offsetWords(sh.ClockOffsetMs), sh.ClockErrorMs, 100*clockNoteShare))
		}
		health = worseHealth(health, p.Health, sh.Index)
		run.Warmup = max(run.Warmup, time.Duration(p.Warmup))
		run.WarmupTimedOut = run.WarmupTimedOut || p.WarmupTimedOut
		if p.Queued && !warm.queued {
			warm.reason, warm.queued = p.WarmupEnded, true
			if sh.Index > 0 {
				warm.reason = fmt.Sprintf("shard %d: %s", sh.Index, p.WarmupEnded)
			}
		}
	}
	merged, err := metrics.MergeRecordings(recs...)
	if err != nil {
		return err
	}
	*recording = merged
	run.Summary = merged.Summary
	run.Health = health
	*streams = mergeStreams(ss)
	return nil
}

// windowed reports whether a share measured a window.
func windowed(sp shardPart) bool {
	return sp.Part != nil && sp.Part.Recording.Summary.Window.Duration() > 0
}

// onLeaderClock is a shard's recording with its window and series moved
// onto the leader's clock, from the shard's, off ahead of it.
func onLeaderClock(r metrics.Recording, off time.Duration) metrics.Recording {
	r.Summary.Window = metrics.Window{Start: r.Summary.Window.Start.Add(-off), End: r.Summary.Window.End.Add(-off)}
	if s := r.Series; s != nil && off != 0 {
		c := *s
		c.Start, c.End, c.From = s.Start.Add(-off), s.End.Add(-off), s.From.Add(-off)
		c.Window = metrics.Window{Start: s.Window.Start.Add(-off), End: s.Window.End.Add(-off)}
		r.Series = &c
	}
	return r
}

// lose leaves the shard sh, lost for the reason sh.Lost gives, out of the
// cell: its streams are counted lost and a note says so.
func (f *fleetCell) lose(sh Shard) {
	f.lost += sh.Streams
	f.partial = true
	f.notes = append(f.notes, fmt.Sprintf("shard %d%s was lost: %s; the cell holds the other shards' %d of %d streams",
		sh.Index, nameOf(sh.Name), sh.Lost, f.own.Concurrency-f.lost, f.own.Concurrency))
	f.shards = append(f.shards, sh)
}

// shardPart is one shard's part of a cell: nil when the shard was lost
// (Shard.Lost says why).
type shardPart struct {
	Shard Shard
	Part  *sharePart
}

// collect returns the leader's part and the followers', each follower's
// report read and checked: one that does not read or is not plausible
// loses its shard from the cell, with the reason.
func (f *fleetCell) collect(ctx context.Context, own *sharePart) []shardPart {
	out := []shardPart{{Shard: Shard{Index: 0, Name: hostname(), Streams: f.own.Streams}, Part: own}}
	for _, p := range f.fc.Collect(ctx) {
		sh := Shard{Index: p.Index, Name: boundName(p.Name), Streams: p.Streams, Lost: p.Lost,
			ClockOffsetMs: float64(p.ClockOffset) / float64(time.Millisecond),
			ClockErrorMs:  float64(p.ClockError) / float64(time.Millisecond)}
		var part *sharePart
		if sh.Lost == "" {
			var err error
			if part, err = readPart(p, f.own); err != nil {
				sh.Lost = err.Error()
			}
		}
		out = append(out, shardPart{Shard: sh, Part: part})
	}
	return out
}

// intersect returns the part of a that b covers (empty when none).
func intersect(a, b metrics.Window) metrics.Window {
	w := a
	if b.Start.After(w.Start) {
		w.Start = b.Start
	}
	if b.End.Before(w.End) {
		w.End = b.End
	}
	return w
}

// clockSpan writes a window as its start and end in seconds from t0, the
// leader's window start: "+1.250–2.250 s".
func clockSpan(w metrics.Window, t0 time.Time) string {
	return fmt.Sprintf("%+.3f–%+.3f s", w.Start.Sub(t0).Seconds(), w.End.Sub(t0).Seconds())
}

// offset returns the shard's clock offset as a duration.
func (s Shard) offset() time.Duration {
	return time.Duration(math.Round(s.ClockOffsetMs * float64(time.Millisecond)))
}

// errNoWindow is a fleet cell that ended before any shard's window opened.
var errNoWindow = errors.New("no shard's window opened")

// measured returns the cell as its measured streams make it: without the
// streams of the shards lost, which the server never ran at the end.
func (f *fleetCell) measured(c *Cell) *Cell {
	if f == nil || f.lost == 0 {
		return c
	}
	m := *c
	m.Concurrency = max(c.Concurrency-f.lost, 1)
	return &m
}

// finish writes the shards and their notes into the cell's measurement.
func (f *fleetCell) finish(m *Measurement) {
	if f == nil {
		return
	}
	m.Shards = f.shards
	m.Notes = append(m.Notes, f.notes...)
	m.Partial = m.Partial || f.partial
}

func nameOf(name string) string {
	if name == "" {
		return ""
	}
	return " (" + textsafe.Line(name) + ")"
}

func offsetWords(ms float64) string {
	switch {
	case ms > 0:
		return fmt.Sprintf("%.1f ms ahead of", ms)
	case ms < 0:
		return fmt.Sprintf("%.1f ms behind", -ms)
	}
	return "level with"
}

func abs64(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// worseHealth returns the health of the shards so far and one more: limited
// if any is, with the worse timer lag and CPU share.
func worseHealth(h, o loadgen.Health, index int) loadgen.Health {
	if o.Lag.P99 > h.Lag.P99 {
		h.Lag = o.Lag
	}
	h.CPU = max(h.CPU, o.CPU)
	if o.Limited && !h.Limited {
		h.Limited = true
		h.Reason = o.Reason
		if index > 0 {
			h.Reason = fmt.Sprintf("shard %d: %s", index, o.Reason)
		}
	}
	return h
}

// mergeStreams sums the shards' views of their own streams: the averages
// add up exactly (the window is one); the peaks and ceilings add up to a
// bound (the shards' peaks need not come at once), and the shares are the
// bounds every shard's allow: all decoding, or at the ceiling, no more of
// the window than the least of the shards', a stream waiting no less than
// the most.
func mergeStreams(ss []*Streams) *Streams {
	var out *Streams
	for _, s := range ss {
		if s == nil {
			continue
		}
		if out == nil {
			c := *s
			out = &c
			continue
		}
		out.Samples += s.Samples
		out.AvgDecoding += s.AvgDecoding
		out.AvgWaiting += s.AvgWaiting
		out.PeakDecoding += s.PeakDecoding
		out.Ceiling += s.Ceiling
		out.CeilingShare = min(out.CeilingShare, s.CeilingShare)
		out.AllShare = min(out.AllShare, s.AllShare)
		out.WaitingShare = max(out.WaitingShare, s.WaitingShare)
		// Little's law over every shard: the waits weighted by the
		// requests each shard began.
		waited := out.MeanWaitMs*float64(out.Launched) + s.MeanWaitMs*float64(s.Launched)
		out.Launched += s.Launched
		if out.Launched > 0 {
			out.MeanWaitMs = waited / float64(out.Launched)
		}
	}
	return out
}

// shardList says which shards took part, for the log.
func shardList(shards []Shard) string {
	var parts []string
	for _, s := range shards {
		if s.Lost != "" {
			parts = append(parts, fmt.Sprintf("%d lost", s.Index))
			continue
		}
		parts = append(parts, fmt.Sprintf("%d: %d streams, %d tokens", s.Index, s.Streams, s.OutputTokens))
	}
	return strings.Join(parts, "; ")
}

// hostname returns this machine's name, or "" when it has none.
func hostname() string {
	h, _ := os.Hostname()
	return h
}
