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
// A chat, Responses or Messages request that carries tools (and a
// tool_choice other than none) gets a tool call as its answer, after any
// reasoning: the tool tool_choice names, else the first; its arguments,
// {"input": the answer's text}, stream a piece a token, as chat's
// tool_calls deltas (the first with the call's id, type and name, as
// vLLM's tool parsers send them; finish_reason tool_calls), Responses'
// function_call item and response.function_call_arguments.delta events
// (then response.completed), or Messages' tool_use block and
// input_json_delta deltas (stop_reason tool_use).
//
// # Tokenizer
//
// Each maximal run of non-white-space characters is one token, so
// workload.Text(n, seed) is a prompt of n tokens. Chat requests go through a
// ChatML-like template that adds 5 tokens around each message and 3 for the
// reply's header (workload.SimulatorSizing(true)), so one user message of N
// tokens makes N+8 prompt tokens. Output token i is a space and a word,
// so the text of n output tokens counts back to n. The simulator has no
// end-of-sequence token: every request runs to max_tokens (by default, as
// vLLM, to max_model_len), with or without ignore_eos; min_tokens is checked
// and otherwise changes nothing.
//
// # Faults
//
// A request can ask for faults in the [FaultHeader] header, or after
// [FaultModelSuffix] in its model name, as a comma-separated list, e.g.
// "X-Llmload-Fault: chunk-tokens=4,crlf" or "model": "bench+fault=stall".
// A chunk below is an event that carries output tokens; faults due after K
// chunks happen only if the stream gets that far. Until such a fault has
// come, every chunk carries chunk-tokens tokens (1 by default), even when
// the handler lags the engine and would otherwise merge tokens into one
// chunk: reset-after=3 cuts a stream after exactly 3 tokens.
//
//	status=CODE          answer HTTP CODE with a vLLM error body, no stream
//	rate-limit=S         answer 429 with "Retry-After: S"
//	header-delay=D       wait D (a Go duration, wall time) before the headers
//	stall                send nothing, headers included, until the client leaves
//	stall-after=K        after K chunks send nothing more until the client leaves
//	reset-after=K        after K chunks reset the TCP connection (RST)
//	error-after=K        after K chunks send vLLM's in-stream error object, then [DONE]
//	malformed-after=K    after K chunks send one data line that is not JSON, then go on
//	eof-after=K          after K chunks end the body cleanly: no finish_reason, no [DONE]
//	no-done              end the stream without "data: [DONE]"
//	oversize=N           before the first chunk send a valid, token-less chunk padded to an N-byte line
//	chunk-tokens=K       K tokens per chunk (the last may carry fewer)
//	ping                 an SSE comment ": ping" before every event
//	sse-fields           "event: message" and "id: N" fields on every event
//	crlf                 CRLF line endings
//
// Faults that shape a stream apply to streaming requests; status,
// rate-limit, header-delay, stall and reset-after also apply to the others
// (reset-after resets before any response). The in-stream error is
// data: {"error": {"object": "error", "message": ..., "type": "InternalServerError", "param": null, "code": 500}}.
package loadgentest
