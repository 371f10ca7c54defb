package capacity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/promtext"
)

// maxProbeBody bounds the bytes read from one probe's response.
const maxProbeBody = 16 << 20

// DefaultProbeTimeout bounds each of Discover's requests: a server that
// accepts a connection and never answers does not hold Discover longer.
const DefaultProbeTimeout = 10 * time.Second

// probeTimeout is DefaultProbeTimeout, shortened by tests.
var probeTimeout = DefaultProbeTimeout

// ErrUnreachable reports a server that answered none of Discover's requests.
var ErrUnreachable = errors.New("capacity: server unreachable")

// statusError is a non-2xx answer to one of Discover's requests; the
// status is also in [Probe.Status].
type statusError struct {
	method     string // the request's method
	url        string // the request's URL, without a password
	statusCode int    // the response's status
	body       string // the start of the body
}

// Error says the request, the status and the start of the body, on one
// line.
func (e *statusError) Error() string {
	return fmt.Sprintf("capacity: %s %s returned %d: %s", e.method, e.url, e.statusCode, strings.Join(strings.Fields(e.body), " "))
}

// ErrNoAnswer reports a request of Discover's that got no answer within
// DefaultProbeTimeout: a server that accepts connections and says nothing.
var ErrNoAnswer = errors.New("capacity: no answer in time")

// Engine names an inference server's engine, as results files write it:
// "vllm", "sglang", "llama.cpp", "tgi" or "ollama"; "" when not identified.
type Engine string

// Engines. The zero value means "not identified".
const (
	EngineUnknown  Engine = ""
	EngineVLLM     Engine = "vllm"
	EngineSGLang   Engine = "sglang"
	EngineLlamaCpp Engine = "llama.cpp"
	EngineTGI      Engine = "tgi"
	EngineOllama   Engine = "ollama"
)

// Probe is one request Discover made and what came of it.
type Probe struct {
	Path   string `json:"path"`             // e.g. "/metrics"
	Status int    `json:"status,omitempty"` // 0 when no response came
	Error  string `json:"error,omitempty"`  // a transport error or the non-2xx status with the start of its body; empty for a 2xx answer
}

// Discovery is what a running server says about its capacity. A limit the
// server does not publish stays zero (unknown) in Limits.
type Discovery struct {
	Engine        Engine            `json:"engine"`                    // the engine that answered
	Version       string            `json:"version,omitempty"`         // the engine's version, where it tells it
	Model         string            `json:"model,omitempty"`           // the model whose limits were read, where the server serves several (Ollama)
	Limits        Limits            `json:"limits"`                    // what it publishes; unknown limits are zero
	NumGPUBlocks  int               `json:"num_gpu_blocks,omitempty"`  // vLLM's num_gpu_blocks label
	BlockSize     int               `json:"block_size,omitempty"`      // vLLM's block_size label
	KVConcurrency float64           `json:"max_concurrency,omitempty"` // vLLM's kv_cache_max_concurrency label: its "Maximum concurrency" for requests of max_model_len
	CacheConfig   map[string]string `json:"cache_config,omitempty"`    // all vllm:cache_config_info labels as served
	Notes         []string          `json:"notes,omitempty"`           // caveats about the figures
	Probes        []Probe           `json:"probes"`                    // the requests made, in order
}

// DiscoverModel asks the server at baseURL ("http://host:8000", with or without
// "/v1") for its capacity and version: vLLM's GET /metrics
// (vllm:cache_config_info), GET /v1/models (max_model_len) and GET /version;
// SGLang's GET /get_server_info; llama.cpp's GET /props; TGI's GET /info;
// Ollama's GET /api/version, GET /api/ps and POST /api/show. It stops at the
// first engine that answers. model names the model whose limits to read
// on servers that serve several and publish limits per model (Ollama); ""
// means the one loaded.
//
// A server that answers but publishes none of these gets Engine
// EngineUnknown and unknown limits, not a guess. Each request has
// DefaultProbeTimeout; once one goes unanswered, the server is not asked
// again. The error is ErrUnreachable (wrapping the transport error) when no
// request got an answer; when ctx ends, an error wrapping the context's
// that names the request it ended and how far its answer got. client nil
// means http.DefaultClient.
func DiscoverModel(ctx context.Context, client *http.Client, baseURL, model string) (*Discovery, error) {
	if client == nil {
		client = http.DefaultClient
	}
	base := strings.TrimSuffix(strings.TrimRight(baseURL, "/"), "/v1")
	p := &prober{ctx: ctx, client: client, base: base, shown: redactURL(base), model: model}
	d := &Discovery{}
	defer func() { d.Probes = p.probes }()

	for _, step := range []func(*Discovery) bool{p.vllm, p.sglang, p.llamaCpp, p.tgi, p.ollama} {
		if step(d) || p.silent {
			break
		}
		if ctx.Err() != nil {
			return d, p.ctxErr()
		}
	}
	if d.Engine == EngineUnknown && p.answered && !p.silent {
		if n := p.modelsMaxLen(); n > 0 {
			d.Limits.MaxModelLen = n
			d.Limits.Source = "GET /v1/models"
		}
		d.Notes = append(d.Notes, "the server publishes no KV-cache capacity: limits unknown")
	}
	if ctx.Err() != nil {
		return d, p.ctxErr()
	}
	if !p.answered {
		return d, fmt.Errorf("%w: %s: %w", ErrUnreachable, p.shown, p.firstErr)
	}
	if p.silent {
		d.Notes = append(d.Notes, fmt.Sprintf("the server stopped answering (no answer within %v, each request's bound): limits unknown", probeTimeout))
	}
	return d, nil
}

// Complete returns the discovered limits completed by the ones a user
// gives (see [Limits.Merge]), and by what follows from them on this
// engine: on llama.cpp and Ollama every slot holds a context of its own,
// so the KV cache holds MaxRunning × MaxModelLen tokens.
func (d *Discovery) Complete(given Limits) Limits {
	l := d.Limits.Merge(given)
	if l.KVTokens <= 0 && l.MaxRunning > 0 && l.MaxModelLen > 0 && (d.Engine == EngineOllama || d.Engine == EngineLlamaCpp) {
		l.KVTokens = l.MaxRunning * l.MaxModelLen
		if l.Source != "" {
			l.Source += "; "
		}
		l.Source += "kv_tokens = max_running × max_model_len (" + string(d.Engine) + " holds a context per slot)"
	}
	return l
}

type prober struct {
	ctx      context.Context
	client   *http.Client
	base     string
	shown    string // base with any password redacted, for messages
	model    string
	probes   []Probe
	answered bool
	silent   bool // a request went unanswered within DefaultProbeTimeout
	firstErr error
	ended    error // the request the caller's context ended, and where
	models   []byte
}

// ctxErr returns the caller's context's error, saying what it ended: the
// request and whether its answer had begun, or that it ended between two.
func (p *prober) ctxErr() error {
	if p.ended != nil {
		return p.ended
	}
	return fmt.Errorf("capacity: %s: between two requests: %w", p.shown, p.ctx.Err())
}

// endedBy returns err, when the caller's context ended the request, as the
// request and how far it got: "GET url/metrics: 10 bytes of the answer
// read when the caller's deadline passed: context deadline exceeded".
func (p *prober) endedBy(method, shown, stage string, err error) error {
	why := "the caller's deadline passed"
	if !errors.Is(p.ctx.Err(), context.DeadlineExceeded) {
		why = "the caller cancelled"
	}
	p.ended = fmt.Errorf("capacity: %s %s: %s when %s: %w", method, shown, stage, why, p.ctx.Err())
	return p.ended
}

// get fetches path; ok is true for a 2xx answer.
func (p *prober) get(path string) (body []byte, ok bool) {
	return p.do(http.MethodGet, path, nil)
}

// do sends one request, bounded by DefaultProbeTimeout; ok is true for a
// 2xx answer.
func (p *prober) do(method, path string, reqBody []byte) (body []byte, ok bool) {
	target, shown := p.base+path, p.shown+path
	pr := Probe{Path: path}
	var perr error // pr.Error, as an error
	if p.silent {
		return nil, false
	}
	defer func() {
		if perr != nil {
			pr.Error = perr.Error()
			if p.firstErr == nil {
				p.firstErr = perr
			}
		}
		p.probes = append(p.probes, pr)
	}()
	ctx, cancel := context.WithTimeoutCause(p.ctx, probeTimeout, ErrNoAnswer)
	defer cancel()
	var rd io.Reader
	if reqBody != nil {
		rd = bytes.NewReader(reqBody)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL it quotes, password and all
		}
		perr = fmt.Errorf("capacity: %s %s: %w", method, shown, err)
		return nil, false
	}
	if reqBody != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		switch {
		case p.ctx.Err() != nil:
			perr = p.endedBy(method, shown, "no answer yet", err)
			return nil, false
		case context.Cause(ctx) == ErrNoAnswer:
			p.silent = true
			err = fmt.Errorf("%w: no answer within %v (each request's bound)", ErrNoAnswer, probeTimeout)
		}
		perr = fmt.Errorf("capacity: %s %s: %w", method, shown, err) // net/http's *url.Error redacts the password too
		return nil, false
	}
	defer resp.Body.Close()
	p.answered = true
	pr.Status = resp.StatusCode
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxProbeBody))
	if err != nil {
		stage := fmt.Sprintf("%d bytes of the answer read", len(body))
		switch {
		case p.ctx.Err() != nil:
			perr = p.endedBy(method, shown, stage, err)
			return nil, false
		case context.Cause(ctx) == ErrNoAnswer:
			p.silent = true
			err = fmt.Errorf("%w: %s within %v (each request's bound)", ErrNoAnswer, stage, probeTimeout)
		}
		perr = fmt.Errorf("capacity: %s %s: %w", method, shown, err)
		return nil, false
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		perr = &statusError{method: method, url: shown, statusCode: resp.StatusCode, body: string(body[:min(len(body), 200)])}
		return nil, false
	}
	return body, true
}

// modelsMaxLen returns max_model_len from GET /v1/models, fetched once.
func (p *prober) modelsMaxLen() int {
	if p.models == nil {
		body, ok := p.get("/v1/models")
		if !ok {
			p.models = []byte{}
			return 0
		}
		p.models = body
	}
	var r struct {
		Data []struct {
			MaxModelLen json.Number `json:"max_model_len"`
		} `json:"data"`
	}
	if json.Unmarshal(p.models, &r) != nil || len(r.Data) == 0 {
		return 0
	}
	n, _ := r.Data[0].MaxModelLen.Int64()
	return int(n)
}

// vllm reads vllm:cache_config_info from /metrics.
func (p *prober) vllm(d *Discovery) bool {
	body, ok := p.get("/metrics")
	if !ok {
		return false
	}
	families, err := promtext.Parse(bytes.NewReader(body))
	if err != nil {
		d.Notes = append(d.Notes, fmt.Sprintf("GET /metrics: not Prometheus text: %v", err))
		return false
	}
	fam, ok := families["vllm:cache_config_info"]
	if !ok || len(fam.GetMetric()) == 0 {
		return false
	}
	d.Engine = EngineVLLM
	labels := promtext.Labels(fam.GetMetric()[0])
	d.CacheConfig = labels
	d.NumGPUBlocks = labelInt(labels, "num_gpu_blocks")
	d.BlockSize = labelInt(labels, "block_size")
	if f, err := strconv.ParseFloat(labels["kv_cache_max_concurrency"], 64); err == nil {
		d.KVConcurrency = f
	}
	if n := labelInt(labels, "kv_cache_size_tokens"); n > 0 {
		d.Limits.KVTokens = n
		d.Limits.Source = "vllm:cache_config_info kv_cache_size_tokens"
	} else if d.NumGPUBlocks > 0 && d.BlockSize > 0 {
		d.Limits.KVTokens = d.NumGPUBlocks * d.BlockSize
		d.Limits.Source = "vllm:cache_config_info num_gpu_blocks × block_size"
		if labelInt(labels, "mamba_block_size") > 0 || labelInt(labels, "mamba_page_size_padded") > 0 {
			d.Notes = append(d.Notes, "hybrid model on a vLLM without kv_cache_size_tokens: num_gpu_blocks × block_size counts blocks that hold per-sequence state as attention tokens, so it overstates the capacity")
		}
	} else {
		d.Notes = append(d.Notes, "vllm:cache_config_info has neither kv_cache_size_tokens nor num_gpu_blocks")
	}
	if n := p.modelsMaxLen(); n > 0 {
		d.Limits.MaxModelLen = n
		d.Limits.Source = joinSource(d.Limits.Source, "/v1/models max_model_len")
	}
	d.Notes = append(d.Notes, "vLLM does not publish max_num_seqs: max running requests unknown unless given")
	d.Version = p.version("/version")
	return true
}

// version reads {"version": "..."} from path, or "".
func (p *prober) version(path string) string {
	body, ok := p.get(path)
	if !ok {
		return ""
	}
	var v struct {
		Version string `json:"version"`
	}
	if decodeJSON(body, &v) != nil {
		return ""
	}
	return v.Version
}

// sglang reads GET /get_server_info.
func (p *prober) sglang(d *Discovery) bool {
	body, ok := p.get("/get_server_info")
	if !ok {
		return false
	}
	var info map[string]any
	if err := decodeJSON(body, &info); err != nil {
		return false
	}
	lookup := func(key string) int {
		if n, ok := toInt(info[key]); ok {
			return n
		}
		if states, ok := info["internal_states"].([]any); ok && len(states) > 0 {
			if s, ok := states[0].(map[string]any); ok {
				n, _ := toInt(s[key])
				return n
			}
		}
		return 0
	}
	d.Engine = EngineSGLang
	d.Version, _ = info["version"].(string)
	d.Limits.KVTokens = lookup("max_total_num_tokens")
	d.Limits.MaxRunning = lookup("max_running_requests")
	d.Limits.MaxModelLen = lookup("context_length")
	d.Limits.Source = "sglang /get_server_info"
	if d.Limits.MaxModelLen == 0 {
		if n := p.modelsMaxLen(); n > 0 {
			d.Limits.MaxModelLen = n
			d.Limits.Source = joinSource(d.Limits.Source, "/v1/models max_model_len")
		}
	}
	return true
}

// llamaCpp reads GET /props: every slot has its own context of n_ctx tokens.
func (p *prober) llamaCpp(d *Discovery) bool {
	body, ok := p.get("/props")
	if !ok {
		return false
	}
	var props struct {
		TotalSlots json.Number `json:"total_slots"`
		Settings   struct {
			NCtx json.Number `json:"n_ctx"`
		} `json:"default_generation_settings"`
		NCtx      json.Number     `json:"n_ctx"`
		BuildInfo json.RawMessage `json:"build_info"`
	}
	if decodeJSON(body, &props) != nil {
		return false
	}
	slots, _ := props.TotalSlots.Int64()
	nctx, _ := props.Settings.NCtx.Int64()
	if nctx <= 0 {
		nctx, _ = props.NCtx.Int64()
	}
	if slots <= 0 && nctx <= 0 {
		return false
	}
	d.Engine = EngineLlamaCpp
	_ = json.Unmarshal(props.BuildInfo, &d.Version) // a string such as "b5432-1a2b3c4d"; other shapes leave it empty
	d.Limits.MaxRunning = int(slots)
	d.Limits.MaxModelLen = int(nctx)
	if slots > 0 && nctx > 0 {
		d.Limits.KVTokens = int(slots * nctx)
	}
	d.Limits.Source = "llama.cpp /props (total_slots × per-slot n_ctx)"
	return true
}

// tgi reads GET /info.
func (p *prober) tgi(d *Discovery) bool {
	body, ok := p.get("/info")
	if !ok {
		return false
	}
	var info struct {
		MaxBatchTotalTokens   json.Number `json:"max_batch_total_tokens"`
		MaxTotalTokens        json.Number `json:"max_total_tokens"`
		MaxBatchSize          json.Number `json:"max_batch_size"`
		MaxConcurrentRequests json.Number `json:"max_concurrent_requests"`
		Version               string      `json:"version"`
	}
	if decodeJSON(body, &info) != nil {
		return false
	}
	total, _ := info.MaxBatchTotalTokens.Int64()
	maxLen, _ := info.MaxTotalTokens.Int64()
	if total <= 0 && maxLen <= 0 {
		return false
	}
	d.Engine = EngineTGI
	d.Version = info.Version
	d.Limits.KVTokens = int(total)
	d.Limits.MaxModelLen = int(maxLen)
	if n, err := info.MaxBatchSize.Int64(); err == nil && n > 0 {
		d.Limits.MaxRunning = int(n)
	}
	if n, err := info.MaxConcurrentRequests.Int64(); err == nil && n > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("TGI rejects requests beyond max_concurrent_requests = %d", n))
	}
	d.Limits.Source = "tgi /info"
	return true
}

// ollama reads GET /api/version, then the context length of the model:
// GET /api/ps for a loaded model (the context its runner was started with,
// which every request gets), else POST /api/show (a num_ctx parameter of
// its Modelfile). Ollama publishes neither its KV cache nor how many
// requests it runs at once (OLLAMA_NUM_PARALLEL).
func (p *prober) ollama(d *Discovery) bool {
	body, ok := p.get("/api/version")
	if !ok {
		return false
	}
	var v struct {
		Version string `json:"version"`
	}
	if decodeJSON(body, &v) != nil || v.Version == "" {
		return false
	}
	d.Engine = EngineOllama
	d.Version = v.Version
	d.Notes = append(d.Notes, "Ollama does not publish how many requests it runs at once (OLLAMA_NUM_PARALLEL): max running requests unknown unless given")

	if body, ok := p.get("/api/ps"); ok {
		var ps struct {
			Models []struct {
				Name          string      `json:"name"`
				Model         string      `json:"model"`
				ContextLength json.Number `json:"context_length"`
			} `json:"models"`
		}
		if decodeJSON(body, &ps) == nil {
			for _, m := range ps.Models {
				if p.model != "" && !sameOllamaModel(p.model, m.Name) && !sameOllamaModel(p.model, m.Model) {
					continue
				}
				if n, err := m.ContextLength.Int64(); err == nil && n > 0 {
					d.Model = m.Name
					d.Limits.MaxModelLen = int(n)
					d.Limits.Source = "ollama /api/ps context_length"
					return true
				}
			}
		}
	}
	model := p.model
	if model == "" {
		if body, ok := p.get("/api/tags"); ok {
			var tags struct {
				Models []struct {
					Name string `json:"name"`
				} `json:"models"`
			}
			if decodeJSON(body, &tags) == nil && len(tags.Models) == 1 {
				model = tags.Models[0].Name
			}
		}
	}
	if model != "" {
		req, _ := json.Marshal(map[string]string{"model": model})
		if body, ok := p.do(http.MethodPost, "/api/show", req); ok {
			var show struct {
				Parameters string `json:"parameters"`
			}
			if decodeJSON(body, &show) == nil {
				if n := ollamaParameter(show.Parameters, "num_ctx"); n > 0 {
					d.Model = model
					d.Limits.MaxModelLen = n
					d.Limits.Source = "ollama /api/show num_ctx"
					return true
				}
			}
		}
	}
	d.Notes = append(d.Notes, "Ollama chooses the context length when it loads a model (OLLAMA_CONTEXT_LENGTH, or its default) and the model is not loaded: max_model_len unknown until it is")
	return true
}

// sameOllamaModel reports whether a model name given by a user names the
// model Ollama lists: "tiny" is "tiny:latest".
func sameOllamaModel(given, listed string) bool {
	return given == listed || given+":latest" == listed
}

// ollamaParameter reads one parameter from /api/show's "parameters" text,
// lines of "name   value".
func ollamaParameter(params, name string) int {
	for line := range strings.SplitSeq(params, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == name {
			n, err := strconv.Atoi(f[1])
			if err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

func decodeJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	return dec.Decode(v)
}

func labelInt(labels map[string]string, key string) int {
	n, err := strconv.Atoi(labels[key])
	if err != nil {
		return 0
	}
	return n
}

// redactURL returns u with the password of its user info replaced by
// "xxxxx", as url.URL.Redacted does; a URL that does not parse has
// everything before an "@" in its authority replaced.
func redactURL(u string) string {
	if parsed, err := url.Parse(u); err == nil {
		return parsed.Redacted()
	}
	rest, scheme := u, ""
	if i := strings.Index(u, "://"); i >= 0 {
		scheme, rest = u[:i+3], u[i+3:]
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		return scheme + "xxxxx" + rest[i:]
	}
	return u
}

func joinSource(a, b string) string {
	if a == "" {
		return b
	}
	return a + ", " + b
}
