package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/llmload/llmload/loadgen"
)

// A Mix is a benchmark's workload, run after run. It sends the first of
// these that is set: a Trace replayed at its recorded times, a Dataset,
// multi-turn sessions of Turns, or else synthetic prompts. Each
// [Mix.Setup] gives a Generator requests of their own — a file read from
// its start, text of a new seed — so that no run finds another's prompts
// in the server's prefix cache.
//
// Set the fields, then call Setup once a run. A Mix is not safe for
// concurrent use; Close it when the runs are over.
type Mix struct {
	// Trace, if set, is replayed as Replay says; the Mix sets Replay's
	// Sizing and Seed.
	Trace  *Trace
	Replay Replay
	// Dataset, if set, is sent record by record; Output, if set, replaces
	// the records' own output lengths.
	Dataset *Dataset
	// Turns, if set, makes multi-turn sessions for a closed loop: Input
	// tokens of new text a turn, replies of Output, Think between turns,
	// a session's history capped at MaxContext tokens (see
	// [Sessions].MaxContext).
	Turns      Length
	Think      time.Duration
	MaxContext int
	// Input and Output are the lengths of synthetic prompts and their
	// outputs (and of sessions' turns); Prefix the system prompts they
	// share.
	Input, Output Length
	Prefix        SharedPrefix
	// Sizing converts lengths to words, for every source but a dataset.
	Sizing Sizing
	// Seed makes the text and the lengths; run n uses Seed+n. 0 means a
	// fresh one, which the first Setup stores here, so that it can be
	// given again to repeat the runs' text on purpose.
	Seed uint64
	// Builder makes the requests.
	Builder Builder

	runs  int
	feeds []*Feed
}

// Validate reports synthetic prompts or sessions that cannot be made as
// asked, and a trace whose hash IDs do not fit its input lengths at
// Replay's block size (a [*FileError] naming the lines), before anything
// is sent. A dataset was checked when it was opened.
func (m *Mix) Validate() error {
	switch {
	case m.Trace != nil:
		return m.Trace.check(m.Replay)
	case m.Dataset != nil:
		if api := m.Builder.API; m.Dataset.Images > 0 && api != loadgen.Chat && api != loadgen.Responses && api != loadgen.Messages {
			return fmt.Errorf("workload: %s has %d records with images, and the %v API sends text alone: use chat, responses or messages", filepath.Base(m.Dataset.Path), m.Dataset.Images, api)
		}
		return nil
	case m.Turns != nil:
		return (&Sessions{Turns: m.Turns, Input: m.Input, Output: m.Output, Think: m.Think, Sizing: m.Sizing, MaxContext: m.MaxContext}).Validate()
	}
	return (&Synthetic{Input: m.Input, Output: m.Output, Prefix: m.Prefix, Sizing: m.Sizing}).Validate()
}

// Setup gives g the requests and the load of a new run: its Source, and
// its Load: load, but for a trace the trace's schedule (the run then lasts
// as long as the trace: Setup clears g's Duration, Warmup and Requests),
// and for sessions load with the think time between turns as its Pause,
// which must be a [loadgen.Closed] loop.
func (m *Mix) Setup(g *loadgen.Generator, load loadgen.Load) error {
	m.runs++
	if m.Seed == 0 {
		m.Seed = freshSeed()
	}
	seed := m.Seed + uint64(m.runs)
	var r Reader
	switch {
	case m.Trace != nil:
		rp := m.Replay
		rp.Sizing, rp.Seed = m.Sizing, seed
		r = m.Trace.Items(rp)
	case m.Dataset != nil:
		r = m.Dataset.Items(m.Output, seed)
	case m.Turns != nil:
		ss := &Sessions{Turns: m.Turns, Input: m.Input, Output: m.Output, Think: m.Think, Sizing: m.Sizing, Seed: seed, Builder: m.Builder, MaxContext: m.MaxContext}
		if err := ss.Validate(); err != nil {
			return err
		}
		closed, ok := load.(loadgen.Closed)
		if !ok {
			return fmt.Errorf("workload: sessions run in a closed loop, not %v: give a loadgen.Closed load", load)
		}
		closed.Pause = ss.Pause
		g.Source, g.Load = ss.Source, closed
		return nil
	default:
		syn := &Synthetic{Input: m.Input, Output: m.Output, Prefix: m.Prefix, Sizing: m.Sizing, Seed: seed}
		if err := syn.Validate(); err != nil {
			return err
		}
		r = syn.Reader()
	}
	f := NewFeed(r, &m.Builder)
	m.feeds = append(m.feeds, f)
	g.Source, g.Load = f.Source, load
	if m.Trace != nil {
		sched := f.Load()
		if s, ok := load.(loadgen.Schedule); ok {
			sched.MaxInFlight = s.MaxInFlight
		}
		g.Load = sched
		g.Duration, g.Warmup, g.Requests = 0, 0, 0
	}
	return nil
}

// Err returns the first error a file gave during the runs, nil when every
// run's file was read as far as it was needed.
func (m *Mix) Err() error {
	for _, f := range m.feeds {
		if err := f.Err(); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the files the runs read.
func (m *Mix) Close() error {
	var errs []error
	for _, f := range m.feeds {
		errs = append(errs, f.Close())
	}
	m.feeds = nil
	return errors.Join(errs...)
}

// String says what is sent, for a report: "synthetic prompts, uniform:256,1024
// tokens in, 128 out", "dataset sharegpt.json (1000 records), ...".
func (m *Mix) String() string {
	switch {
	case m.Trace != nil:
		scale := m.Replay.TimeScale
		if scale <= 0 {
			scale = 1
		}
		return fmt.Sprintf("trace %s (%s, %d requests over %v) at %g× its times", filepath.Base(m.Trace.Path), m.Trace.Format, m.Trace.Requests, m.Trace.Span.Round(time.Millisecond), scale)
	case m.Dataset != nil:
		d := fmt.Sprintf("dataset %s (%d records", filepath.Base(m.Dataset.Path), m.Dataset.Records)
		if m.Dataset.Images > 0 {
			d += fmt.Sprintf(", %d with images", m.Dataset.Images)
		}
		if m.Dataset.Skipped > 0 {
			d += fmt.Sprintf(", %d without a user turn skipped", m.Dataset.Skipped)
		}
		if m.Dataset.MissingImages > 0 {
			d += fmt.Sprintf(", %d whose image file is missing skipped", m.Dataset.MissingImages)
		}
		d += ")"
		if m.Output != nil {
			d += ", output " + m.Output.String() + " tokens"
		}
		return d
	case m.Turns != nil:
		return fmt.Sprintf("sessions of %v turns, %v tokens in and %v out a turn, %v think time", m.Turns, m.Input, m.Output, m.Think)
	}
	var d string
	switch m.Builder.API {
	case loadgen.Embeddings:
		d = fmt.Sprintf("synthetic inputs of %v tokens, %d a request", m.Input, max(m.Builder.Batch, 1))
	case loadgen.Rerank:
		d = fmt.Sprintf("synthetic queries and documents of %v tokens, %d documents a query", m.Input, max(m.Builder.Batch, 1))
	default:
		d = fmt.Sprintf("synthetic prompts, %v tokens in, %v out", m.Input, m.Output)
	}
	if m.Prefix.Groups > 0 {
		d += fmt.Sprintf(", %d shared prefixes of %d tokens", m.Prefix.Groups, m.Prefix.Tokens)
	}
	return d
}

// freshSeed returns a random seed, never 0: a zero Seed means "a fresh
// one" everywhere in this package.
func freshSeed() uint64 {
	for {
		if s := rand.Uint64(); s != 0 {
			return s
		}
	}
}
