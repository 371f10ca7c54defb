// Package capacity predicts whether an LLM inference server can hold a
// workload before it is sent, and reads the real capacity from a server that
// is running.
//
// A [Model] comes from a Hugging Face config.json ([LoadModel],
// [ParseConfig]). [EstimateVLLM] and [EstimateSGLang] size its KV cache from
// one GPU's memory and the server's launch flags as each engine does. The
// [Estimate] carries the [Range] the KV tokens are expected to fall in, and
// [Estimate.WriteText] writes how it was derived, term by term. Configs and
// flags no real model or server can have are refused with an
// [InputError] naming the field. [DiscoverModel]
// asks a running vLLM, SGLang, llama.cpp, TGI or Ollama server instead; its
// figures beat any estimate.
//
// Either way the result is a [Limits]: KV tokens, max running requests and
// max_model_len, each zero when unknown. [Limits.Check] gives one cell of a
// context × concurrency grid its [Verdict]: it fits, fits with some requests
// queued, fits at risk, or is over capacity, and why; [Limits.Concurrency]
// says how many requests of one size run at once. [Limits.Grid] checks a
// whole grid.
//
// A [Server] names the server a run measured — its address, model,
// engine, version and limits — as matrix's and sweep's results record it.
package capacity
