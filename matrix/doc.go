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
//     publishes, completed by those the spec gives
//     ([github.com/llmload/llmload/capacity]). Cells that do not fit are
//     Over capacity and never sent; cells with more requests than the
//     server runs at once are predicted to queue, and measured.
//  2. Prompts whose size, as the server counts it, is their label, unique
//     per run and context; a prompt the server cut or refused makes its
//     row Over capacity.
//  3. The prefill table: one cold request per prefill context on an idle
//     server; prompt tokens ÷ time to first token.
//  4. Each cell: wait for an idle server, warm its prefix cache with the
//     prompt, start N closed-loop streams
//     ([github.com/llmload/llmload/loadgen.Generator]), warm up until the
//     streams are steady or it is clear the server queues them, measure
//     one window while sampling the server's /metrics and the client's own
//     streams, and classify.
//
// A cell is Valid when all N requests ran at once; Requests queued when the
// server made requests wait (its waiting count, or streams that waited for
// a first token while others decoded); Over capacity when predicted not to
// fit, cut or refused for length, or starved; Failed when more of its
// requests failed than [Spec.ErrorThreshold] allows. Failures are counted
// by kind, and figures that would contradict each other are explained in
// the cell's notes.
//
// [Results] are one Go value and a versioned JSON document ([Schema]),
// saved after every cell so that an interrupted run keeps what it measured
// and can be resumed. They render as a terminal table shaped like the seed
// page, Markdown, CSV, JSON and a self-contained HTML page (see [Format]).
// [CompareRuns] sets runs side by side, marking a figure
// better or worse only when it moved beyond the noise of each run's
// requests ([Interval]).
//
// The server's text is data: every report prints it without control
// characters. A password in the spec's URL and the client's API key are
// sent to the server's origin only and appear in nothing a run logs, saves
// or returns.
package matrix
