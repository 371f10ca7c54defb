// Package matrix runs the speed-test matrix: a context-length ×
// concurrency grid of sustained decode throughput, with time to first token
// and time between tokens in every cell, a prefill table, and the cells
// that cannot fit in the server's KV cache predicted and never sent.
//
// A [Spec] says what to measure; its zero fields take the seed page's
// defaults (contexts 0 to 248K, 1 to 128 requests at once, prefill at 8K to
// 128K, 30 s a cell, 8,192 output tokens). A [Runner] measures it:
//
//  1. Plan: every cell's capacity verdict, from the server's own figures
//     where it publishes them (vLLM's cache_config_info, SGLang's server
//     info, llama.cpp's /props, TGI's /info, Ollama's /api/ps, ...),
//     completed by limits the user gives
//     ([github.com/llmload/llmload/capacity]). Cells and prefill rows that
//     do not fit are Over capacity and are never sent; cells with more
//     requests than the server runs at once are predicted to queue, and
//     measured.
//  2. Prompts whose size, as the server counts it, is their label: sized
//     with the server's /tokenize, or from a tokens-per-word rate
//     calibrated on small requests well within its context; unique per run
//     and context. Each context's first request checks the size against
//     the server's usage: a prompt more than 1% off is resized, one the
//     server cut to its context or refused makes its row Over capacity.
//  3. The prefill table: one cold request per prefill context, after the
//     server is idle; prompt tokens ÷ time to first token.
//  4. Each cell: wait for the server to be idle; send the prompt once to
//     warm its prefix cache (again after a reset, a 5xx or a 429, every
//     attempt counted); start N closed-loop streams
//     ([github.com/llmload/llmload/loadgen.Generator]); warm up until every
//     stream has decoded at once or every slot has finished a request, then
//     tokens have flowed for a few seconds, or until it is clear the server
//     queues (with the reason); measure one window while sampling the
//     server's /metrics once a second and the client's own streams every
//     10 ms; classify. A cell whose requests are starved (no token for a
//     long while and requests waiting) is ended early.
//
// A cell is Valid when all N requests ran at once, Requests queued when the
// server made requests wait: its waiting count, where it publishes one,
// showed requests waiting in most samples or its running count never
// reached N; else the client's own timeline showed the streams decoding at
// once held below N while others waited for a first token. A slot between
// two requests of its closed loop, or a stream waiting for its prompt's
// prefill, is not queued. Over capacity means predicted not to fit, cut or
// refused for length, or starved; Failed, that more than a threshold of
// its requests failed. One broken stream does not void a cell: failures
// are counted by kind. A cell whose total rate falls well short of its
// per-request rate × N says why in its notes.
//
// [Results] are one Go value and a versioned JSON document
// (schema llmload.matrix/v1), saved after every cell so an interruption
// keeps every finished cell and a later run can resume. Results render as a
// terminal table shaped like the seed page, Markdown, CSV, JSON and a
// self-contained HTML page; [Compare] sets two runs side by side, marking
// a figure better or worse only when it moved beyond the noise that the
// spread of each run's requests shows ([Interval]), and [CompareRuns]
// does so for repeated runs of each side.
//
// The server's text is data: every report prints it without control
// characters. A password in the spec's URL and the client's API key are
// used for the requests, the key only for the URL's origin, and appear in
// nothing a run logs, saves or returns.
package matrix
