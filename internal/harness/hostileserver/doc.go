// Package hostileserver is a misbehaving OpenAI-compatible server on
// loopback, for llmload's own tests of what its clients do when a server
// lies, stalls, floods or redirects. It is shaped like
// [net/http/httptest]: [New] starts it, [Server.Close] stops it, and
// [Server.URL] is its address.
//
// A [Mode] says how the server misbehaves. A server has one mode for every
// request, given to [New]; a request may pick another with a path prefix
// (see [Server.BaseURL]), so one server serves every mode:
//
//	srv := hostileserver.New(hostileserver.OK)
//	defer srv.Close()
//	c := &loadgen.Client{BaseURL: srv.BaseURL(hostileserver.EmptyDeltas)}
//
// Some modes take a parameter after "=", such as
// hostileserver.Redirect.With(302) or hostileserver.HugeHeader.With(1<<20).
//
// Completions requests (paths ending in /chat/completions or /completions)
// get an event stream; in [OK] mode it carries max_tokens tokens (8 when
// the request has none), with usage as the request's stream_options ask.
// GET /v1/models lists one model and GET /metrics answers a few vLLM
// gauges, so the discovery of a matrix run finds a server. Modes that
// shape a stream apply to completions requests only; the others (redirects,
// headers, informational responses, silence, a peer that is not HTTP, error
// pages) apply to every path.
//
// Every request is recorded with the origin it reached and the
// Authorization header it carried ([Server.Requests]), so a test can check
// that a credential never left its origin. Redirects point to a second
// origin, [Server.OtherURL] (the same host on another port), which serves
// healthy streams whatever the path's mode.
//
// Endless modes write from a fixed buffer: a 300 MB header line or a
// million informational responses cost the server no memory. Every endless
// mode stops when the client goes away or the server closes, and Close
// waits for the server's goroutines to end.
//
// The package is for llmload's tests only; others may add modes.
package hostileserver
