// Package matrix measures an LLM server's speed-test matrix: a
// context-length × concurrency grid of sustained decode throughput, with
// time to first token and time between tokens in every cell, and a prefill
// table; the cells that cannot fit in the server's KV cache are predicted
// and never sent.
//
// A [Spec] says what to measure; its zero fields take the seed page's
// defaults (see [Spec.WithDefaults]). A [Runner] measures it against a
// server and returns [Results]:
//
//  1. Plan: every cell's capacity verdict, from the limits the server
//     publishes and those the spec gives
//     ([github.com/llmload/llmload/capacity]). Cells that do not fit are
//     Over capacity and never sent; cells predicted to queue are measured.
//  2. Prompts whose size, as the server counts it, is their label, unique
//     per run and context.
//  3. The prefill table: cold requests on an idle server; prompt tokens ÷
//     time to first token.
//  4. Each cell: wait for an idle server, warm its prefix cache, start N
//     closed-loop streams, warm up until they are steady or the server
//     clearly queues them, measure one window while sampling the server's
//     /metrics, and classify: Valid, Requests queued, Over capacity or
//     Failed (see [Status]).
//
// [Results] are one Go value and a versioned JSON document ([Schema]),
// saved after every cell so that an interrupted run keeps what it measured
// and can be resumed ([SaveFile], [LoadFile], [ReadResults]). Package
// [github.com/llmload/llmload/matrix/report] renders them and compares
// runs.
//
// A password in the spec's URL and the client's API key are sent to the
// server's origin only and appear in nothing a run logs, saves or returns.
package matrix
