package capacity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/llmload/llmload/internal/bounded"
)

// layerKind is what one decoder layer keeps between steps, which decides how
// its cache grows. Its values are the names config.json's layer_types uses:
// [Model.Layers] and [Group.Kind] hold them.
type layerKind = string

// Layer kinds. The zero value means "not set".
const (
	layerUnset layerKind = ""
	// fullAttention keeps keys and values for every token of the sequence.
	fullAttention layerKind = "full_attention"
	// slidingAttention keeps keys and values for the last SlidingWindow tokens.
	slidingAttention layerKind = "sliding_attention"
	// linearAttention is a Gated DeltaNet layer: a fixed-size state per
	// sequence (a short-convolution state and a recurrent state), whatever
	// the length.
	linearAttention layerKind = "linear_attention"
	// mambaLayer is a Mamba2 layer: a fixed-size convolution and SSM state per
	// sequence.
	mambaLayer layerKind = "mamba"
	// noCache is a layer that keeps nothing (an MLP-only layer of a hybrid
	// pattern such as Nemotron-H's).
	noCache layerKind = "none"
)

// everyLayerKind lists the kinds, in the order a summary gives them.
var everyLayerKind = [...]layerKind{fullAttention, slidingAttention, linearAttention, mambaLayer, noCache}

// MLA describes multi-head latent attention (DeepSeek V2/V3, Kimi K2): each
// token stores one compressed latent of KVLoraRank plus QKRopeHeadDim values
// per layer, shared by all heads.
type MLA struct {
	KVLoraRank    int `json:"kv_lora_rank"`          // the compressed KV latent per token
	QKRopeHeadDim int `json:"qk_rope_head_dim"`      // the rotary part stored next to it
	QKNopeHeadDim int `json:"qk_nope_head_dim"`      // per-head query/key dims without rope (weights only)
	VHeadDim      int `json:"v_head_dim"`            // per-head value dim (weights only)
	QLoraRank     int `json:"q_lora_rank,omitempty"` // 0 when queries are not compressed
}

// GatedDeltaNet describes the linear-attention layers of Qwen3-Next and
// Qwen3.5. Each sequence holds, per layer, a convolution state of
// (2·NumKeyHeads·KeyHeadDim + NumValueHeads·ValueHeadDim) × (ConvKernel−1)
// values and a recurrent state of NumValueHeads × KeyHeadDim × ValueHeadDim
// values.
type GatedDeltaNet struct {
	NumKeyHeads   int `json:"num_key_heads"`   // linear_num_key_heads
	NumValueHeads int `json:"num_value_heads"` // linear_num_value_heads
	KeyHeadDim    int `json:"key_head_dim"`    // linear_key_head_dim
	ValueHeadDim  int `json:"value_head_dim"`  // linear_value_head_dim
	ConvKernel    int `json:"conv_kernel"`     // linear_conv_kernel_dim
	// StateDType is the recurrent state's dtype from config.json's
	// mamba_ssm_dtype ("float32" for Qwen3.5); empty means the model dtype.
	StateDType string `json:"state_dtype,omitempty"`
}

// Mamba2 describes Mamba2 layers (Nemotron-H, Granite 4, Falcon-H1, Bamba).
type Mamba2 struct {
	NumHeads   int    `json:"num_heads"`             // mamba_num_heads
	HeadDim    int    `json:"head_dim"`              // mamba_head_dim
	StateSize  int    `json:"state_size"`            // ssm_state_size
	NumGroups  int    `json:"num_groups"`            // n_groups
	ConvKernel int    `json:"conv_kernel"`           // conv_kernel
	StateDType string `json:"state_dtype,omitempty"` // mamba_ssm_dtype; empty means the model dtype
}

// MoE describes mixture-of-experts MLPs. It changes the weights and the
// activation peak, not the KV cache.
type MoE struct {
	NumExperts             int `json:"num_experts"`                        // routed experts
	ExpertsPerToken        int `json:"experts_per_token"`                  // num_experts_per_tok
	IntermediateSize       int `json:"intermediate_size"`                  // moe_intermediate_size of one expert
	SharedIntermediateSize int `json:"shared_intermediate_size,omitempty"` // of the shared experts together
	// DenseLayers counts layers that keep a dense MLP (DeepSeek's
	// first_k_dense_replace, Qwen's mlp_only_layers).
	DenseLayers int `json:"dense_layers,omitempty"`
}

// Vision describes a multimodal encoder, which --language-model-only drops.
type Vision struct {
	Depth            int `json:"depth"`             // encoder blocks
	HiddenSize       int `json:"hidden_size"`       // encoder width
	IntermediateSize int `json:"intermediate_size"` // encoder MLP width
}

// Quantization is the checkpoint's weight quantization, from config.json's
// quantization_config.
type Quantization struct {
	Method    string `json:"method,omitempty"`     // "awq", "gptq", "compressed-tensors", "fp8", "modelopt", ...
	Bits      int    `json:"bits,omitempty"`       // bits per quantized weight; 0 means unquantized
	GroupSize int    `json:"group_size,omitempty"` // weights per scale; 0 means per channel
	Symmetric bool   `json:"symmetric,omitempty"`  // no zero points
}

// Weights is the size of a checkpoint's tensors, read from its safetensors
// files.
type Weights struct {
	LanguageBytes int64  `json:"language_bytes"` // the language model
	VisionBytes   int64  `json:"vision_bytes"`   // the multimodal encoder and projector
	SkippedBytes  int64  `json:"skipped_bytes"`  // tensors vLLM does not load by default (MTP draft layers)
	Source        string `json:"source"`         // where the sizes come from
}

// Model is what decides a model's KV-cache size: its layers and what each
// keeps per token or per sequence. Fields follow config.json's names; for a
// multimodal config they come from text_config.
type Model struct {
	Architecture          string `json:"architecture,omitempty"`        // architectures[0]
	ModelType             string `json:"model_type,omitempty"`          // model_type
	DType                 string `json:"dtype"`                         // weights' dtype, "bfloat16" when the config says nothing
	HiddenSize            int    `json:"hidden_size"`                   // hidden_size
	IntermediateSize      int    `json:"intermediate_size"`             // the dense MLP's width
	VocabSize             int    `json:"vocab_size"`                    // vocab_size
	NumAttentionHeads     int    `json:"num_attention_heads"`           // query heads
	NumKVHeads            int    `json:"num_key_value_heads"`           // key/value heads; the query heads when the config has none
	HeadDim               int    `json:"head_dim"`                      // head_dim, else hidden_size ÷ heads
	AttentionOutputGate   bool   `json:"attn_output_gate,omitempty"`    // Qwen3.5's gated attention doubles the query projection
	UngatedMLP            bool   `json:"ungated_mlp,omitempty"`         // the MLP is up and down projections only (Phi-2, GPT-2, Falcon), not gated
	TieWordEmbeddings     bool   `json:"tie_word_embeddings,omitempty"` // lm_head shares the embedding
	MaxPositionEmbeddings int    `json:"max_position_embeddings"`       // max_position_embeddings
	// DerivedMaxModelLen is vLLM's default max_model_len: the position limit,
	// scaled by rope scaling where vLLM scales it.
	DerivedMaxModelLen int      `json:"derived_max_model_len"`
	Layers             []string `json:"layers"`                   // what each decoder layer keeps: "full_attention", "sliding_attention", "linear_attention" (Gated DeltaNet), "mamba" (Mamba2) or "none"
	SlidingWindow      int      `json:"sliding_window,omitempty"` // tokens a slidingAttention layer keeps

	MLA           *MLA           `json:"mla,omitempty"`             // nil unless attention is MLA
	GatedDeltaNet *GatedDeltaNet `json:"gated_delta_net,omitempty"` // nil unless there are linearAttention layers
	Mamba2        *Mamba2        `json:"mamba2,omitempty"`          // nil unless there are Mamba layers
	MoE           *MoE           `json:"moe,omitempty"`             // nil for dense MLPs
	Vision        *Vision        `json:"vision,omitempty"`          // nil for text-only models
	Quantization  Quantization   `json:"quantization"`              // zero when unquantized
	// Weights is set by LoadModel when the directory holds the checkpoint;
	// nil means the weights are estimated from the architecture.
	Weights *Weights `json:"weights,omitempty"`
}

// count returns how many layers are of kind k.
func (m *Model) count(k layerKind) int {
	n := 0
	for _, l := range m.Layers {
		if l == k {
			n++
		}
	}
	return n
}

// hybrid reports whether the model mixes attention with layers that keep a
// per-sequence state (linear attention or Mamba).
func (m *Model) hybrid() bool {
	return m.count(linearAttention)+m.count(mambaLayer) > 0 && m.count(fullAttention)+m.count(slidingAttention) > 0
}

// String summarizes the layers, e.g. "32 layers: 8 full_attention, 24 linear_attention".
func (m *Model) String() string {
	var parts []string
	for _, k := range everyLayerKind {
		if n := m.count(k); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	s := fmt.Sprintf("%d layers: %s", len(m.Layers), strings.Join(parts, ", "))
	if m.Architecture != "" {
		s = m.Architecture + ", " + s
	}
	return s
}

// maxConfigBytes bounds the config.json LoadModel reads: real ones take
// kilobytes, the largest (quantization configs listing every layer) a few
// megabytes.
const maxConfigBytes = 16 << 20

// readModelFile reads the regular file at path, up to limit bytes. A
// larger file, or anything but a regular file (a device such as /dev/zero,
// a pipe, a socket), is refused with an *InputError naming the file and the
// limit, before its contents are read.
func readModelFile(path string, limit int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("capacity: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(path, fi.Mode())
	}
	tooLarge := &InputError{File: path, Reason: fmt.Sprintf("larger than %d MiB, the most a model file of its kind takes: not read", limit>>20)}
	if fi.Size() > limit {
		return nil, tooLarge
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("capacity: %w", err)
	}
	defer f.Close()
	data, whole, err := bounded.Read(f, limit)
	switch {
	case err != nil:
		return nil, fmt.Errorf("capacity: %s: %w", path, err)
	case !whole: // grown since it was looked at
		return nil, tooLarge
	}
	return data, nil
}

// notRegular refuses the file at path, which is not a regular file.
func notRegular(path string, mode os.FileMode) error {
	kind := "not a regular file"
	switch {
	case mode&os.ModeDevice != 0:
		kind = "a device, not a file"
	case mode&os.ModeNamedPipe != 0:
		kind = "a named pipe, not a file"
	case mode&os.ModeSocket != 0:
		kind = "a socket, not a file"
	case mode.IsDir():
		kind = "a directory, not a file"
	}
	return &InputError{File: path, Reason: kind + ": not read"}
}

// LoadModel reads a model from path: a config.json file, or a model
// directory holding config.json. In a directory the safetensors headers (or,
// lacking the shards, model.safetensors.index.json's total_size) give the
// exact weight bytes.
func LoadModel(path string) (*Model, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("capacity: %w", err)
	}
	dir := ""
	if fi.IsDir() {
		dir = path
		path = filepath.Join(path, "config.json")
	}
	data, err := readModelFile(path, maxConfigBytes)
	if err != nil {
		return nil, err
	}
	m, err := ParseConfig(data)
	if err != nil {
		var ce *InputError
		if errors.As(err, &ce) {
			ce.File = path
		}
		return nil, err
	}
	if dir != "" {
		w, err := readWeights(dir)
		if err != nil {
			return nil, err
		}
		m.Weights = w
	}
	return m, nil
}

// config is a decoded config.json with lookups that fall back from
// text_config to the top level. Lookups record the first field whose value
// is not a usable number in err.
type config struct {
	top, text map[string]any
	textKey   string // "text_config", "llm_config" or "language_config"
	err       error
	// fields maps the first key of each integer lookup to the field that
	// answered it ("head_dim" → "text_config.head_dim"), so that errors
	// found later name the field as the file spells it.
	fields map[string]string
}

// lookup returns the first of keys present (non-null) and its path as
// errors name it ("text_config.hidden_size").
func (c *config) lookup(keys ...string) (value any, field string, ok bool) {
	for _, k := range keys {
		if c.text != nil {
			if v, ok := c.text[k]; ok && v != nil {
				return v, c.textKey + "." + k, true
			}
		}
		if v, ok := c.top[k]; ok && v != nil {
			return v, k, true
		}
	}
	return nil, "", false
}

func (c *config) get(key string) (any, bool) {
	v, _, ok := c.lookup(key)
	return v, ok
}

// int returns the first of keys present as an integer, or 0 when none is.
// A value that is not an integer, or larger in magnitude than maxConfigInt,
// is recorded in c.err.
func (c *config) int(keys ...string) int {
	v, field, ok := c.lookup(keys...)
	if !ok {
		return 0
	}
	if c.fields == nil {
		c.fields = map[string]string{}
	}
	c.fields[keys[0]] = field
	n, err := configInt(v, field)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n
}

// objInt reads an integer from a nested object, recording a bad value in
// c.err under the field name prefix.key.
func (c *config) objInt(o map[string]any, prefix string, keys ...string) int {
	for _, k := range keys {
		v, ok := o[k]
		if !ok || v == nil {
			continue
		}
		n, err := configInt(v, prefix+"."+k)
		if err != nil && c.err == nil {
			c.err = err
		}
		return n
	}
	return 0
}

func (c *config) str(keys ...string) string {
	for _, k := range keys {
		if v, ok := c.get(k); ok {
			if s, ok := v.(string); ok {
				return s
			}
		}
	}
	return ""
}

func (c *config) bool(key string) (value, ok bool) {
	v, ok := c.get(key)
	if !ok {
		return false, false
	}
	b, ok := v.(bool)
	return b, ok
}

func (c *config) obj(key string) map[string]any {
	v, _ := c.get(key)
	o, _ := v.(map[string]any)
	return o
}

// maxConfigInt bounds every integer read from a config.json: no real model
// has a count or size near 2³¹, and keeping products of two fields within
// int64 lets the arithmetic that follows stay exact.
const maxConfigInt = 1 << 31

// configInt converts a JSON number to an int, or returns an *InputError
// naming field.
func configInt(v any, field string) (int, error) {
	n, ok := toInt(v)
	f, number := toFloat(v)
	switch {
	case number && math.Abs(f) > maxConfigInt:
		return 0, &InputError{Field: field, Value: configValue(v), Reason: "larger than any model has"}
	case !ok:
		return 0, &InputError{Field: field, Value: configValue(v), Reason: "not an integer"}
	case n > maxConfigInt || n < -maxConfigInt:
		return 0, &InputError{Field: field, Value: configValue(v), Reason: "larger than any model has"}
	}
	return n, nil
}

// configValue formats a decoded JSON value for an error message, cut short.
func configValue(v any) string {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = strconv.Quote(x)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprintf("%T", v)
		}
		s = string(b)
	}
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// toInt converts a JSON number holding an integer to an int; ok is false
// for anything else, including integers beyond ±2⁵³ written as floats.
func toInt(v any) (int, bool) {
	const exact = 1 << 53
	switch n := v.(type) {
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return int(i), true
		}
		if f, err := n.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) <= exact {
			return int(f), true
		}
	case float64:
		if n == math.Trunc(n) && math.Abs(n) <= exact {
			return int(n), true
		}
	}
	return 0, false
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	}
	return 0, false
}

// ParseConfig reads a Hugging Face config.json. A multimodal config's
// language model comes from text_config (or llm_config); its vision encoder
// is kept in Model.Vision so that --language-model-only can drop it.
//
// Every field is checked against what a real model can be:
// a missing, non-integer or impossible value is an *InputError naming the
// field, never an estimate.
func ParseConfig(data []byte) (*Model, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var top map[string]any
	if err := dec.Decode(&top); err != nil {
		return nil, &InputError{Reason: "not a JSON object: " + err.Error()}
	}
	c := &config{top: top}
	for _, k := range []string{"text_config", "llm_config", "language_config"} {
		if t, ok := top[k].(map[string]any); ok {
			c.text, c.textKey = t, k
			break
		}
	}
	m, numLayers, err := parseAttention(c)
	if err != nil {
		return nil, err
	}
	layers, err := layerKinds(c, m, numLayers)
	if err != nil {
		return nil, err
	}
	m.Layers = layers
	parseStates(c, m)
	parseMoE(c, m)
	if v, ok := top["vision_config"].(map[string]any); ok {
		m.Vision = &Vision{
			Depth:            c.objInt(v, "vision_config", "depth", "num_hidden_layers", "num_layers"),
			HiddenSize:       c.objInt(v, "vision_config", "hidden_size", "embed_dim", "width"),
			IntermediateSize: c.objInt(v, "vision_config", "intermediate_size", "mlp_dim"),
		}
	}
	m.Quantization = parseQuantization(c)
	m.DerivedMaxModelLen = derivedMaxModelLen(c, m.MaxPositionEmbeddings)
	if c.err != nil {
		return nil, c.err
	}
	if err := m.validate(); err != nil {
		var ce *InputError
		if errors.As(err, &ce) && c.fields[ce.Field] != "" {
			ce.Field = c.fields[ce.Field]
		}
		return nil, err
	}
	return m, nil
}

// parseAttention reads what every model has, refusing a config without
// it: its sizes, dtype and attention heads, MLA's latent where it has one,
// and the number of its decoder layers.
func parseAttention(c *config) (*Model, int, error) {
	m := &Model{
		ModelType:             c.str("model_type"),
		DType:                 normalizeDType(c.str("torch_dtype", "dtype")),
		HiddenSize:            c.int("hidden_size", "n_embd", "d_model"),
		IntermediateSize:      c.int("intermediate_size", "ffn_hidden_size", "n_inner"),
		VocabSize:             c.int("vocab_size"),
		NumAttentionHeads:     c.int("num_attention_heads", "n_head", "num_heads"),
		NumKVHeads:            c.int("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num"),
		HeadDim:               c.int("head_dim", "attention_head_dim"),
		MaxPositionEmbeddings: c.int("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "max_sequence_length"),
		SlidingWindow:         c.int("sliding_window"),
	}
	if a, ok := c.top["architectures"].([]any); ok && len(a) > 0 {
		m.Architecture, _ = a[0].(string)
	}
	if m.DType == "" {
		m.DType = "bfloat16"
	}
	m.AttentionOutputGate, _ = c.bool("attn_output_gate")
	m.TieWordEmbeddings, _ = c.bool("tie_word_embeddings")
	switch m.ModelType {
	case "phi", "gpt2", "gpt_neox", "gptj", "gpt_bigcode", "falcon", "opt", "bloom", "mpt", "starcoder2":
		m.UngatedMLP = true
	}
	numLayers := c.int("num_hidden_layers", "n_layer", "num_layers")
	if c.err != nil {
		return nil, 0, c.err
	}
	switch {
	case numLayers == 0:
		return nil, 0, &InputError{Field: "num_hidden_layers", Value: "missing", Reason: "the number of decoder layers is required"}
	case numLayers < 0 || numLayers > maxLayers:
		return nil, 0, &InputError{Field: "num_hidden_layers", Value: strconv.Itoa(numLayers), Reason: fmt.Sprintf("want 1 to %d layers", maxLayers)}
	case m.HiddenSize == 0:
		return nil, 0, &InputError{Field: "hidden_size", Value: "missing", Reason: "the model width is required"}
	case m.NumAttentionHeads == 0:
		return nil, 0, &InputError{Field: "num_attention_heads", Value: "missing", Reason: "the number of attention heads is required"}
	}
	if m.NumKVHeads == 0 {
		if _, _, given := c.lookup("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num"); given {
			return nil, 0, &InputError{Field: "num_key_value_heads", Value: "0", Reason: "a model has at least one key/value head"}
		}
		m.NumKVHeads = m.NumAttentionHeads
	}
	if m.HeadDim == 0 && m.NumAttentionHeads > 0 {
		m.HeadDim = m.HiddenSize / m.NumAttentionHeads
		if m.HeadDim == 0 {
			return nil, 0, &InputError{Field: "head_dim", Value: "missing",
				Reason: fmt.Sprintf("hidden_size %d ÷ num_attention_heads %d leaves no head dimension", m.HiddenSize, m.NumAttentionHeads)}
		}
	}
	if r := c.int("kv_lora_rank"); r != 0 {
		m.MLA = &MLA{
			KVLoraRank:    r,
			QKRopeHeadDim: c.int("qk_rope_head_dim"),
			QKNopeHeadDim: c.int("qk_nope_head_dim"),
			VHeadDim:      c.int("v_head_dim"),
			QLoraRank:     c.int("q_lora_rank"),
		}
	}
	return m, numLayers, nil
}

// parseStates reads the state dimensions of the layers m has that keep
// a state per sequence: Gated DeltaNet's and Mamba2's.
func parseStates(c *config, m *Model) {
	if m.count(linearAttention) > 0 {
		m.GatedDeltaNet = &GatedDeltaNet{
			NumKeyHeads:   c.int("linear_num_key_heads"),
			NumValueHeads: c.int("linear_num_value_heads"),
			KeyHeadDim:    c.int("linear_key_head_dim"),
			ValueHeadDim:  c.int("linear_value_head_dim"),
			ConvKernel:    c.int("linear_conv_kernel_dim"),
			StateDType:    normalizeDType(c.str("mamba_ssm_dtype")),
		}
	}
	if m.count(mambaLayer) > 0 {
		mb := &Mamba2{
			NumHeads:   c.int("mamba_num_heads", "mamba_n_heads"),
			HeadDim:    c.int("mamba_head_dim", "mamba_d_head"),
			StateSize:  c.int("ssm_state_size", "mamba_d_state", "state_size"),
			NumGroups:  c.int("n_groups", "mamba_n_groups"),
			ConvKernel: c.int("conv_kernel", "mamba_d_conv"),
			StateDType: normalizeDType(c.str("mamba_ssm_dtype")),
		}
		if mb.NumHeads == 0 && mb.HeadDim > 0 {
			if e := c.int("mamba_expand", "expand"); e > 0 {
				mb.NumHeads = e * m.HiddenSize / mb.HeadDim
			}
		}
		if mb.NumGroups == 0 {
			mb.NumGroups = 1
		}
		m.Mamba2 = mb
	}
}

// parseMoE reads a mixture-of-experts model's experts, if it has them.
func parseMoE(c *config, m *Model) {
	if n := c.int("num_experts", "n_routed_experts", "num_local_experts"); n > 1 || n < 0 {
		moe := &MoE{
			NumExperts:       n,
			ExpertsPerToken:  c.int("num_experts_per_tok", "moe_topk", "num_experts_per_token"),
			IntermediateSize: c.int("moe_intermediate_size"),
		}
		if moe.IntermediateSize == 0 {
			moe.IntermediateSize = m.IntermediateSize
		}
		moe.SharedIntermediateSize = c.int("shared_expert_intermediate_size")
		if s := c.int("n_shared_experts"); s != 0 && moe.SharedIntermediateSize == 0 {
			moe.SharedIntermediateSize = s * moe.IntermediateSize
		}
		moe.DenseLayers = c.int("first_k_dense_replace")
		if v, ok := c.get("mlp_only_layers"); ok {
			if l, ok := v.([]any); ok {
				moe.DenseLayers += len(l)
			}
		}
		m.MoE = moe
	}
}

// layerKinds reads the per-layer pattern from layer_types,
// full_attention_interval, hybrid_override_pattern, layers_block_type or
// sliding_window_pattern; a config with none of them is all full attention
// (or all sliding window, where the config enables a window).
func layerKinds(c *config, m *Model, n int) ([]layerKind, error) {
	out := make([]layerKind, n)
	if v, ok := c.get("layer_types"); ok {
		l, ok := v.([]any)
		if !ok || len(l) < n {
			return nil, &InputError{Field: "layer_types", Value: fmt.Sprintf("%d entries", len(l)), Reason: fmt.Sprintf("want one for each of the %d layers", n)}
		}
		if err := parseLayerKinds("layer_types", l[:n], out); err != nil {
			return nil, err
		}
		return out, nil
	}
	if iv := c.int("full_attention_interval"); iv > 0 {
		for i := range out {
			out[i] = linearAttention
			if (i+1)%iv == 0 {
				out[i] = fullAttention
			}
		}
		return out, nil
	}
	if p := c.str("hybrid_override_pattern"); p != "" {
		if len(p) < n {
			return nil, &InputError{Field: "hybrid_override_pattern", Value: configValue(p), Reason: fmt.Sprintf("want one entry for each of the %d layers", n)}
		}
		for i := range n {
			switch p[i] {
			case 'M':
				out[i] = mambaLayer
			case '*':
				out[i] = fullAttention
			case '-', 'E':
				out[i] = noCache
			default:
				return nil, &InputError{Field: "hybrid_override_pattern", Value: configValue(p), Reason: fmt.Sprintf("unknown layer %q", p[i])}
			}
		}
		return out, nil
	}
	if v, ok := c.get("layers_block_type"); ok {
		if l, ok := v.([]any); ok && len(l) >= n {
			if err := parseLayerKinds("layers_block_type", l[:n], out); err != nil {
				return nil, err
			}
			return out, nil
		}
	}
	kind := fullAttention
	if m.SlidingWindow > 0 {
		use, set := c.bool("use_sliding_window")
		if !set || use {
			kind = slidingAttention
		}
	}
	for i := range out {
		out[i] = kind
	}
	p := c.int("sliding_window_pattern")
	if p == 0 && m.ModelType == "gemma2" {
		p = 2 // Gemma 2 alternates sliding and full layers in code; newer configs write it as layer_types
	}
	if p > 0 && m.SlidingWindow > 0 {
		for i := range out {
			out[i] = slidingAttention
			if (i+1)%p == 0 {
				out[i] = fullAttention
			}
		}
	}
	return out, nil
}

func parseLayerKind(s string) (layerKind, error) {
	switch s {
	case "full_attention", "attention", "global", "full":
		return fullAttention, nil
	case "sliding_attention", "sliding_window", "local", "sliding":
		return slidingAttention, nil
	case "linear_attention":
		return linearAttention, nil
	case "mamba", "mamba2":
		return mambaLayer, nil
	case "mlp", "moe":
		return noCache, nil
	}
	return layerUnset, errors.New("unknown layer type")
}

// parseLayerKinds reads the list of layer type names in field into out,
// one for one.
func parseLayerKinds(field string, names []any, out []layerKind) error {
	for i, v := range names {
		name, _ := v.(string)
		k, err := parseLayerKind(name)
		if err != nil {
			return &InputError{Field: fmt.Sprintf("%s[%d]", field, i), Value: configValue(v), Reason: "unknown layer type"}
		}
		out[i] = k
	}
	return nil
}

func parseQuantization(c *config) Quantization {
	q := c.obj("quantization_config")
	if q == nil {
		q = c.obj("quantization")
	}
	if q == nil {
		return Quantization{}
	}
	method, _ := q["quant_method"].(string)
	out := Quantization{
		Method:    strings.ToLower(method),
		Bits:      c.objInt(q, "quantization_config", "bits", "w_bit", "num_bits"),
		GroupSize: c.objInt(q, "quantization_config", "group_size", "q_group_size"),
	}
	if sym, ok := q["sym"].(bool); ok {
		out.Symmetric = sym
	}
	if zp, ok := q["zero_point"].(bool); ok {
		out.Symmetric = !zp
	}
	// compressed-tensors: config_groups.<name>.weights.{num_bits,group_size,symmetric}
	if groups, ok := q["config_groups"].(map[string]any); ok {
		for _, g := range groups {
			gm, _ := g.(map[string]any)
			w, _ := gm["weights"].(map[string]any)
			if w == nil {
				continue
			}
			out.Bits = c.objInt(w, "quantization_config.config_groups.weights", "num_bits")
			out.GroupSize = c.objInt(w, "quantization_config.config_groups.weights", "group_size")
			if sym, ok := w["symmetric"].(bool); ok {
				out.Symmetric = sym
			}
			if t, _ := w["type"].(string); t == "float" && out.Bits == 4 {
				out.Method = "nvfp4"
			}
			break
		}
	}
	if algo, _ := q["quant_algo"].(string); algo != "" {
		switch strings.ToUpper(algo) {
		case "NVFP4":
			out.Bits, out.GroupSize, out.Method = 4, 16, "nvfp4"
		case "FP8":
			out.Bits = 8
		}
	}
	if out.Bits == 0 && strings.HasPrefix(out.Method, "fp8") {
		out.Bits = 8
	}
	if out.Method == "mxfp4" && out.Bits == 0 {
		out.Bits, out.GroupSize = 4, 32
	}
	return out
}

func derivedMaxModelLen(c *config, positions int) int {
	rs := c.obj("rope_scaling")
	if rs == nil {
		rs = c.obj("rope_parameters")
	}
	if rs == nil || positions == 0 {
		return positions
	}
	typ, _ := rs["rope_type"].(string)
	if typ == "" {
		typ, _ = rs["type"].(string)
	}
	switch typ {
	case "", "default", "su", "longrope", "llama3", "mrope":
		return positions
	}
	f, ok := toFloat(rs["factor"])
	if !ok || f <= 1 {
		return positions
	}
	base := positions
	if typ == "yarn" {
		if o := c.objInt(rs, "rope_scaling", "original_max_position_embeddings"); o > 0 {
			base = o
		}
	}
	n := float64(base) * f
	if n > maxModelLen {
		if c.err == nil {
			c.err = &InputError{Field: "rope_scaling.factor", Value: configValue(rs["factor"]),
				Reason: fmt.Sprintf("scales %d positions to %.4g, beyond %d", base, n, maxModelLen)}
		}
		return 0
	}
	return int(n)
}

// normalizeDType maps torch and vLLM dtype spellings to torch's names.
func normalizeDType(s string) string {
	switch strings.ToLower(strings.TrimPrefix(s, "torch.")) {
	case "":
		return ""
	case "bfloat16", "bf16":
		return "bfloat16"
	case "float16", "fp16", "half":
		return "float16"
	case "float32", "fp32", "float":
		return "float32"
	}
	return strings.ToLower(s)
}

// dtypeSize returns the size in bytes of a torch dtype name.
func dtypeSize(dtype string) (int, error) {
	switch normalizeDType(dtype) {
	case "bfloat16", "float16":
		return 2, nil
	case "float32":
		return 4, nil
	case "float8_e4m3fn", "float8_e5m2", "uint8", "int8":
		return 1, nil
	}
	return 0, fmt.Errorf("capacity: unknown dtype %q", dtype)
}
