package sweep

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/llmload/llmload/internal/errorkinds"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// modelNames returns the models of a run, in order of name.
func (r *Result) modelNames() []string {
	return slices.Sorted(maps.Keys(r.Models))
}

// share says a model's part of a run: "1500 of 2000 requests (75.0%)".
func (r *Result) share(m Result) string {
	pct := 0.0
	if r.Requests > 0 {
		pct = 100 * float64(m.Requests) / float64(r.Requests)
	}
	return fmt.Sprintf("%d of %d requests (%.1f%%)", m.Requests, r.Requests, pct)
}

// withModels returns runs with, after each run of several models, a row
// for each model: "· model NAME (75.0%)".
func withModels(runs []Result) []Result {
	out := make([]Result, 0, len(runs))
	for _, r := range runs {
		out = append(out, r)
		for _, name := range r.modelNames() {
			m := r.Models[name]
			pct := 0.0
			if r.Requests > 0 {
				pct = 100 * float64(m.Requests) / float64(r.Requests)
			}
			m.Label, m.Load, m.ClientLimited, m.Models = fmt.Sprintf("· model %s (%.1f%%)", name, pct), nil, "", nil
			out = append(out, m)
		}
	}
	return out
}

// writeTable writes the results for a terminal (see [Results.Write]).
func (r *Results) writeTable(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s against %s\n", r.what(), textsafe.Line(r.Server.String()))
	if r.Objective != nil {
		fmt.Fprintf(bw, "Objective: %v\n", r.Objective)
	}
	pooled := r.pooled()
	switch {
	case len(r.Runs) == 1:
		run := &r.Runs[0]
		writeBlock(bw, run, r.Objective != nil, pooled)
		for _, name := range run.modelNames() {
			m := run.Models[name]
			fmt.Fprintf(bw, "\nModel %s: %s\n", textsafe.Line(name), run.share(m))
			writeBlock(bw, &m, r.Objective != nil, pooled)
		}
	default:
		writeRows(bw, withModels(r.Runs), r.Objective != nil, pooled)
	}
	for i := range r.Runs {
		if why := r.Runs[i].ClientLimited; why != "" {
			fmt.Fprintf(bw, "† %s: the client may have limited this run (%s): its figures may be the client's, not the server's.\n", strings.TrimSuffix(r.Runs[i].name(), " †"), textsafe.Line(why))
		}
		if why := r.Runs[i].OverCapacity; why != "" {
			fmt.Fprintf(bw, "%s: over capacity, %s.\n", strings.TrimSuffix(r.Runs[i].name(), " †"), textsafe.Line(why))
		}
	}
	if modes := readModes(r.Runs); modes != "" {
		fmt.Fprintf(bw, "Bodies read by: %s\n", modes)
	}
	if f := r.Search; f != nil {
		fmt.Fprintf(bw, "\n%s\n", f.answer())
	}
	for _, n := range r.Notes {
		fmt.Fprintf(bw, "Note: %s\n", textsafe.Line(n))
	}
	return bw.Flush()
}

// pooled reports that the runs are of Embeddings or Rerank requests,
// which have input tokens and latency, and no output.
func (r *Results) pooled() bool {
	return r.API == loadgen.Embeddings || r.API == loadgen.Rerank
}

// what names the benchmark: "Sweep of synthetic prompts, ...".
func (r *Results) what() string {
	var p string
	switch r.Profile {
	case "sweep":
		p = "Sweep"
	case "slo":
		p = "SLO search"
		if r.Axis == AxisConcurrency {
			p += " over concurrency"
		}
	case "concurrency", "constant", "poisson", "gamma":
		switch {
		case len(r.Runs) > 1 && r.Axis == AxisConcurrency:
			p = "Concurrency sweep"
		case len(r.Runs) > 1 && r.Axis == AxisRate:
			p = "Rate sweep"
		default:
			p = "Benchmark"
		}
	case "trace":
		p = "Replay"
	default:
		p = "Benchmark"
	}
	if r.Workload == "" {
		return p
	}
	p += " of " + textsafe.Line(r.Workload)
	if r.ImageTokens > 0 {
		p += fmt.Sprintf(" (the images: %d prompt tokens a request, as the server counts them)", r.ImageTokens)
	}
	return p
}

// ms formats a duration in milliseconds.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond))
}

// writeBlock writes one run as vLLM's benchmark does; for an Embeddings
// or Rerank run (pooled), input tokens and latency alone, as there is no
// output.
func writeBlock(w io.Writer, run *Result, objective, pooled bool) {
	b := block{w}
	fmt.Fprintln(w, "============ Serving Benchmark Result ============")
	b.counts(run, objective, pooled)
	b.latencies(run, pooled)
	b.split(run)
	b.energy(run.Energy)
	fmt.Fprintln(w, "==================================================")
}

// block writes a run's block of the table, a figure a line.
type block struct{ w io.Writer }

func (b block) line(label, value string) { fmt.Fprintf(b.w, "%-40s %s\n", label+":", value) }

func (b block) head(title string) {
	pad := 50 - len(title)
	fmt.Fprintf(b.w, "%s%s%s\n", strings.Repeat("-", pad/2), title, strings.Repeat("-", pad-pad/2))
}

// counts writes the run's requests, tokens and throughput.
func (b block) counts(run *Result, objective, pooled bool) {
	s := &run.Summary
	if run.Load != nil {
		b.line("Load", run.Load.String())
	}
	b.line("Successful requests", fmt.Sprint(s.Completed))
	b.line("Failed requests", fmt.Sprint(s.Failed)+errorKinds(s.Errors))
	if s.Canceled > 0 {
		b.line("Cut at the end of the window", fmt.Sprint(s.Canceled))
	}
	if s.WarmupRequests > 0 {
		b.line("Warm-up requests (not counted)", fmt.Sprint(s.WarmupRequests))
	}
	window := fmt.Sprintf("%.2f", s.Window.Duration().Seconds())
	b.line("Benchmark duration (s)", window)
	if measured := fmt.Sprintf("%.2f", s.MeasuredFor.Seconds()); !pooled && s.MeasuredFor > 0 && measured != window {
		// The throughput's divisor: the window up to its last token.
		b.line("Measured to the last token (s)", measured)
	}
	if pooled {
		b.line("Total input tokens", fmt.Sprint(s.InputTokens))
		b.line("Request throughput (req/s)", fmt.Sprintf("%.2f", run.RequestRate))
		b.line("Input token throughput (tok/s)", fmt.Sprintf("%.2f", run.InputTokensPerSec))
	} else {
		if s.InputTokens > 0 && s.Completed > 0 {
			b.line("Total input tokens", fmt.Sprint(s.InputTokens))
			b.line("Mean input tokens a request", fmt.Sprintf("%.1f", float64(s.InputTokens)/float64(s.Completed)))
		}
		b.line("Total generated tokens", fmt.Sprint(s.OutputTokens))
		b.line("Request throughput (req/s)", fmt.Sprintf("%.2f", run.RequestRate))
		b.line("Output token throughput (tok/s)", fmt.Sprintf("%.2f", run.OutputTokensPerSec))
	}
	if objective {
		b.line("Request goodput (req/s)", fmt.Sprintf("%.2f", s.Goodput))
		b.line("Met the objective", fmt.Sprintf("%v (%.1f%% of requests)", yesNo(run.Met), run.GoodShare*100))
	}
	if _, closed := run.Load.(loadgen.Closed); !closed && run.Load != nil || run.Lateness.Count > 0 {
		b.line("Late arrivals", fmt.Sprintf("%d (start after due: p50 %s ms, p99 %s ms, max %s ms)", run.Late, ms(run.Lateness.P50), ms(run.Lateness.P99), ms(run.Lateness.Max)))
	}
	if s.ToolCalls > 0 {
		b.line("Requests that called a tool", fmt.Sprint(s.ToolCalls))
	}
	if s.ServerTimingsDropped > 0 {
		b.line("Server timings dropped", fmt.Sprintf("%d (not numbers, or longer than the client measured)", s.ServerTimingsDropped))
	}
	if s.ReasoningOverclaimed > 0 {
		b.line("Reasoning usage over the output", fmt.Sprintf("%d (counted as the output at most)", s.ReasoningOverclaimed))
	}
	if run.Queued > 0 {
		b.line("Arrivals queued on the client", fmt.Sprintf("%d (waited for a free slot under the in-flight cap)", run.Queued))
	}
}

// latencies writes the run's latency distributions.
func (b block) latencies(run *Result, pooled bool) {
	s := &run.Summary
	for _, d := range []struct {
		title, name string
		d           metrics.Distribution
	}{
		{"Time to First Token", "TTFT", s.TTFT},
		{"Time to First Output Token", "TTFO", s.TTFO},
		{"Time per Output Token (excl. 1st token)", "TPOT", s.TPOT},
		{"Inter-token Latency", "ITL", s.ITL},
		{"End-to-end Latency", "E2E", s.Latency},
		{"E2E Latency from the Scheduled Arrival", "E2E from arrival", s.LatencyFromDue},
	} {
		if _, closed := run.Load.(loadgen.Closed); d.name == "E2E from arrival" && (d.d.Count == 0 || closed) {
			continue // a closed loop has no schedule
		}
		if pooled && !strings.HasPrefix(d.name, "E2E") {
			continue // one body, no tokens
		}
		if d.name == "TTFO" && s.ReasoningTokens == 0 {
			continue // no reasoning: TTFO is TTFT
		}
		b.head(d.title)
		if d.name == "TTFO" {
			b.line("Reasoning tokens / answer tokens", fmt.Sprintf("%d / %d", s.ReasoningTokens, s.AnswerTokens))
		}
		fig := ms
		if d.d.Count == 0 {
			fig = func(time.Duration) string { return "—" } // nothing measured, not 0 ms
		}
		b.line("Mean "+d.name+" (ms)", fig(d.d.Mean))
		b.line("Median "+d.name+" (ms)", fig(d.d.P50))
		b.line("P90 "+d.name+" (ms)", fig(d.d.P90))
		b.line("P99 "+d.name+" (ms)", fig(d.d.P99))
	}
}

// split writes the TTFT split by the server's own timings, if it gave them.
func (b block) split(run *Result) {
	if sp := &run.Summary.Split; sp.Requests > 0 {
		b.head("TTFT by the Server's Timings")
		b.line("Requests with the server's timings", fmt.Sprint(sp.Requests))
		// Their own TTFT, which their parts add up to in the mean: the TTFT
		// above is over every request with a first token, cut ones too.
		b.line("Mean TTFT of these (ms)", ms(sp.TTFT.Mean))
		for _, d := range []struct {
			name string
			d    metrics.Distribution
		}{{"server queue", sp.Queue}, {"server prefill", sp.Prefill}, {"network and client", sp.Rest}} {
			b.line("Mean "+d.name+" (ms)", ms(d.d.Mean))
			b.line("P99 "+d.name+" (ms)", ms(d.d.P99))
		}
		if run.OutsideServer != "" {
			b.line("Outside the server", fmt.Sprintf("%.0f%% of TTFT: the %s's", 100*outsideShare(*sp), run.OutsideServer))
		}
	}
}

// energy writes the GPUs' energy, if it was read.
func (b block) energy(e *metrics.Energy) {
	if e != nil {
		b.head("GPU Energy")
		b.line("GPUs read", fmt.Sprintf("%d (%d readings in the window)", e.GPUs, e.Samples))
		b.line("Energy (J)", fmt.Sprintf("%.1f", e.Joules))
		b.line("Mean power (W)", fmt.Sprintf("%.1f", e.MeanWatts))
		b.line("Output tokens per joule", perToken(e.TokensPerJoule))
		b.line("Joules per output token", perToken(e.JoulesPerToken))
		if e.Utilization > 0 {
			b.line("Mean GPU utilization (%)", fmt.Sprintf("%.1f", e.Utilization))
		}
		if e.HourlyCost > 0 {
			b.line("Dollars per million output tokens", fmt.Sprintf("%s (at $%g a GPU an hour)", perToken(e.DollarsPerMillionTokens), e.HourlyCost))
		}
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// errorKinds lists failures by kind: " (stall ×2, server_status ×1)".
func errorKinds(m map[metrics.ErrorKind]int) string {
	if s := errorkinds.Format(m); s != "" {
		return " (" + s + ")"
	}
	return ""
}

// name is the run's label, with its load when the label does not say
// it: "throughput (concurrency 512)".
func (r *Result) name() string {
	label := textsafe.Line(r.Label)
	if r.Load != nil && label != r.Load.String() {
		load := r.Load.String()
		label += " (" + load + ")"
	}
	if r.ClientLimited != "" {
		label += " †"
	}
	return label
}

// writeRows writes one row a run: its requests and rates, its latencies
// (with pooled, for api Embeddings and Rerank, input tokens a second and
// the latency alone: there is no token stream to time), the objective's
// verdict where there is one, and the GPUs' energy where it was measured
// (per output token, and its cost, where there are output tokens).
func writeRows(w io.Writer, runs []Result, objective, pooled bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "run\trequests\tcompleted\tfailed\treq/s\t"
	if pooled {
		head += "in tok/s\tE2E ms mean\tp50\tp90\tp99\t"
	} else {
		head += "out tok/s\tTTFT ms mean\tp50\tp99\tTPOT ms mean\tp50\tp99\tITL ms mean\tp50\tp99\tE2E ms mean\tp50\tp99\t"
	}
	if objective {
		head += "goodput\tmet\t"
	}
	energy := slices.ContainsFunc(runs, func(r Result) bool { return r.Energy != nil })
	cost := !pooled && slices.ContainsFunc(runs, func(r Result) bool { return r.Energy != nil && r.Energy.HourlyCost > 0 })
	energyCols := 0
	if energy {
		head += "GPU J\tW\t"
		energyCols = 2
		if !pooled {
			head += "tok/J\tJ/tok\t"
			energyCols += 2
		}
		if cost {
			head += "$/M tok\t"
			energyCols++
		}
	}
	fmt.Fprintln(tw, head)
	for _, r := range runs {
		s := &r.Summary
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.2f\t", r.name(), r.Requests, s.Completed, s.Failed, r.RequestRate)
		if pooled {
			fmt.Fprintf(tw, "%.1f\t%s\t%s\t%s\t%s\t", r.InputTokensPerSec, ms(s.Latency.Mean), ms(s.Latency.P50), ms(s.Latency.P90), ms(s.Latency.P99))
		} else {
			fmt.Fprintf(tw, "%.1f\t", r.OutputTokensPerSec)
			for _, d := range []metrics.Distribution{s.TTFT, s.TPOT, s.ITL, s.Latency} {
				fmt.Fprintf(tw, "%s\t%s\t%s\t", ms(d.Mean), ms(d.P50), ms(d.P99))
			}
		}
		if objective {
			fmt.Fprintf(tw, "%.2f\t%s %.0f%%\t", s.Goodput, yesNo(r.Met), r.GoodShare*100)
		}
		switch e := r.Energy; {
		case e != nil:
			fmt.Fprintf(tw, "%.1f\t%.1f\t", e.Joules, e.MeanWatts)
			if !pooled {
				fmt.Fprintf(tw, "%s\t%s\t", perToken(e.TokensPerJoule), perToken(e.JoulesPerToken))
			}
			if cost {
				perMillion := 0.0
				if e.HourlyCost > 0 {
					perMillion = e.DollarsPerMillionTokens
				}
				fmt.Fprintf(tw, "%s\t", perToken(perMillion))
			}
		case energy:
			fmt.Fprint(tw, strings.Repeat("—\t", energyCols))
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
}

// perToken formats a figure per output token (tokens per joule, joules or
// dollars per token), or "—" for a run without output tokens, such as an
// Embeddings or Rerank run, where there is none.
func perToken(v float64) string {
	if !(v > 0) {
		return "—"
	}
	return fmt.Sprintf("%.4g", v)
}

// readModes names the ways the runs' bodies were read (see
// [Result].ReadMode), each once, in the order the runs first used them.
func readModes(runs []Result) string {
	var modes []string
	for i := range runs {
		if m := textsafe.Line(runs[i].ReadMode); m != "" && !slices.Contains(modes, m) {
			modes = append(modes, m)
		}
	}
	return strings.Join(modes, "; ")
}
