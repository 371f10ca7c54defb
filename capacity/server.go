package capacity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// maxProbeBody bounds the bytes read from one probe's response.
const maxProbeBody = 16 << 20

// ErrUnreachable reports a server that answered none of Discover's requests.
var ErrUnreachable = errors.New("capacity: server unreachable")

// StatusError is a non-2xx answer to one of Discover's requests.
type StatusError struct {
	URL        string // the request's URL
	StatusCode int    // the response's status
	Body       string // the start of the body
}

// Error implements error.
func (e *StatusError) Error() string {
	return fmt.Sprintf("capacity: GET %s returned %d: %s", e.URL, e.StatusCode, e.Body)
}

// Engine identifies an inference server.
type Engine uint8

// Engines. The zero value means "not identified".
const (
	EngineUnknown Engine = iota
	EngineVLLM
	EngineSGLang
	EngineLlamaCpp
	EngineTGI
)

var engineNames = [...]string{"unknown", "vllm", "sglang", "llama.cpp", "tgi"}

// String returns "vllm", "sglang", "llama.cpp", "tgi" or "unknown".
func (e Engine) String() string {
	if int(e) < len(engineNames) {
		return engineNames[e]
	}
	return fmt.Sprintf("Engine(%d)", e)
}

// MarshalText returns the String form.
func (e Engine) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// UnmarshalText parses the String form.
func (e *Engine) UnmarshalText(b []byte) error {
	for i, n := range engineNames {
		if n == string(b) {
			*e = Engine(i)
			return nil
		}
	}
	return fmt.Errorf("capacity: unknown engine %q", b)
}

// Probe is one request Discover made and what came of it.
type Probe struct {
	Path   string `json:"path"`             // e.g. "/metrics"
	Status int    `json:"status,omitempty"` // 0 when no response came
	Err    error  `json:"-"`                // a transport error or *StatusError; nil for a 2xx answer
	Error  string `json:"error,omitempty"`  // Err as text, for reports
}

// Discovery is what a running server says about its capacity. A limit the
// server does not publish stays zero (unknown) in Limits.
type Discovery struct {
	Engine         Engine            `json:"engine"`                    // the engine that answered
	Limits         Limits            `json:"limits"`                    // what it publishes; unknown limits are zero
	NumGPUBlocks   int               `json:"num_gpu_blocks,omitempty"`  // vLLM's num_gpu_blocks label
	BlockSize      int               `json:"block_size,omitempty"`      // vLLM's block_size label
	MaxConcurrency float64           `json:"max_concurrency,omitempty"` // vLLM's kv_cache_max_concurrency label
	CacheConfig    map[string]string `json:"cache_config,omitempty"`    // all vllm:cache_config_info labels as served
	Notes          []string          `json:"notes,omitempty"`           // caveats about the figures
	Probes         []Probe           `json:"probes"`                    // the requests made, in order
}

// Discover asks the server at baseURL ("http://host:8000", with or without
// "/v1") for its capacity: vLLM's GET /metrics (vllm:cache_config_info) and
// GET /v1/models (max_model_len); SGLang's GET /get_server_info; llama.cpp's
// GET /props; TGI's GET /info. It stops at the first engine that answers.
//
// A server that answers but publishes none of these gets Engine
// EngineUnknown and unknown limits, not a guess. The error is ErrUnreachable
// (wrapping the transport error) when no request got an answer, or the
// context's error when ctx ends. client nil means http.DefaultClient.
func Discover(ctx context.Context, client *http.Client, baseURL string) (*Discovery, error) {
	if client == nil {
		client = http.DefaultClient
	}
	p := &prober{ctx: ctx, client: client, base: strings.TrimSuffix(strings.TrimRight(baseURL, "/"), "/v1")}
	d := &Discovery{}
	defer func() { d.Probes = p.probes }()

	for _, step := range []func(*Discovery) bool{p.vllm, p.sglang, p.llamaCpp, p.tgi} {
		if step(d) {
			break
		}
		if err := ctx.Err(); err != nil {
			return d, err
		}
	}
	if d.Engine == EngineUnknown && p.answered {
		if n := p.modelsMaxLen(); n > 0 {
			d.Limits.MaxModelLen = n
			d.Limits.Source = "GET /v1/models"
		}
		d.Notes = append(d.Notes, "the server publishes no KV-cache capacity: limits unknown")
	}
	if err := ctx.Err(); err != nil {
		return d, err
	}
	if !p.answered {
		return d, fmt.Errorf("%w: %s: %w", ErrUnreachable, p.base, p.firstErr)
	}
	return d, nil
}

type prober struct {
	ctx      context.Context
	client   *http.Client
	base     string
	probes   []Probe
	answered bool
	firstErr error
	models   []byte
}

// get fetches path; ok is true for a 2xx answer.
func (p *prober) get(path string) (body []byte, ok bool) {
	url := p.base + path
	pr := Probe{Path: path}
	defer func() {
		if pr.Err != nil {
			pr.Error = pr.Err.Error()
			if p.firstErr == nil {
				p.firstErr = pr.Err
			}
		}
		p.probes = append(p.probes, pr)
	}()
	req, err := http.NewRequestWithContext(p.ctx, http.MethodGet, url, nil)
	if err != nil {
		pr.Err = fmt.Errorf("capacity: %w", err)
		return nil, false
	}
	resp, err := p.client.Do(req)
	if err != nil {
		pr.Err = fmt.Errorf("capacity: GET %s: %w", url, err)
		return nil, false
	}
	defer resp.Body.Close()
	p.answered = true
	pr.Status = resp.StatusCode
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxProbeBody))
	if err != nil {
		pr.Err = fmt.Errorf("capacity: GET %s: %w", url, err)
		return nil, false
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		pr.Err = &StatusError{URL: url, StatusCode: resp.StatusCode, Body: string(body[:min(len(body), 200)])}
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
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		d.Notes = append(d.Notes, fmt.Sprintf("GET /metrics: not Prometheus text: %v", err))
		return false
	}
	fam, ok := families["vllm:cache_config_info"]
	if !ok || len(fam.GetMetric()) == 0 {
		return false
	}
	d.Engine = EngineVLLM
	labels := map[string]string{}
	for _, lp := range fam.GetMetric()[0].GetLabel() {
		labels[lp.GetName()] = lp.GetValue()
	}
	d.CacheConfig = labels
	d.NumGPUBlocks = labelInt(labels, "num_gpu_blocks")
	d.BlockSize = labelInt(labels, "block_size")
	if f, err := strconv.ParseFloat(labels["kv_cache_max_concurrency"], 64); err == nil {
		d.MaxConcurrency = f
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
	return true
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
	}
	if decodeJSON(body, &props) != nil {
		return false
	}
	slots, _ := props.TotalSlots.Int64()
	nctx, _ := props.Settings.NCtx.Int64()
	if slots <= 0 && nctx <= 0 {
		return false
	}
	d.Engine = EngineLlamaCpp
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

func joinSource(a, b string) string {
	if a == "" {
		return b
	}
	return a + ", " + b
}
