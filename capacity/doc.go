// Package capacity predicts whether an LLM inference server can hold a workload
// before it is sent, and reads the real capacity from a server that is running.
//
// A [Model] comes from a Hugging Face config.json ([LoadModel], [ParseConfig]):
// its attention layers, their key/value heads, and the per-sequence state of
// hybrid models' linear-attention (Gated DeltaNet) and Mamba layers.
// [EstimateVLLM] sizes the KV cache as vLLM does (memory budget, block size,
// hybrid page-size unification, layer groups sharing one block pool) and
// reports kv_cache_size_tokens and kv_cache_max_concurrency with vLLM's own
// formulas; the memory its profile run takes (activation, non-torch, CUDA
// graphs) follows the vLLM version given, with constants fitted to
// published start-up logs, and every estimate carries the range it is
// expected to fall in ([Estimate.Expected]) with the reasons.
// [EstimateSGLang] applies SGLang's max_total_num_tokens rule. Configs and
// launch flags no real model or server can have are refused with a
// [ConfigError] or [LaunchError] naming the field.
// [Discover] asks a running vLLM, SGLang, llama.cpp, TGI or Ollama server
// instead, which beats any estimate.
//
// Either way the result is a [Limits]: KV tokens, max running requests and
// max_model_len, each zero when unknown. [Limits.Check] gives one cell of a
// context × concurrency grid its [Verdict]: over capacity when one request
// (context + max output + chat-template overhead) exceeds max_model_len, or
// when the requests that run at once need more than the KV tokens
// (concurrency, at most the running-request limit, × (context + max
// output)); queued, not over capacity, when concurrency exceeds the
// running-request limit, since the server runs what it can and queues the
// rest. Where the KV tokens are an estimate, a cell that fits only toward
// the optimistic end of its range fits "at risk" ([Verdict.AtRisk]).
package capacity
