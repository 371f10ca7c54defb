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
//
// With -url, the server is asked as the other commands ask it: -model
// names the model on a server of several, -api-key-env and -header send
// credentials to -url's origin only, and -transport picks the client.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/cmd/cli"
	"github.com/llmload/llmload/internal/gib"
	"github.com/llmload/llmload/internal/setting"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/internal/tokencount"
)

func main() {
	cli.Main(func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		switch err := run(ctx, args, stdout, stderr); {
		case errors.Is(err, flag.ErrHelp):
		case err != nil:
			msg := textsafe.Line(err.Error())
			if !strings.HasPrefix(msg, "capacity: ") {
				msg = "capacity: " + msg
			}
			fmt.Fprintln(stderr, msg)
			return 1
		}
		return 0
	}, "")
}

// options are the command's flags.
type options struct {
	engine                                    capacity.Engine
	client                                    cli.ClientFlags
	config, version, dtype, gpuName           string
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
	o.engine = capacity.EngineVLLM
	fs.Func("engine", "`name` of the engine whose rules to apply: vllm (default) or sglang", func(s string) error {
		if e := capacity.Engine(s); e == capacity.EngineVLLM || e == capacity.EngineSGLang {
			o.engine = e
			return nil
		}
		return fmt.Errorf("want vllm or sglang, not %q", s)
	})
	o.client.RegisterServer(fs, "read the capacity from the running server at this `URL` instead of estimating it")
	fs.StringVar(&o.version, "vllm-version", "", "vLLM `version` whose memory profile and formulas to use; empty means the server's with -url, else "+capacity.DefaultVLLMVersion+"'s estimate with a range spanning every version's profile")
	fs.StringVar(&o.dtype, "dtype", "auto", "model dtype vLLM serves in: auto, bfloat16, float16 or float32")
	fs.Float64Var(&o.gpuMemGiB, "gpu-mem-gib", 0, "total memory of one GPU in GiB, as PyTorch reports it (11.76 for a 12 GB RTX 3060)")
	fs.StringVar(&o.gpuName, "gpu-name", "", "the GPU's `name` as PyTorch reports it (\"NVIDIA A100-SXM4-80GB\"): vLLM keeps an A100's scheduler defaults small whatever its memory")
	fs.Float64Var(&o.utilization, "gpu-memory-utilization", 0, "fraction of GPU memory vLLM may use (SGLang: --mem-fraction-static); 0 means the engine's default")
	fs.StringVar(&o.kvCacheDType, "kv-cache-dtype", "auto", "KV cache dtype as vLLM takes it: auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2, fp8_inc, fp8_per_token_head, int8_per_token_head, int4_per_token_head, nvfp4 or fp8_ds_mla (another is refused, naming these)")
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
	fs.StringVar(&o.contexts, "contexts", "0,16K,32K,64K,128K,248K", "prompt lengths of the grid's rows (K = 1024, M = 1024²)")
	fs.StringVar(&o.concurrency, "concurrency", "1,2,4,8,16,32,64,128", "concurrent requests of the grid's columns")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "how long -url may take")
	fs.BoolVar(&o.json, "json", false, "print JSON")
}

// report is the command's result; -json prints it as it is.
type report struct {
	Engine           capacity.Engine     `json:"engine"`
	Version          string              `json:"version,omitempty"`
	Source           string              `json:"source"`
	KVTokens         int                 `json:"kv_tokens"`
	KVTokensLow      int                 `json:"kv_tokens_low,omitempty"`  // an estimate's expected range
	KVTokensHigh     int                 `json:"kv_tokens_high,omitempty"` // likewise
	BlockSize        int                 `json:"block_size"`
	NumBlocks        int                 `json:"num_blocks"`
	MaxModelLen      int                 `json:"max_model_len"`
	MaxRunning       int                 `json:"max_running"`
	KVConcurrency    float64             `json:"max_concurrency,omitempty"`
	MaxTokens        int                 `json:"max_tokens"`
	TemplateOverhead int                 `json:"template_overhead"`
	Model            *capacity.Model     `json:"model,omitempty"`
	Estimate         *capacity.Estimate  `json:"estimate,omitempty"`
	Discovery        *capacity.Discovery `json:"discovery,omitempty"`
	Cells            []capacity.Cell     `json:"cells"`   // fits: the point estimate's verdict; at_risk: its range's
	AtOnce           []atOnce            `json:"at_once"` // per grid row: how many requests of its size run together
}

// atOnce is how many requests of one grid row's size run at once.
type atOnce struct {
	ContextTokens int `json:"context_tokens"`
	capacity.Concurrency
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
	o.client.WarnShortSecrets(stderr)
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	contexts, err := tokenList("-contexts", o.contexts)
	if err != nil {
		return err
	}
	concurrency, err := tokenList("-concurrency", o.concurrency)
	if err != nil {
		return err
	}

	r := &report{MaxTokens: o.maxTokens}
	var limits capacity.Limits
	if o.client.URL != "" {
		d, err := discover(ctx, &o.client, o.timeout)
		if err != nil {
			return err
		}
		r.Discovery = d
		r.Engine, r.Version = d.Engine, d.Version
		r.BlockSize, r.NumBlocks, r.KVConcurrency = d.BlockSize, d.NumGPUBlocks, d.KVConcurrency
		limits = d.Complete(capacity.Limits{KVTokens: o.kvTokens, MaxRunning: o.maxNumSeqs, MaxModelLen: o.maxModelLen, Source: "flags"})
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
			r.BlockSize, r.NumBlocks, r.KVConcurrency = e.BlockSize, e.NumBlocks, e.KVConcurrency
			limits = e.Limits()
		} else {
			// The server's own figures beat the estimate; the estimate's
			// fill in what the server does not publish.
			limits = limits.Merge(e.Limits())
		}
	case o.client.URL != "":
	default:
		return errors.New("give -config (a config.json or model directory) or -url (a running server)")
	}
	limits.TemplateOverhead = o.templateOverhead
	grid := limits.Grid(contexts, concurrency, o.maxTokens)
	r.Source = limits.Source
	r.KVTokens, r.KVTokensLow, r.KVTokensHigh = limits.KVTokens, limits.KVTokensLow, limits.KVTokensHigh
	r.MaxModelLen, r.MaxRunning = limits.MaxModelLen, limits.MaxRunning
	r.TemplateOverhead = setting.Resolve(limits.TemplateOverhead, capacity.DefaultTemplateOverhead)
	r.Cells = grid.Cells
	for _, c := range contexts {
		r.AtOnce = append(r.AtOnce, atOnce{ContextTokens: c, Concurrency: limits.Concurrency(c, o.maxTokens)})
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	if r.Estimate != nil {
		if err := r.Estimate.WriteText(stdout); err != nil {
			return err
		}
	}
	if r.Discovery != nil {
		if err := writeDiscovery(stdout, r.Discovery, limits); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintln(stdout); err != nil {
		return err
	}
	return grid.WriteText(stdout)
}

// tokenList reads a flag's list of token counts ("0,16K,32K"); it may not
// be empty.
func tokenList(name, s string) ([]int, error) {
	list, err := tokencount.ParseList(s)
	if err == nil && len(list) == 0 {
		err = errors.New("empty list")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return list, nil
}

// discover reads the capacity of the server the client flags name. The
// URL's password, the API key and credential headers are sent, never
// printed; the server's words are kept without their control characters.
func discover(ctx context.Context, client *cli.ClientFlags, timeout time.Duration) (*capacity.Discovery, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sec := client.Redactor()
	hc, err := client.HTTPClient(1)
	if err != nil {
		return nil, err
	}
	defer hc.CloseIdleConnections()
	d, err := capacity.DiscoverModel(ctx, hc, client.URL, client.Model)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("%w (-timeout %v bounds the whole discovery: raise it for a slow server)", sec.Error(err), timeout)
	case errors.Is(err, capacity.ErrNoAnswer):
		return nil, fmt.Errorf("%w (each request may take %v; -timeout, %v, bounds the whole discovery)", sec.Error(err), capacity.DefaultProbeTimeout, timeout)
	case err != nil:
		return nil, sec.Error(err)
	}
	clean := func(s string) string { return textsafe.Line(sec.Redact(s)) }
	for i := range d.Probes {
		d.Probes[i].Error = clean(d.Probes[i].Error)
	}
	for i, n := range d.Notes {
		d.Notes[i] = clean(n)
	}
	d.Limits.Source, d.Version, d.Model = clean(d.Limits.Source), clean(d.Version), clean(d.Model)
	return d, nil
}

func (o *options) estimate(m *capacity.Model) (*capacity.Estimate, error) {
	switch o.engine {
	case capacity.EngineVLLM:
		return capacity.EstimateVLLM(m, capacity.VLLM{
			Version:              o.version,
			DType:                o.dtype,
			GPUMemoryBytes:       gib.Bytes(o.gpuMemGiB),
			GPUName:              o.gpuName,
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
			WeightsBytes:         gib.Bytes(o.weightsGiB),
			ActivationBytes:      gib.Bytes(o.activationGiB),
			CUDAGraphBytes:       gib.Bytes(o.graphsGiB),
			NonTorchBytes:        gib.Bytes(o.nonTorchGiB),
			AvailableKVBytes:     gib.Bytes(o.availableGiB),
			NumGPUBlocksOverride: o.numGPUBlocks,
		})
	case capacity.EngineSGLang:
		return capacity.EstimateSGLang(m, capacity.SGLang{
			GPUMemoryBytes:     gib.Bytes(o.gpuMemGiB),
			MemFractionStatic:  o.utilization,
			KVCacheDType:       o.kvCacheDType,
			TensorParallelSize: o.tp,
			ContextLength:      o.maxModelLen,
			MaxRunningRequests: o.maxNumSeqs,
			LanguageModelOnly:  o.languageOnly,
			WeightsBytes:       gib.Bytes(o.weightsGiB),
			NonTorchBytes:      gib.Bytes(o.nonTorchGiB),
			AvailableKVBytes:   gib.Bytes(o.availableGiB),
		})
	}
	return nil, fmt.Errorf("-engine %s: want vllm or sglang", o.engine)
}

// flags name the flag that gives each limit.
var flags = map[capacity.LimitName]string{
	capacity.LimitKVTokens:    "-kv-tokens",
	capacity.LimitMaxRunning:  "-max-num-seqs",
	capacity.LimitMaxModelLen: "-max-model-len",
}

// writeDiscovery says what the server told, and which flags supply what
// neither it nor a flag gave.
func writeDiscovery(w io.Writer, d *capacity.Discovery, limits capacity.Limits) error {
	if err := d.WriteText(w); err != nil {
		return err
	}
	for _, g := range limits.Gaps(d.Engine) {
		line := fmt.Sprintf("%s: pass %s N", g.Limit, flags[g.Limit])
		switch {
		case g.FollowsFrom != "":
			line = fmt.Sprintf("%s: follows from %s (%s), or pass %s N", g.Limit, flags[g.FollowsFrom], g.Where, flags[g.Limit])
		case g.Where != "":
			line += " (" + g.Where + ")"
		}
		if _, err := fmt.Fprintf(w, "Not found  %s\n", line); err != nil {
			return err
		}
	}
	return nil
}
