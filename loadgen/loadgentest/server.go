package loadgentest

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"
)

// Server is a simulated inference server listening on a loopback address,
// like an [httptest.Server] (whose URL, Client and Close it has).
type Server struct {
	*httptest.Server
	// Handler serves the requests; its Truth and Stats describe them.
	Handler *Handler
}

// NewServer starts a server simulating p. The caller must Close it.
func NewServer(p Profile) *Server {
	h := NewHandler(p)
	return &Server{Server: httptest.NewServer(h), Handler: h}
}

// Close stops the engine, ends the responses in flight, and shuts the server
// down. It leaves no goroutine behind.
func (s *Server) Close() {
	s.Handler.Close()
	s.Server.Close()
}

// Truth returns the server's ground truth: what it wrote and when.
func (s *Server) Truth() *Truth { return s.Handler.Truth() }

// Handler is the simulated server as an [http.Handler], for use with a
// server of one's own. It serves vLLM's OpenAI-compatible API:
//
//	POST /v1/completions         streaming and not
//	POST /v1/chat/completions    streaming and not
//	POST /v1/responses           streaming (OpenAI's Responses API, as vLLM serves it)
//	POST /v1/messages            streaming (Anthropic's Messages API, as vLLM serves it)
//	POST /v1/embeddings          OpenAI's shape, on a pooling model (see [Profile.PoolStep])
//	POST /v1/rerank              vLLM's (Cohere's, Jina's) shape, on the same pooling model
//	GET  /v1/models              with max_model_len
//	POST /tokenize               {"prompt": ...} or {"messages": ...}
//	GET  /health
//	GET  /metrics                Prometheus text format, vLLM's metric names
//	GET  /debug/truth            the ground truth as JSON (see [Truth])
//	GET  /dcgm/metrics           the GPUs' power and energy as NVIDIA's DCGM exporter publishes them, from the profile's power model
//
// Its engine runs in a goroutine of its own until Close.
type Handler struct {
	p       Profile
	eng     *engine
	pool    *pooler
	truth   *Truth
	mux     *http.ServeMux
	done    chan struct{}
	once    sync.Once
	idBase  string
	seq     atomic.Uint64
	chunks  atomic.Int64
	written atomic.Int64
	started time.Time
	power   *powerMeter // nil without a power model
}

// NewHandler returns a handler simulating p, its engine started. The caller
// must Close it.
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
// Its tokenizer: each maximal run of non-white-space characters is one token, so
// workload.Text(n, seed) is a prompt of n tokens. Chat requests go through a
// ChatML-like template that adds 5 tokens around each message and 3 for the
// reply's header (workload.SimulatorSizing(true)), so one user message of N
// tokens makes N+8 prompt tokens. Output token i is a space and a word,
// so the text of n output tokens counts back to n. The simulator has no
// end-of-sequence token: every request runs to max_tokens (by default, as
// vLLM, to max_model_len), with or without ignore_eos; min_tokens is checked
// and otherwise changes nothing.
func NewHandler(p Profile) *Handler {
	p = p.withDefaults()
	var b [8]byte
	rand.Read(b[:])
	h := &Handler{
		p:       p,
		eng:     newEngine(p),
		truth:   newTruth(p.TruthBytes),
		mux:     http.NewServeMux(),
		done:    make(chan struct{}),
		idBase:  hex.EncodeToString(b[:]),
		started: time.Now(),
	}
	if p.hasPower() {
		h.power = newPowerMeter(p, h.started)
		h.eng.power = h.power
	}
	h.eng.start()
	h.pool = newPooler(p, h.done)
	h.mux.HandleFunc("POST /v1/completions", h.serveGenerate)
	h.mux.HandleFunc("POST /v1/chat/completions", h.serveGenerate)
	h.mux.HandleFunc("POST /v1/responses", h.serveGenerate)
	h.mux.HandleFunc("POST /v1/messages", h.serveGenerate)
	h.mux.HandleFunc("POST /v1/embeddings", h.servePool)
	h.mux.HandleFunc("POST /v1/rerank", h.servePool)
	h.mux.HandleFunc("GET /v1/models", h.serveModels)
	h.mux.HandleFunc("POST /tokenize", h.serveTokenize)
	h.mux.HandleFunc("GET /health", func(http.ResponseWriter, *http.Request) {})
	h.mux.HandleFunc("GET /metrics", h.serveMetrics)
	h.mux.HandleFunc("GET /debug/truth", h.serveTruth)
	h.mux.HandleFunc("GET /dcgm/metrics", h.serveDCGM)
	return h
}

// ServeHTTP serves one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Close stops the engine and ends the responses still waiting on it; it is
// safe to call more than once.
func (h *Handler) Close() {
	h.once.Do(func() {
		close(h.done)
		h.eng.close()
	})
}

// Profile returns the profile served, its zero fields set to their defaults.
func (h *Handler) Profile() Profile {
	p := h.p
	p.DecodeBase = append([]BatchCost(nil), p.DecodeBase...)
	return p
}

// Truth returns the handler's ground truth: what it wrote and when.
func (h *Handler) Truth() *Truth { return h.truth }

// Stats is a snapshot of the engine, the numbers /metrics reports.
type Stats struct {
	Running            int           // requests in the running set
	Waiting            int           // requests waiting for admission
	KVBlocksUsed       int           // KV-cache blocks referenced by requests
	KVBlocks           int           // KV-cache capacity in blocks
	Steps              int64         // engine steps taken
	Preemptions        int64         // requests preempted for lack of KV blocks
	PromptTokens       int64         // prompt tokens of requests that got their first token
	GenerationTokens   int64         // tokens generated
	PrefixCacheQueries int64         // prompt tokens looked up in the prefix cache
	PrefixCacheHits    int64         // of those, tokens found
	Finished           int64         // requests that reached max_tokens
	Chunks             int64         // chunks written that carried output tokens
	WrittenTokens      int64         // output tokens written in those chunks
	Behind             time.Duration // wall time the engine fell behind its schedule and skipped
	Joules             float64       // energy the power model drew since the server started, over all GPUs, in wall time: /dcgm/metrics's ground truth
}

// Stats returns a snapshot of the engine's state and counters.
func (h *Handler) Stats() Stats {
	e := h.eng
	joules, _, _ := h.power.read(time.Now())
	return Stats{
		Running:            int(e.nRunning.Load()),
		Waiting:            int(e.nWaiting.Load()),
		KVBlocksUsed:       int(e.nUsed.Load()),
		KVBlocks:           e.cache.total,
		Steps:              e.steps.Load(),
		Preemptions:        e.preemptions.Load(),
		PromptTokens:       e.promptTokens.Load(),
		GenerationTokens:   e.generationTokens.Load(),
		PrefixCacheQueries: e.cacheQueries.Load(),
		PrefixCacheHits:    e.cacheHits.Load(),
		Finished:           e.finished.Load(),
		Chunks:             h.chunks.Load(),
		WrittenTokens:      h.written.Load(),
		Behind:             time.Duration(e.behind.Load()),
		Joules:             joules,
	}
}
