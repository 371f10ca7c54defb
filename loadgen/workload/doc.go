// Package workload decides what a load test sends: request mixes beyond
// one repeated prompt, as plain values a custom benchmark composes.
//
// A [Reader] yields [Item]s — a request's messages, its prompt and output
// lengths and, in a trace, its arrival time — and a [Builder] makes each
// into a [github.com/llmload/llmload/loadgen.Request]; a [Feed] hands them
// to a [github.com/llmload/llmload/loadgen.Generator] as its Source and,
// for a trace, its Load (a [github.com/llmload/llmload/loadgen.Schedule]
// of the items' times). The Readers:
//
//   - [Synthetic]: random text whose input and output lengths are drawn
//     from a [Length] ([Fixed], [Uniform], [Normal], [LogNormal]; see
//     [ParseLength]), optionally after a system prompt shared by a group
//     of requests ([SharedPrefix]), as a prefix cache sees it.
//   - [Dataset]: a ShareGPT file (a JSON array or JSONL) or a JSONL file of
//     prompts, read from disk as requests need them, never whole.
//   - [Trace]: a Mooncake JSONL or Azure CSV trace, replayed at its
//     recorded times ([Replay]), each request with its input length, its
//     output length as max_tokens, and the prefixes its hash IDs share.
//
// [Sessions] are multi-turn conversations for a closed loop, whose history
// grows turn by turn, with a think time between turns (the Pause of a
// [github.com/llmload/llmload/loadgen.Closed] load).
//
// A [Mix] is one of these for a benchmark of several runs (a sweep, an SLO
// search): it gives each run requests of its own, says what it sends, and
// keeps the first error a file gave.
//
// Prompt sizes are exact under the simulator's tokenizer
// ([SimulatorSizing]); [Calibrate] measures a real server's [Sizing] from
// the prompt usage it reports.
//
// Files are read through before a run ([OpenDataset], [OpenTrace]): a
// malformed record is a [*ParseError] naming its line, and the run should
// refuse to start rather than measure another workload than the one asked
// for.
package workload
