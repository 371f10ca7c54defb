// Package loadgentest provides a simulated LLM inference server for tests and
// benchmarks, shaped like net/http/httptest: [NewServer] starts one on a
// loopback address, [NewHandler] gives its [http.Handler].
//
// The server speaks vLLM's OpenAI-compatible API over real HTTP: streamed
// and whole completions and chat completions, /v1/models, /tokenize, /health
// and /metrics with vLLM's metric names, and /v1/embeddings and /v1/rerank
// on a batched pooling model of their own ([Profile].PoolStep). Behind
// the generation APIs an engine steps like vLLM's V1 scheduler: each step
// decodes one token for every running request
// and prefills waiting prompts in chunks under a token budget; KV-cache
// blocks are allocated as contexts grow, a request is admitted only when its
// blocks are free and otherwise waits in FIFO order, the newest request is
// preempted and later recomputed when decoding runs out of blocks, and full
// prompt blocks are cached by hash for later prompts with the same prefix.
// Each step takes the time its [Profile] gives it; [SeedProfile] is
// calibrated to a real vLLM run, and [Profile.Speed] runs it faster than real
// time. The server records when it wrote each chunk ([Truth]), so tests can
// compare what a client measured with what was sent.
//
// A request that carries tools is answered with a tool call, and a
// request can ask for faults (a status, a stall, a reset, a malformed
// chunk…): see [NewHandler] for the tokenizer and tools and [FaultHeader]
// for the faults.
package loadgentest
