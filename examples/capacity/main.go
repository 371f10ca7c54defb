// Command capacity predicts which cells of a context × concurrency grid an
// LLM inference server can hold, before anything is sent.
//
// From a model's config.json and the server's launch flags it sizes the KV
// cache as vLLM does (or SGLang, with -engine sglang) and prints the
// derivation term by term, each estimated term with the range it is expected
// to span and the KV tokens with the range they follow; with -url it reads
// the real figures from a running server instead (with -config too, the
// estimate uses the server's vLLM version, and the server's figures decide).
// Flags are named after vLLM's. Figures from the server's start-up log beat
// the estimate: pass "Model loading took X GiB" as -weights-gib and
// "Available KV cache memory: Y GiB" as -available-kv-gib.
//
//	capacity -config ./Qwen3.5-4B-AWQ-4bit -gpu-mem-gib 11.76 \
//	    -gpu-memory-utilization 0.94 -kv-cache-dtype int4_per_token_head \
//	    -max-model-len 262144 -max-num-seqs 128 -enable-prefix-caching \
//	    -language-model-only
//	capacity -url http://localhost:8000 -max-num-seqs 128 -json
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/loadgen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		msg := loadgen.CleanLine(err.Error())
		if !strings.HasPrefix(msg, "capacity: ") {
			msg = "capacity: " + msg
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	config, engine, url, version, dtype       string
	kvCacheDType, quantization                string
	gpuMemGiB, utilization                    float64
	maxModelLen, maxNumSeqs, maxBatchedTokens int
	kvTokens                                  int
	tp, pp, blockSize, weightBits             int
	prefixCaching, enforceEager, languageOnly bool
	weightsGiB, activationGiB, graphsGiB      float64
	nonTorchGiB, availableGiB                 float64
	numGPUBlocks                              int
	maxTokens, templateOverhead               int
	contexts, concurrency                     string
	timeout                                   time.Duration
	json                                      bool
}

func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.config, "config", "", "model `config.json` or model directory (safetensors headers give the exact weights)")
	fs.StringVar(&o.engine, "engine", "vllm", "engine whose rules to apply: vllm or sglang")
	fs.StringVar(&o.url, "url", "", "read the capacity from the running server at this `URL` instead of estimating it")
	fs.StringVar(&o.version, "vllm-version", "", "vLLM `version` whose memory profile and formulas to use; empty means the server's with -url, else "+capacity.DefaultVLLMVersion)
	fs.StringVar(&o.dtype, "dtype", "auto", "model dtype vLLM serves in: auto, bfloat16, float16 or float32")
	fs.Float64Var(&o.gpuMemGiB, "gpu-mem-gib", 0, "total memory of one GPU in GiB, as PyTorch reports it (11.76 for a 12 GB RTX 3060)")
	fs.Float64Var(&o.utilization, "gpu-memory-utilization", 0, "fraction of GPU memory vLLM may use (SGLang: --mem-fraction-static); 0 means the engine's default")
	fs.StringVar(&o.kvCacheDType, "kv-cache-dtype", "auto", "KV cache dtype: "+strings.Join(capacity.KVCacheDTypes, ", "))
	fs.IntVar(&o.maxModelLen, "max-model-len", 0, "longest request in tokens; 0 means the model's")
	fs.IntVar(&o.maxNumSeqs, "max-num-seqs", 0, "most requests running at once; 0 means vLLM's default (with -url: unknown unless the server publishes it)")
	fs.IntVar(&o.kvTokens, "kv-tokens", 0, "with -url: the KV cache's capacity in tokens, where the server does not publish it (its start-up log)")
	fs.IntVar(&o.maxBatchedTokens, "max-num-batched-tokens", 0, "tokens per scheduler step; 0 means vLLM's default")
	fs.IntVar(&o.tp, "tensor-parallel-size", 1, "GPUs the model is split over by tensor parallelism")
	fs.IntVar(&o.pp, "pipeline-parallel-size", 1, "pipeline stages")
	fs.IntVar(&o.blockSize, "block-size", 0, "attention block size in tokens; 0 means 16 (hybrid models raise it)")
	fs.BoolVar(&o.prefixCaching, "enable-prefix-caching", false, "prefix caching (on a hybrid model: two state blocks per sequence)")
	fs.BoolVar(&o.enforceEager, "enforce-eager", false, "no CUDA graphs")
	fs.BoolVar(&o.languageOnly, "language-model-only", false, "drop a multimodal model's vision encoder")
	fs.StringVar(&o.quantization, "quantization", "", "weight quantization method when not in the config (fp8, awq, gptq, ...)")
	fs.IntVar(&o.weightBits, "weight-bits", 0, "bits per quantized weight, overriding the config")
	fs.Float64Var(&o.weightsGiB, "weights-gib", 0, "weights per GPU in GiB (\"Model loading took X GiB\"); 0 means estimate")
	fs.Float64Var(&o.activationGiB, "activation-gib", 0, "activation peak in GiB; 0 means estimate")
	fs.Float64Var(&o.graphsGiB, "cuda-graph-gib", 0, "CUDA graph memory in GiB (\"Estimated CUDA graph memory\"); 0 means estimate")
	fs.Float64Var(&o.nonTorchGiB, "non-torch-gib", 0, "non-torch memory in GiB; 0 means estimate")
	fs.Float64Var(&o.availableGiB, "available-kv-gib", 0, "memory for the KV cache in GiB (\"Available KV cache memory\"); replaces the whole budget")
	fs.IntVar(&o.numGPUBlocks, "num-gpu-blocks-override", 0, "number of KV blocks, replacing the budget")
	fs.IntVar(&o.maxTokens, "max-tokens", 8192, "max output tokens per request")
	fs.IntVar(&o.templateOverhead, "template-overhead", 0, fmt.Sprintf("chat-template tokens counted against max_model_len; 0 means %d, -1 none", capacity.DefaultTemplateOverhead))
	fs.StringVar(&o.contexts, "contexts", "0,16K,32K,64K,128K,248K", "prompt lengths of the grid's rows (K = 1024)")
	fs.StringVar(&o.concurrency, "concurrency", "1,2,4,8,16,32,64,128", "concurrent requests of the grid's columns")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "how long -url may take")
	fs.BoolVar(&o.json, "json", false, "print JSON")
}

// report is the command's result; -json prints it as it is.
type report struct {
	Engine           string              `json:"engine"`
	Version          string              `json:"version,omitempty"`
	Source           string              `json:"source"`
	KVTokens         int                 `json:"kv_tokens"`
	KVTokensLow      int                 `json:"kv_tokens_low,omitempty"`  // an estimate's expected range
	KVTokensHigh     int                 `json:"kv_tokens_high,omitempty"` // likewise
	BlockSize        int                 `json:"block_size"`
	NumBlocks        int                 `json:"num_blocks"`
	MaxModelLen      int                 `json:"max_model_len"`
	MaxRunning       int                 `json:"max_running"`
	MaxConcurrency   float64             `json:"max_concurrency,omitempty"`
	MaxTokens        int                 `json:"max_tokens"`
	TemplateOverhead int                 `json:"template_overhead"`
	Model            *capacity.Model     `json:"model,omitempty"`
	Estimate         *capacity.Estimate  `json:"estimate,omitempty"`
	Discovery        *capacity.Discovery `json:"discovery,omitempty"`
	Cells            []cell              `json:"cells"`
}

type cell struct {
	ContextTokens int             `json:"context_tokens"`
	Concurrency   int             `json:"concurrency"`
	Fits          bool            `json:"fits"`
	AtRisk        bool            `json:"at_risk,omitempty"`
	Reason        capacity.Reason `json:"reason"`
	Detail        string          `json:"detail"`
	Need          int             `json:"need,omitempty"`
	Have          int             `json:"have,omitempty"`
}

// run is the command: it parses args, predicts, and writes to stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("capacity", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	o.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	contexts, err := parseList(o.contexts)
	if err != nil {
		return fmt.Errorf("-contexts: %w", err)
	}
	concurrency, err := parseList(o.concurrency)
	if err != nil {
		return fmt.Errorf("-concurrency: %w", err)
	}

	r := &report{MaxTokens: o.maxTokens}
	flagLimits := capacity.Limits{KVTokens: o.kvTokens, MaxRunning: o.maxNumSeqs, MaxModelLen: o.maxModelLen, Source: "flags"}
	var limits capacity.Limits
	if o.url != "" {
		ctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		// The URL's password is sent, never printed; the server's words are
		// printed without their control characters.
		sec := loadgen.NewRedactor(o.url)
		d, err := capacity.Discover(ctx, &http.Client{}, o.url)
		if err != nil {
			return sec.Error(err)
		}
		for i := range d.Probes {
			d.Probes[i].Error = loadgen.CleanLine(sec.Redact(d.Probes[i].Error))
			d.Probes[i].Err = sec.Error(d.Probes[i].Err)
		}
		for i, n := range d.Notes {
			d.Notes[i] = loadgen.CleanLine(sec.Redact(n))
		}
		d.Limits.Source = loadgen.CleanLine(sec.Redact(d.Limits.Source))
		r.Discovery = d
		r.Engine, r.Version = d.Engine.String(), d.Version
		r.BlockSize, r.NumBlocks, r.MaxConcurrency = d.BlockSize, d.NumGPUBlocks, d.MaxConcurrency
		limits = d.Complete(flagLimits)
		if o.version == "" && d.Engine == capacity.EngineVLLM {
			o.version = d.Version
		}
	}
	switch {
	case o.config != "":
		m, err := capacity.LoadModel(o.config)
		if err != nil {
			return err
		}
		e, err := o.estimate(m)
		switch {
		case errors.Is(err, capacity.ErrNoGPUMemory):
			return fmt.Errorf("%w: pass -gpu-mem-gib, or -available-kv-gib from the server's start-up log", err)
		case errors.Is(err, capacity.ErrInsufficientMemory) && e != nil:
			fmt.Fprintln(stderr, err) // still show the derivation
		case err != nil:
			return err
		}
		r.Model, r.Estimate = m, e
		if r.Discovery == nil {
			r.Engine, r.Version = e.Engine, e.Version
			r.BlockSize, r.NumBlocks, r.MaxConcurrency = e.BlockSize, e.NumBlocks, e.MaxConcurrency
			limits = e.Limits()
		} else {
			// The server's own figures beat the estimate; the estimate's
			// fill in what the server does not publish.
			limits = limits.Merge(e.Limits())
		}
	case o.url != "":
	default:
		return errors.New("give -config (a config.json or model directory) or -url (a running server)")
	}
	limits.TemplateOverhead = o.templateOverhead
	r.Source = limits.Source
	r.KVTokens, r.MaxModelLen, r.MaxRunning = limits.KVTokens, limits.MaxModelLen, limits.MaxRunning
	r.KVTokensLow, r.KVTokensHigh = limits.KVTokensLow, limits.KVTokensHigh
	r.TemplateOverhead = o.templateOverhead
	switch {
	case o.templateOverhead == 0:
		r.TemplateOverhead = capacity.DefaultTemplateOverhead
	case o.templateOverhead < 0:
		r.TemplateOverhead = 0
	}
	for _, c := range contexts {
		for _, n := range concurrency {
			v := limits.Check(c, n, o.maxTokens)
			r.Cells = append(r.Cells, cell{ContextTokens: c, Concurrency: n, Fits: v.Fits, AtRisk: v.AtRisk, Reason: v.Reason, Detail: v.Detail, Need: v.Need, Have: v.Have})
		}
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return writeText(stdout, r, contexts, concurrency)
}

func (o *options) estimate(m *capacity.Model) (*capacity.Estimate, error) {
	switch o.engine {
	case "vllm":
		return capacity.EstimateVLLM(m, capacity.VLLM{
			Version:              o.version,
			DType:                o.dtype,
			GPUMemoryBytes:       capacity.GiBToBytes(o.gpuMemGiB),
			GPUMemoryUtilization: o.utilization,
			KVCacheDType:         o.kvCacheDType,
			MaxModelLen:          o.maxModelLen,
			MaxNumSeqs:           o.maxNumSeqs,
			MaxNumBatchedTokens:  o.maxBatchedTokens,
			TensorParallelSize:   o.tp,
			PipelineParallelSize: o.pp,
			BlockSize:            o.blockSize,
			EnablePrefixCaching:  o.prefixCaching,
			EnforceEager:         o.enforceEager,
			LanguageModelOnly:    o.languageOnly,
			Quantization:         o.quantization,
			WeightBits:           o.weightBits,
			WeightsBytes:         capacity.GiBToBytes(o.weightsGiB),
			ActivationBytes:      capacity.GiBToBytes(o.activationGiB),
			CUDAGraphBytes:       capacity.GiBToBytes(o.graphsGiB),
			NonTorchBytes:        capacity.GiBToBytes(o.nonTorchGiB),
			AvailableKVBytes:     capacity.GiBToBytes(o.availableGiB),
			NumGPUBlocksOverride: o.numGPUBlocks,
		})
	case "sglang":
		return capacity.EstimateSGLang(m, capacity.SGLang{
			GPUMemoryBytes:     capacity.GiBToBytes(o.gpuMemGiB),
			MemFractionStatic:  o.utilization,
			KVCacheDType:       o.kvCacheDType,
			TensorParallelSize: o.tp,
			ContextLength:      o.maxModelLen,
			MaxRunningRequests: o.maxNumSeqs,
			LanguageModelOnly:  o.languageOnly,
			WeightsBytes:       capacity.GiBToBytes(o.weightsGiB),
			NonTorchBytes:      capacity.GiBToBytes(o.nonTorchGiB),
			AvailableKVBytes:   capacity.GiBToBytes(o.availableGiB),
		})
	}
	return nil, fmt.Errorf("-engine %q: want vllm or sglang", o.engine)
}

// parseList parses "0,16K,32K" with K = 1024 and M = 1024².
func parseList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		mult := 1
		switch {
		case strings.HasSuffix(f, "K"), strings.HasSuffix(f, "k"):
			mult, f = 1024, f[:len(f)-1]
		case strings.HasSuffix(f, "M"), strings.HasSuffix(f, "m"):
			mult, f = 1024*1024, f[:len(f)-1]
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a token count", f)
		}
		out = append(out, n*mult)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

// writeText prints the derivation and the predicted grid.
func writeText(w io.Writer, r *report, contexts, concurrency []int) error {
	p := &printer{w: w}
	if e := r.Estimate; e != nil {
		writeEstimate(p, r.Model, e)
	}
	if d := r.Discovery; d != nil {
		writeDiscovery(p, r, d)
	}
	kv := known(r.KVTokens)
	if r.KVTokensLow > 0 && r.KVTokensHigh > 0 {
		kv += fmt.Sprintf(" (expected %s–%s)", comma(r.KVTokensLow), comma(r.KVTokensHigh))
	}
	p.f("\nLimits     kv_tokens %s, max_running %s, max_model_len %s, template overhead %d\n",
		kv, known(r.MaxRunning), known(r.MaxModelLen), r.TemplateOverhead)
	if r.Source != "" {
		p.f("           from %s\n", r.Source)
	}
	p.f("\nPredicted grid: rows are context tokens, columns concurrent requests, %s output tokens each\n", comma(r.MaxTokens))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "context\t")
	for _, n := range concurrency {
		fmt.Fprintf(tw, "%d\t", n)
	}
	fmt.Fprintln(tw)
	i := 0
	for _, c := range contexts {
		fmt.Fprintf(tw, "%s\t", kTokens(c))
		for range concurrency {
			fmt.Fprintf(tw, "%s\t", mark(r.Cells[i]))
			i++
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	p.f("ok: fits; ok?: fits the known limits, others unknown; risk: fits only toward the optimistic end of the estimate's range; queue: fits, more requests than run at once wait in the server's queue; KV: over the KV tokens; len: over max_model_len\n")
	return p.err
}

// writeDiscovery says what the server told, from where, and which flags
// supply what it did not.
func writeDiscovery(p *printer, r *report, d *capacity.Discovery) {
	engine := d.Engine.String()
	switch {
	case d.Engine == capacity.EngineUnknown:
		engine = "unknown engine (it publishes none of the limits llmload reads)"
	case d.Version != "":
		engine += " " + d.Version
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
	found := d.Limits
	for _, f := range []struct {
		name string
		n    int
	}{{"kv_tokens", found.KVTokens}, {"max_running", found.MaxRunning}, {"max_model_len", found.MaxModelLen}} {
		if f.n > 0 {
			p.f("Found      %s %s (from %s)\n", f.name, comma(f.n), found.Source)
		}
	}
	if d.NumGPUBlocks > 0 {
		p.f("           %s blocks of %s tokens, max concurrency %.2f\n", comma(d.NumGPUBlocks), comma(d.BlockSize), d.MaxConcurrency)
	}
	for _, n := range d.Notes {
		p.f("           note: %s\n", n)
	}
	for _, m := range missing(d, r) {
		p.f("Not found  %s\n", m)
	}
}

// missing says, for each limit neither the server nor a flag gave, which
// flag gives it.
func missing(d *capacity.Discovery, r *report) []string {
	var out []string
	perSlot := d.Engine == capacity.EngineOllama || d.Engine == capacity.EngineLlamaCpp
	if r.MaxRunning <= 0 {
		s := "max_running: pass -max-num-seqs N"
		switch d.Engine {
		case capacity.EngineVLLM:
			s += " (vLLM's --max-num-seqs; 256 by default)"
		case capacity.EngineOllama:
			s += " (Ollama's OLLAMA_NUM_PARALLEL)"
		}
		out = append(out, s)
	}
	if r.KVTokens <= 0 {
		s := "kv_tokens: pass -kv-tokens N (from the server's start-up log)"
		if perSlot {
			s = "kv_tokens: follows from -max-num-seqs (" + d.Engine.String() + " holds a context per slot), or pass -kv-tokens N"
		}
		out = append(out, s)
	}
	if r.MaxModelLen <= 0 {
		s := "max_model_len: pass -max-model-len N"
		if d.Engine == capacity.EngineOllama {
			s += " (Ollama's context length: OLLAMA_CONTEXT_LENGTH or the model's num_ctx; it is published once the model is loaded)"
		}
		out = append(out, s)
	}
	return out
}

func writeEstimate(p *printer, m *capacity.Model, e *capacity.Estimate) {
	b := e.Budget
	p.f("Model      %s\n", m)
	if m.MLA != nil {
		p.f("           MLA latent %d + rope %d per token\n", m.MLA.KVLoraRank, m.MLA.QKRopeHeadDim)
	} else {
		p.f("           %d KV heads × head dim %d\n", m.NumKVHeads, m.HeadDim)
	}
	if g := m.GatedDeltaNet; g != nil {
		p.f("           Gated DeltaNet: %d key / %d value heads × %d, conv kernel %d\n", g.NumKeyHeads, g.NumValueHeads, g.ValueHeadDim, g.ConvKernel)
	}
	p.f("KV cache   %s: %s bytes per token per attention layer per GPU\n", e.KVCacheDType, comma(e.AttentionBytesPerToken))
	if e.StateBytes > 0 {
		p.f("State      %s bytes per sequence per state layer (convolution %s + recurrent %s)\n",
			comma(e.StateBytes), comma(e.ConvStateBytes), comma(e.RecurrentStateBytes))
	}
	engine := e.Engine
	if e.Version != "" {
		engine += " " + e.Version
	}
	p.f("\nMemory of one GPU (%s)\n", engine)
	gib := func(n int64) float64 { return float64(n) / capacity.GiB }
	line := func(label string, t capacity.Term) {
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
		line("total", capacity.Term{Bytes: b.TotalBytes, Low: b.TotalBytes, High: b.TotalBytes})
		line(fmt.Sprintf("× utilization %.2f", b.Utilization), capacity.Term{Bytes: b.RequestedBytes, Low: b.RequestedBytes, High: b.RequestedBytes})
		line("− weights", b.Weights)
		if e.Engine == "vllm" {
			line("− activation peak", b.Activation)
			line("− CUDA graphs", b.CUDAGraphs)
		}
		line("− non-torch", b.NonTorch)
	}
	line("= available for the KV cache", b.AvailableKV)

	p.f("\nBlocks\n")
	if e.Engine == "sglang" {
		p.f("  max_total_num_tokens %s = available ÷ %s bytes per token (all attention layers)\n", comma(e.KVTokens), comma(e.PageBytes))
	} else {
		p.f("  block size           %s tokens, page %s bytes per layer\n", comma(e.BlockSize), comma(e.PageBytes))
		kinds := map[capacity.LayerKind]int{}
		var order []capacity.LayerKind
		for _, g := range e.Groups {
			if kinds[g.Kind] == 0 {
				order = append(order, g.Kind)
			}
			kinds[g.Kind]++
		}
		var parts []string
		for _, k := range order {
			parts = append(parts, fmt.Sprintf("%d %s", kinds[k], k))
		}
		p.f("  groups               %d of up to %d layers: %s\n", len(e.Groups), e.LayersPerBlock, strings.Join(parts, ", "))
		p.f("  num_blocks           %s = available ÷ (%s × %d)\n", comma(e.NumBlocks), comma(e.PageBytes), e.LayersPerBlock)
		var per []string
		for _, g := range e.Groups {
			per = append(per, strconv.Itoa(g.BlocksPerRequest))
		}
		p.f("  per request          %s blocks at max_model_len %s (%s)\n", comma(e.BlocksPerRequest), comma(e.MaxModelLen), strings.Join(per, " + "))
		p.f("  kv_cache_size_tokens %s, max concurrency %.2f\n", comma(e.KVTokens), e.MaxConcurrency)
		if x := e.Expected; x.KVTokensLow != x.KVTokensHigh {
			p.f("                       expected %s–%s (%+.1f%% … %+.1f%%)\n", comma(x.KVTokensLow), comma(x.KVTokensHigh), x.LowPercent, x.HighPercent)
		} else {
			p.f("                       expected exactly this: no budget term was estimated\n")
		}
		p.f("                       group-aware (vLLM ≥ 0.20): int(%s ÷ %s × %s) = %s\n",
			comma(e.NumBlocks), comma(e.BlocksPerRequest), comma(e.MaxModelLen), comma(e.GroupAwareKVTokens))
		p.f("                       legacy (vLLM < 0.20): %s ÷ %d groups × %s = %s\n",
			comma(e.NumBlocks), len(e.Groups), comma(minBlock(e.Groups)), comma(e.LegacyKVTokens))
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
}

func minBlock(groups []capacity.Group) int {
	m := 0
	for _, g := range groups {
		if m == 0 || g.BlockSize < m {
			m = g.BlockSize
		}
	}
	return m
}

func mark(c cell) string {
	if c.AtRisk && c.Fits {
		return "risk"
	}
	switch c.Reason {
	case capacity.WithinLimits:
		return "ok"
	case capacity.LimitsUnknown:
		return "ok?"
	case capacity.OverKVTokens:
		return "KV"
	case capacity.OverMaxRunning:
		return "queue"
	case capacity.OverMaxModelLen:
		return "len"
	}
	return "?"
}

func kTokens(n int) string {
	if n > 0 && n%1024 == 0 {
		return strconv.Itoa(n/1024) + "K"
	}
	return strconv.Itoa(n)
}

func known(n int) string {
	if n <= 0 {
		return "unknown"
	}
	return comma(n)
}

// comma formats n with thousands separators.
func comma(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// printer writes formatted text and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
