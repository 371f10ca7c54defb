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
//     info, ...), completed by limits the user gives
//     ([github.com/llmload/llmload/capacity]). Cells that do not fit are
//     Over capacity and are never sent.
//  2. Prompts of exact token counts, sized with the server's /tokenize or
//     calibrated from its usage, unique per run and context.
//  3. The prefill table: one cold request per prefill context, after the
//     server is idle; prompt tokens ÷ time to first token.
//  4. Each cell: wait for the server to be idle; send the prompt once to
//     warm its prefix cache; start N closed-loop streams
//     ([github.com/llmload/llmload/loadgen.Generator]); warm up until every
//     stream has a token, nothing waits and tokens have flowed for a few
//     seconds (bounded by a timeout that grows with context); measure one
//     window while sampling the server's /metrics once a second; classify.
//     A cell whose requests are starved (no token for a long while and
//     requests waiting) is ended early.
//
// A cell is Valid when all N requests ran at once, Requests queued when the
// server could not run them all (the warm-up timed out, a waiting request
// was sampled, or the running count fell below N), Over capacity when it
// was predicted not to fit or was starved or rejected for length, and
// Failed when more than a threshold of its requests failed. One broken
// stream does not void a cell: failures are counted by kind.
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
