package capacity

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/llmload/llmload/internal/tokencount"
)

// WriteText writes the estimate's derivation, term by term: the model's
// attention and state geometry (when Model is set), the bytes one token and
// one sequence take, the memory of one GPU with the range each estimated
// term is expected to span, the blocks and the KV tokens with their
// expected range, and the reasons for that range.
func (e *Estimate) WriteText(w io.Writer) error {
	p := &textWriter{w: w}
	if m := e.Model; m != nil {
		p.f("Model      %s\n", m)
		if m.MLA != nil {
			p.f("           MLA latent %d + rope %d per token\n", m.MLA.KVLoraRank, m.MLA.QKRopeHeadDim)
		} else {
			p.f("           %d KV heads × head dim %d\n", m.NumKVHeads, m.HeadDim)
		}
		if g := m.GatedDeltaNet; g != nil {
			p.f("           Gated DeltaNet: %d key / %d value heads × %d, conv kernel %d\n", g.NumKeyHeads, g.NumValueHeads, g.ValueHeadDim, g.ConvKernel)
		}
	}
	p.f("KV cache   %s: %s bytes per token per attention layer per GPU\n", e.KVCacheDType, commaInt(e.AttentionBytesPerToken))
	if e.StateBytes > 0 {
		p.f("State      %s bytes per sequence per state layer (convolution %s + recurrent %s)\n",
			commaInt(e.StateBytes), commaInt(e.ConvStateBytes), commaInt(e.RecurrentStateBytes))
	}
	e.writeBudget(p)
	if e.Engine == EngineSGLang {
		p.f("\nBlocks\n")
		p.f("  max_total_num_tokens %s = available ÷ %s bytes per token (all attention layers)\n", commaInt(e.KVTokens), commaInt(e.PageBytes))
	} else {
		e.writeBlocks(p)
	}
	if len(e.Expected.Reasons) > 0 {
		p.f("\nExpected error\n")
		for _, r := range e.Expected.Reasons {
			p.f("  %s\n", r)
		}
	}
	for _, n := range e.Notes {
		p.f("  note: %s\n", n)
	}
	return p.err
}

// writeBudget writes the memory of one GPU, term by term.
func (e *Estimate) writeBudget(p *textWriter) {
	b := e.Budget
	p.f("\nMemory of one GPU (%s)\n", engineVersion(e.Engine, e.Version))
	gib := func(n int64) float64 { return float64(n) / gibibyte }
	line := func(label string, t Term) {
		rng := ""
		if t.Low != t.High {
			rng = fmt.Sprintf("%.2f–%.2f", gib(t.Low), gib(t.High))
		}
		detail := ""
		if t.Detail != "" {
			detail = "  " + t.Detail
		}
		p.f("%s\n", strings.TrimRight(fmt.Sprintf("  %-30s %8.2f GiB %13s%s", label, gib(t.Bytes), rng, detail), " "))
	}
	if b.AvailableKV.Estimated {
		exact := func(n int64) Term { return Term{Bytes: n, Low: n, High: n} }
		line("total", exact(b.TotalBytes))
		line(fmt.Sprintf("× utilization %.2f", b.Utilization), exact(b.RequestedBytes))
		line("− weights", b.Weights)
		if e.Engine == EngineVLLM {
			line("− activation peak", b.Activation)
			line("− CUDA graphs", b.CUDAGraphs)
		}
		line("− non-torch", b.NonTorch)
	}
	line("= available for the KV cache", b.AvailableKV)
}

// writeBlocks writes vLLM's block arithmetic: the groups sharing one pool,
// the blocks one request holds, and the KV tokens by each version's
// formula.
func (e *Estimate) writeBlocks(p *textWriter) {
	p.f("\nBlocks\n")
	p.f("  block size           %s tokens, page %s bytes per layer\n", commaInt(e.BlockSize), commaInt(e.PageBytes))
	count := map[layerKind]int{}
	var kinds []layerKind
	smallest := 0
	per := make([]string, 0, len(e.Groups))
	for _, g := range e.Groups {
		if count[g.Kind] == 0 {
			kinds = append(kinds, g.Kind)
		}
		count[g.Kind]++
		if smallest == 0 || g.BlockSize < smallest {
			smallest = g.BlockSize
		}
		per = append(per, strconv.Itoa(g.BlocksPerRequest))
	}
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", count[k], k))
	}
	p.f("  groups               %d of up to %d layers: %s\n", len(e.Groups), e.LayersPerBlock, strings.Join(parts, ", "))
	p.f("  num_blocks           %s = available ÷ (%s × %d)\n", commaInt(e.NumBlocks), commaInt(e.PageBytes), e.LayersPerBlock)
	p.f("  per request          %s blocks at max_model_len %s (%s)\n", commaInt(e.BlocksPerRequest), commaInt(e.MaxModelLen), strings.Join(per, " + "))
	p.f("  kv_cache_size_tokens %s, max concurrency %.2f\n", commaInt(e.KVTokens), e.KVConcurrency)
	if x := e.Expected; x.KVTokensLow != x.KVTokensHigh {
		p.f("                       expected %s–%s (%+.1f%% … %+.1f%%)\n", commaInt(x.KVTokensLow), commaInt(x.KVTokensHigh), x.LowPercent, x.HighPercent)
	} else {
		p.f("                       expected exactly this: no budget term was estimated\n")
	}
	p.f("                       group-aware (vLLM ≥ 0.20): int(%s ÷ %s × %s) = %s\n",
		commaInt(e.NumBlocks), commaInt(e.BlocksPerRequest), commaInt(e.MaxModelLen), commaInt(e.GroupAwareKVTokens))
	p.f("                       legacy (vLLM < 0.20): %s ÷ %d groups × %s = %s\n",
		commaInt(e.NumBlocks), len(e.Groups), commaInt(smallest), commaInt(e.LegacyKVTokens))
}

// WriteText writes the limits the grid was judged against, where they
// come from, and the grid: one row per context, one column per
// concurrency, each cell marked ok, ok?, risk, queue, KV or len, with a
// legend of the marks.
func (g *Grid) WriteText(w io.Writer) error {
	if len(g.Cells) != len(g.Contexts)*len(g.Concurrency) {
		return fmt.Errorf("capacity: a grid of %d × %d cells holds %d", len(g.Contexts), len(g.Concurrency), len(g.Cells))
	}
	p := &textWriter{w: w}
	l := g.Limits
	kv := knownCount(l.KVTokens)
	if l.KVTokensLow > 0 && l.KVTokensHigh > 0 {
		kv += fmt.Sprintf(" (expected %s–%s)", commaInt(l.KVTokensLow), commaInt(l.KVTokensHigh))
	}
	p.f("Limits     kv_tokens %s, max_running %s, max_model_len %s, template overhead %d\n",
		kv, knownCount(l.MaxRunning), knownCount(l.MaxModelLen), l.templateTokens())
	if l.Source != "" {
		p.f("           from %s\n", l.Source)
	}
	p.f("\nPredicted grid: rows are context tokens, columns concurrent requests, %s output tokens each\n", commaInt(g.MaxOutput))
	if p.err != nil {
		return p.err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "context\t")
	for _, n := range g.Concurrency {
		fmt.Fprintf(tw, "%d\t", n)
	}
	fmt.Fprintln(tw, "at once\t")
	for i, c := range g.Contexts {
		fmt.Fprintf(tw, "%s\t", tokencount.Format(c))
		for j := range g.Concurrency {
			fmt.Fprintf(tw, "%s\t", g.Cells[i*len(g.Concurrency)+j].mark())
		}
		fmt.Fprintf(tw, "%s\t\n", g.Limits.Concurrency(c, g.MaxOutput).text())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	p.f("at once: how many requests of the row's size run together with none queued, and the range the estimate gives; ")
	p.f("ok: fits; ok?: fits the known limits, others unknown; risk: within the estimate's range, which may hold it or not; queue: fits, more requests than run at once wait in the server's queue; KV: over the KV tokens; len: over max_model_len\n")
	return p.err
}

// knownCount writes a limit with thousands separators, or "unknown" for 0.
func knownCount(n int) string {
	if n <= 0 {
		return "unknown"
	}
	return commaInt(n)
}

// textWriter writes formatted text and keeps the first error.
type textWriter struct {
	w   io.Writer
	err error
}

func (p *textWriter) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// WriteText writes what the server told: its engine and version, the
// model, the requests made and their answers, the limits found and where
// from, vLLM's block figures, and the notes.
func (d *Discovery) WriteText(w io.Writer) error {
	p := &textWriter{w: w}
	engine := engineVersion(d.Engine, d.Version)
	if d.Engine == EngineUnknown {
		engine = "unknown engine (it publishes none of the limits llmload reads)"
	}
	p.f("Server     %s\n", engine)
	if d.Model != "" {
		p.f("           model %s\n", d.Model)
	}
	var asked []string
	for _, pr := range d.Probes {
		status := "no answer"
		if pr.Status != 0 {
			status = strconv.Itoa(pr.Status)
		}
		asked = append(asked, pr.Path+" "+status)
	}
	if len(asked) > 0 {
		p.f("           asked %s\n", strings.Join(asked, ", "))
	}
	// One line for what was found, and where: the source names each
	// figure's place, and is not split among them.
	found := d.Limits
	var figures []string
	for _, f := range []struct {
		name LimitName
		n    int
	}{{LimitKVTokens, found.KVTokens}, {LimitMaxRunning, found.MaxRunning}, {LimitMaxModelLen, found.MaxModelLen}} {
		if f.n > 0 {
			figures = append(figures, string(f.name)+" "+commaInt(f.n))
		}
	}
	if len(figures) > 0 {
		p.f("Found      %s (from %s)\n", strings.Join(figures, ", "), found.Source)
	}
	if d.NumGPUBlocks > 0 {
		p.f("           %s blocks of %s tokens, max concurrency %.2f\n", commaInt(d.NumGPUBlocks), commaInt(d.BlockSize), d.KVConcurrency)
	}
	for _, n := range d.Notes {
		p.f("           note: %s\n", n)
	}
	return p.err
}

// text is c as a grid prints it: "86", "86 (79–91)", or "?" when unknown.
func (c Concurrency) text() string {
	switch {
	case c.Requests < 0:
		return "?"
	case c.Low != c.Requests || c.High != c.Requests:
		return fmt.Sprintf("%d (%d–%d)", c.Requests, c.Low, c.High)
	}
	return strconv.Itoa(c.Requests)
}
