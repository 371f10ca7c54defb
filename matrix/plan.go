package matrix

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/llmload/llmload/capacity"
)

// Plan returns the grid's cells, in row order (contexts, then concurrency),
// each with its capacity verdict under limits. Cells predicted not to fit
// are decided at once: OverCapacity, with the verdict as the reason; the
// others are left to be measured.
func Plan(spec Spec, limits capacity.Limits) []Cell {
	spec = spec.WithDefaults()
	cells := make([]Cell, 0, len(spec.Contexts)*len(spec.Concurrency))
	for _, ctx := range spec.Contexts {
		for _, n := range spec.Concurrency {
			v := limits.Check(ctx, n, spec.MaxTokens)
			c := Cell{ContextTokens: ctx, Concurrency: n, Predicted: v}
			if !v.Fits {
				c.Status = OverCapacity
				c.Reason = "predicted: " + v.Detail
			}
			cells = append(cells, c)
		}
	}
	return cells
}

// WritePlan writes the plan: each cell's predicted verdict and why. KV
// tokens that are an estimate come with the range they are expected to fall
// in, and cells that fit only toward its optimistic end are run "at risk".
func WritePlan(w io.Writer, cells []Cell, limits capacity.Limits) error {
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
		verdict := "run"
		switch {
		case !c.Predicted.Fits:
			verdict = "skip: over capacity"
		case c.Predicted.AtRisk:
			verdict = "run, at risk"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", FormatTokens(c.ContextTokens), c.Concurrency, verdict, c.Predicted.Detail)
	}
	return tw.Flush()
}

func known(n int) string {
	if n <= 0 {
		return "unknown"
	}
	return fmt.Sprint(n)
}
