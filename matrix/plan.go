package matrix

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/llmload/llmload/internal/figure"

	"github.com/llmload/llmload/capacity"
)

// planCells returns the grid's cells, in row order (contexts, then concurrency),
// each with its capacity verdict under limits. Cells predicted not to fit,
// even at the optimistic end of an estimate's range (not at risk), are
// decided at once: OverCapacity, with the verdict as the reason. Cells
// predicted to queue (more requests than the server runs at once) are
// measured, unless the spec skips them: then they are RequestsQueued by
// prediction. The others are left to be measured. spec is the settled
// one (see Runner.settle).
func planCells(spec Spec, limits capacity.Limits) []Cell {
	cells := make([]Cell, 0, len(spec.Contexts)*len(spec.Concurrency))
	for _, ctx := range spec.Contexts {
		for _, n := range spec.Concurrency {
			v := limits.Check(ctx, n, spec.MaxTokens)
			c := Cell{ContextTokens: ctx, Concurrency: n, Predicted: v}
			switch {
			case !v.Fits && !v.AtRisk:
				c.Status = OverCapacity
				c.Reason = "predicted: " + v.Detail
			case v.Queued && spec.SkipQueued:
				c.Status = RequestsQueued
				c.Reason = "predicted, not measured: " + v.Detail
			}
			cells = append(cells, c)
		}
	}
	return cells
}

// planPrefill returns the prefill table's rows, each checked against
// limits as a cell of one request with one output token: a row predicted
// not to fit (longer than max_model_len) is decided at once, OverCapacity,
// and never sent.
func planPrefill(spec Spec, limits capacity.Limits) []Prefill {
	rows := make([]Prefill, 0, len(spec.Prefill))
	for _, ctx := range spec.Prefill {
		v := limits.Check(ctx, 1, 1)
		p := Prefill{ContextTokens: ctx, Predicted: v}
		if !v.Fits && !v.AtRisk {
			p.Status = OverCapacity
			p.Reason = "predicted: " + v.Detail
		}
		rows = append(rows, p)
	}
	return rows
}

// writeCellPlan writes the plan: each cell's predicted verdict and why. KV
// tokens that are an estimate come with the range they are expected to fall
// in, and cells that fit only toward its optimistic end are run "at risk".
func writeCellPlan(w io.Writer, cells []Cell, limits capacity.Limits) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	src := limits.Source
	if src == "" {
		src = "none"
	}
	kv := known(limits.KVTokens)
	if limits.KVTokensLow > 0 && limits.KVTokensHigh > 0 && limits.KVTokens > 0 {
		kv += fmt.Sprintf(" (expected %d–%d, %+.1f%% … %+.1f%%)", limits.KVTokensLow, limits.KVTokensHigh,
			100*float64(limits.KVTokensLow-limits.KVTokens)/float64(limits.KVTokens),
			100*float64(limits.KVTokensHigh-limits.KVTokens)/float64(limits.KVTokens))
	}
	fmt.Fprintf(tw, "Plan (limits from %s: KV tokens %s, max running %s, max_model_len %s)\n",
		src, kv, known(limits.MaxRunning), known(limits.MaxModelLen))
	fmt.Fprintf(tw, "context\tconcurrency\tverdict\twhy\n")
	for _, c := range cells {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", formatTokens(c.ContextTokens), c.Concurrency, verdictWords(c), c.Predicted.Detail)
	}
	return tw.Flush()
}

// verdictWords is what the plan says it will do with a cell.
func verdictWords(c Cell) string {
	switch {
	case !c.Predicted.Fits && !c.Predicted.AtRisk:
		return "skip: over capacity"
	case c.Predicted.Queued && c.Status == RequestsQueued:
		return "skip: requests would queue"
	case c.Predicted.Queued:
		return "run: requests will queue"
	case c.Predicted.AtRisk:
		return "run, at risk"
	}
	return "run"
}

// writePlan writes the plan of a run: the prefill rows, the cells, and how
// long the run should take.
func writePlan(w io.Writer, res *Results, limits capacity.Limits) error {
	if err := writeCellPlan(w, res.Cells, limits); err != nil {
		return err
	}
	var over []string
	for _, p := range res.Prefill {
		if p.Status == OverCapacity {
			over = append(over, formatTokens(p.ContextTokens))
		}
	}
	if len(over) > 0 {
		fmt.Fprintf(w, "prefill at %s: skip: over capacity (longer than max_model_len %d)\n", strings.Join(over, ", "), limits.MaxModelLen)
	}
	e := estimateRun(res)
	if e.Cells == 0 && e.Prefill == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "expected: %s\n", e.describe())
	return err
}

// runEstimate is how long a run should take, before it starts: every cell
// to measure costs at least its warm-up's least time plus its window, at
// most its warm-up timeout plus its window; every prefill row and every
// cell also sends one request whose time depends on the server's prefill
// speed, unknown before the run.
type runEstimate struct {
	// Cells and Prefill count the cells and prefill rows to run.
	Cells, Prefill int
	// Least and Most bound the cells' time.
	Least, Most time.Duration
	// Unknown lists the limits the plan did not know, so cells it could
	// not rule out may be run only to be found over capacity.
	Unknown []string
}

// estimateRun estimates how long the undecided cells and prefill rows of
// res take; res.Spec is the settled one (see Runner.settle).
func estimateRun(res *Results) runEstimate {
	spec := res.Spec
	w := *spec.WarmupRule
	var e runEstimate
	for _, c := range res.Cells {
		if c.Status != StatusUnknown && (c.Measurement == nil || !c.Measurement.Partial) {
			continue
		}
		e.Cells++
		window := spec.Duration
		e.Least += w.Min + w.Flow + window
		e.Most += w.Timeout + w.PerContextK*time.Duration(c.ContextTokens/tokensK) + window
	}
	for _, p := range res.Prefill {
		if p.Status == StatusUnknown || p.Status == Failed {
			e.Prefill++
		}
	}
	l := res.Server.Limits
	if l.KVTokens <= 0 {
		e.Unknown = append(e.Unknown, "kv_tokens")
	}
	if l.MaxRunning <= 0 {
		e.Unknown = append(e.Unknown, "max_running")
	}
	if l.MaxModelLen <= 0 {
		e.Unknown = append(e.Unknown, "max_model_len")
	}
	return e
}

// describe says the estimate in words.
func (e runEstimate) describe() string {
	wall := func(d time.Duration) string {
		switch {
		case d >= time.Hour:
			return fmt.Sprintf("%.1f h", d.Hours())
		case d >= time.Minute:
			return fmt.Sprintf("%.0f min", d.Minutes())
		}
		return fmt.Sprintf("%.0f s", max(d.Seconds(), 1))
	}
	s := fmt.Sprintf("%s to measure, at least %s, at most %s if every warm-up runs to its timeout",
		figure.Plural(e.Cells, "cell", "cells"), wall(e.Least), wall(e.Most))
	if e.Prefill > 0 || e.Cells > 0 {
		s += fmt.Sprintf("; plus %s and one scout a cell, as fast as the server prefills",
			figure.Plural(e.Prefill, "prefill request", "prefill requests"))
	}
	if len(e.Unknown) > 0 {
		s += "; limits unknown (" + strings.Join(e.Unknown, ", ") + "): cells beyond them are sent, not predicted"
	}
	return s
}

func known(n int) string {
	if n <= 0 {
		return "unknown"
	}
	return fmt.Sprint(n)
}
