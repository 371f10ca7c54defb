// Package loadgen sends streaming completion requests to an
// OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp, Ollama, OpenAI
// itself) and timestamps every token as it arrives.
//
// [Client.Stream] yields one response's chunks; [Client.Do] reads a whole
// response into a [Response]; [Client.Measure] fills a
// [github.com/llmload/llmload/metrics.Timeline] and hands every chunk's
// tokens to an [Observer] such as a
// [github.com/llmload/llmload/metrics.Recorder], without allocating per
// chunk. A [Generator] runs a [Load]: N requests kept in flight
// ([Closed]), requests sent at a rate ([Open]) or on a schedule such as a
// trace's ([Schedule]). [github.com/llmload/llmload/loadgen/workload]
// decides what it sends, [github.com/llmload/llmload/loadgen/sweep] runs
// it in sweeps and SLO searches, and
// [github.com/llmload/llmload/loadgen/loadgentest] is a simulated server
// to point it at.
//
// Embeddings and rerank requests ([Embeddings], [Rerank]) are not
// streamed: the answer is one JSON body, read whole within
// [Client.MaxBodySize], recorded with its input tokens and latency.
//
// A Client without an HTTPClient uses [NewTransport], net/http's transport
// with a pool as large as the load; [StreamTransport] takes much less
// memory for thousands of streams, times chunks by the kernel's receive
// timestamps on Linux, and with Poll reads every stream on a few shared
// pollers. [Run].ReadMode says which way a run's bodies were read.
//
// What counts as a token, a first token and a success is the [Client]'s
// doc. Every failure is an [*Error] of one
// [github.com/llmload/llmload/metrics.ErrorKind] ([KindOf]), with a typed
// cause; a [Generator], [Client] or [Request] that cannot work is refused
// before anything is sent with a [*ConfigError]. The client assumes
// nothing of the server: credentials stay with their origin, every wait
// has a deadline and every buffer a bound.
package loadgen
