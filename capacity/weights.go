package capacity

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxSafetensorsHeader bounds the JSON header read from one safetensors
// file: the format's own limit (100 MB, as the safetensors library checks
// it).
const maxSafetensorsHeader = 100_000_000

// maxIndexBytes bounds model.safetensors.index.json: a weight map of every
// tensor of the largest checkpoints takes a few megabytes.
const maxIndexBytes = 64 << 20

// readWeights sums the tensor sizes of the checkpoint in dir from the headers
// of its *.safetensors files, split into the language model, the vision
// encoder and tensors vLLM skips by default (MTP draft layers). Only the
// headers are read. Without shards, model.safetensors.index.json's
// metadata.total_size is used whole. A directory with neither returns nil
// and no error: the weights will be estimated.
func readWeights(dir string) (*Weights, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("capacity: %w", err)
	}
	if len(files) > 0 {
		w := &Weights{Source: fmt.Sprintf("safetensors headers (%d files)", len(files))}
		for _, f := range files {
			if err := addSafetensors(w, f); err != nil {
				return nil, err
			}
		}
		return w, nil
	}
	data, err := readModelFile(filepath.Join(dir, "model.safetensors.index.json"), maxIndexBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var idx struct {
		Metadata struct {
			TotalSize json.Number `json:"total_size"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("capacity: model.safetensors.index.json: %w", err)
	}
	n, err := idx.Metadata.TotalSize.Int64()
	if err != nil || n <= 0 || n > maxWeightBytes {
		return nil, &InputError{File: filepath.Join(dir, "model.safetensors.index.json"), Field: "metadata.total_size", Value: configValue(string(idx.Metadata.TotalSize)), Reason: "not a checkpoint's size"}
	}
	return &Weights{LanguageBytes: n, Source: "model.safetensors.index.json total_size (vision and MTP tensors included)"}, nil
}

func addSafetensors(w *Weights, path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("capacity: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return notRegular(path, fi.Mode())
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("capacity: %w", err)
	}
	defer f.Close()
	sizes, err := readSafetensorsHeader(f)
	if err != nil {
		// A header that cannot be true: not JSON, offsets negative,
		// reversed or beyond any checkpoint, a tensor whose shape and dtype
		// disagree with its bytes.
		return &InputError{File: path, Reason: "bad safetensors header: " + err.Error()}
	}
	for name, size := range sizes {
		part := &w.LanguageBytes
		switch tensorPart(name) {
		case partVision:
			part = &w.VisionBytes
		case partSkipped:
			part = &w.SkippedBytes
		}
		if *part > maxWeightBytes-size {
			return &InputError{File: path, Reason: fmt.Sprintf("bad safetensors header: tensors add up to more than %d bytes", int64(maxWeightBytes))}
		}
		*part += size
	}
	return nil
}

// safetensorsDTypeBytes gives the size of one element of each safetensors
// dtype that takes whole bytes.
var safetensorsDTypeBytes = map[string]int64{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
	"U16": 2, "I16": 2, "F16": 2, "BF16": 2,
	"U32": 4, "I32": 4, "F32": 4,
	"U64": 8, "I64": 8, "F64": 8,
}

// readSafetensorsHeader reads a safetensors file's header from r — an
// 8-byte little-endian length, then that many bytes of JSON — and returns
// each tensor's size in bytes. Only the header is read.
func readSafetensorsHeader(r io.Reader) (map[string]int64, error) {
	var n uint64
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return nil, fmt.Errorf("length: %w", err)
	}
	switch {
	case n < 2:
		return nil, fmt.Errorf("a header of %d bytes", n)
	case n > maxSafetensorsHeader:
		return nil, fmt.Errorf("a header of %d bytes, more than the format's %d", n, maxSafetensorsHeader)
	}
	var header map[string]json.RawMessage
	dec := json.NewDecoder(io.LimitReader(r, int64(n)))
	if err := dec.Decode(&header); err != nil {
		return nil, err
	}
	sizes := make(map[string]int64, len(header))
	for name, raw := range header {
		if name == "__metadata__" {
			continue
		}
		size, err := safetensorsTensorSize(raw)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %s", configValue(name), err)
		}
		sizes[name] = size
	}
	return sizes, nil
}

// safetensorsTensorSize returns the bytes of one tensor entry
// ({"dtype": "BF16", "shape": [4096, 4096], "data_offsets": [begin, end]}),
// or why the entry cannot be true.
func safetensorsTensorSize(raw json.RawMessage) (int64, error) {
	var t struct {
		DType       string        `json:"dtype"`
		Shape       []json.Number `json:"shape"`
		DataOffsets []json.Number `json:"data_offsets"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&t); err != nil {
		return 0, err
	}
	if len(t.DataOffsets) != 2 {
		return 0, fmt.Errorf("data_offsets has %d numbers, want 2", len(t.DataOffsets))
	}
	begin, err1 := t.DataOffsets[0].Int64()
	end, err2 := t.DataOffsets[1].Int64()
	switch {
	case err1 != nil || err2 != nil:
		return 0, fmt.Errorf("data_offsets %s, %s are not integers", t.DataOffsets[0], t.DataOffsets[1])
	case begin < 0 || end < begin || end > maxWeightBytes:
		return 0, fmt.Errorf("data_offsets [%d, %d]: want 0 ≤ begin ≤ end ≤ %d", begin, end, int64(maxWeightBytes))
	}
	size := end - begin
	elemBytes, known := safetensorsDTypeBytes[t.DType]
	if !known || t.Shape == nil {
		return size, nil // sub-byte and future dtypes: the offsets alone
	}
	elems := int64(1)
	for _, d := range t.Shape {
		n, err := d.Int64()
		if err != nil || n < 0 {
			return 0, fmt.Errorf("shape has %s, not a size", d)
		}
		if n != 0 && elems > maxWeightBytes/n {
			return 0, fmt.Errorf("shape %v is larger than any checkpoint", t.Shape)
		}
		elems *= n
	}
	if elems*elemBytes != size {
		return 0, fmt.Errorf("shape %v of %s is %d bytes, data_offsets say %d", t.Shape, t.DType, elems*elemBytes, size)
	}
	return size, nil
}

type weightPart uint8

const (
	partLanguage weightPart = iota
	partVision
	partSkipped
)

func tensorPart(name string) weightPart {
	if strings.HasPrefix(name, "mtp.") || strings.Contains(name, ".mtp.") {
		return partSkipped
	}
	for _, s := range []string{"visual.", "vision_tower", "vision_model", "multi_modal_projector", "mm_projector", "audio_tower", "vision_encoder"} {
		if strings.Contains(name, s) {
			return partVision
		}
	}
	return partLanguage
}

// paramCounts counts a model's parameters by how a weight quantization
// treats them: quantized linear weights, and the rest kept in the model dtype.
type paramCounts struct {
	quantized   int64 // linear layers' weights
	experts     int64 // the routed experts' share of quantized
	rows        int64 // output rows of the quantized weights (per-channel scales)
	unquantized int64 // embeddings, lm_head, norms, convolutions, routers
	embedding   int64 // the input embedding's share of unquantized
	head        int64 // lm_head's share of unquantized (0 when tied)
	vision      int64
}

func (m *Model) params() paramCounts {
	var p paramCounts
	h := int64(m.HiddenSize)
	v := int64(m.VocabSize)
	p.unquantized += v * h
	p.embedding = v * h
	if !m.TieWordEmbeddings {
		p.unquantized += v * h
		p.head = v * h
	}
	linear := func(in, out int64) {
		p.quantized += in * out
		p.rows += out
	}
	heads, kv, hd := int64(m.NumAttentionHeads), int64(m.NumKVHeads), int64(m.HeadDim)
	for i, k := range m.Layers {
		hasMLP := true
		switch k {
		case fullAttention, slidingAttention:
			if a := m.MLA; a != nil {
				qk := int64(a.QKNopeHeadDim + a.QKRopeHeadDim)
				if a.QLoraRank > 0 {
					linear(h, int64(a.QLoraRank))
					linear(int64(a.QLoraRank), heads*qk)
				} else {
					linear(h, heads*qk)
				}
				linear(h, int64(a.KVLoraRank+a.QKRopeHeadDim))
				linear(int64(a.KVLoraRank), heads*int64(a.QKNopeHeadDim+a.VHeadDim))
				linear(heads*int64(a.VHeadDim), h)
			} else {
				q := heads * hd
				if m.AttentionOutputGate {
					q *= 2
				}
				linear(h, q)
				linear(h, 2*kv*hd)
				linear(heads*hd, h)
			}
			if m.ModelType == "nemotron_h" {
				hasMLP = false
			}
		case linearAttention:
			g := m.GatedDeltaNet
			key, val := int64(g.NumKeyHeads*g.KeyHeadDim), int64(g.NumValueHeads*g.ValueHeadDim)
			linear(h, 2*key+2*val)
			p.unquantized += h*2*int64(g.NumValueHeads) + (2*key+val)*int64(g.ConvKernel)
			linear(val, h)
		case mambaLayer:
			mb := m.Mamba2
			inner := int64(mb.NumHeads * mb.HeadDim)
			gn := int64(2 * mb.NumGroups * mb.StateSize)
			linear(h, 2*inner+gn+int64(mb.NumHeads))
			p.unquantized += (inner + gn) * int64(mb.ConvKernel)
			linear(inner, h)
			hasMLP = false
		case noCache:
		}
		if !hasMLP {
			continue
		}
		if e := m.MoE; e != nil && i >= e.DenseLayers {
			p.quantized += int64(e.NumExperts) * 3 * h * int64(e.IntermediateSize)
			p.experts += int64(e.NumExperts) * 3 * h * int64(e.IntermediateSize)
			p.rows += int64(e.NumExperts) * (2*int64(e.IntermediateSize) + h)
			if s := int64(e.SharedIntermediateSize); s > 0 {
				linear(h, 2*s)
				linear(s, h)
			}
			p.unquantized += h * int64(e.NumExperts)
		} else if inter := int64(m.IntermediateSize); inter > 0 && m.UngatedMLP {
			linear(h, inter)
			linear(inter, h)
		} else if inter > 0 {
			linear(h, 2*inter)
			linear(inter, h)
		}
	}
	if vis := m.Vision; vis != nil && vis.Depth > 0 {
		vh, vi := int64(vis.HiddenSize), int64(vis.IntermediateSize)
		if vi == 0 {
			vi = 4 * vh
		}
		// Attention (4·h²) and MLP (2·h·i) per block, plus ~5% for the
		// patch embedding and the projector into the language model.
		p.vision = int64(vis.Depth) * (4*vh*vh + 2*vh*vi) * 105 / 100
	}
	return p
}

// estimateWeights returns the bytes of the weights vLLM loads for m under q,
// and how it got them: the checkpoint's tensor sizes when they are known and
// q is the checkpoint's own quantization, else an estimate from the
// architecture.
func (m *Model) estimateWeights(q Quantization, languageOnly bool) (int64, string) {
	if w := m.Weights; w != nil && w.LanguageBytes > 0 && q == m.Quantization {
		n := w.LanguageBytes
		if !languageOnly {
			n += w.VisionBytes
		}
		return n, w.Source
	}
	p := m.params()
	size, err := dtypeSize(m.DType)
	if err != nil {
		size = 2
	}
	var quant float64
	desc := "unquantized"
	switch {
	case q.Bits == 0 || q.Bits >= 16:
		quant = float64(p.quantized) * float64(size)
	case q.Method == "nvfp4":
		// 4-bit values, one fp8 scale per 16, one fp32 scale per tensor.
		quant = float64(p.quantized)*0.5 + float64(p.quantized)/16
		desc = "nvfp4"
	case q.Method == "mxfp4":
		// The routed experts in 4 bits with an 8-bit scale per 32 values;
		// attention and the rest stay in the model dtype (gpt-oss).
		quant = float64(p.experts)*(0.5+1.0/32) + float64(p.quantized-p.experts)*float64(size)
		desc = "mxfp4 experts"
	case q.Bits == 8 && q.GroupSize <= 0:
		quant = float64(p.quantized) + 4*float64(p.rows)
		desc = "8-bit per channel"
	default:
		quant = float64(p.quantized) * float64(q.Bits) / 8
		if q.GroupSize > 0 {
			groups := float64(p.quantized) / float64(q.GroupSize)
			quant += groups * 2 // a 16-bit scale per group
			if !q.Symmetric {
				quant += groups * float64(q.Bits) / 8 // a packed zero point per group
			}
		} else {
			quant += 2 * float64(p.rows)
		}
		desc = fmt.Sprintf("%d-bit", q.Bits)
		if q.GroupSize > 0 {
			desc += fmt.Sprintf(", group %d", q.GroupSize)
		}
	}
	total := quant + float64(p.unquantized)*float64(size)
	detail := fmt.Sprintf("estimated: %.2fB linear params %s + %.2fB others in %s", float64(p.quantized)/1e9, desc, float64(p.unquantized)/1e9, m.DType)
	if !languageOnly && p.vision > 0 {
		total += float64(p.vision * int64(size))
		detail += fmt.Sprintf(" + %.2fB vision encoder", float64(p.vision)/1e9)
	}
	return int64(total), detail
}

// weightsPerGPU returns the weights one GPU holds when m is split over tp
// tensor-parallel ranks and pp pipeline stages, for the last stage (the one
// whose pool is smallest: it holds lm_head, and computes the logits): the
// decoder layers split evenly, the embedding on the first stage, lm_head on
// the last (a copy of the embedding when they are tied).
func (m *Model) weightsPerGPU(q Quantization, languageOnly bool, tp, pp int) (int64, string) {
	n, detail := m.estimateWeights(q, languageOnly)
	tp, pp = max(tp, 1), max(pp, 1)
	if pp == 1 {
		if tp > 1 {
			detail += fmt.Sprintf(", ÷ %d GPUs", tp)
		}
		return n / int64(tp), detail
	}
	p := m.params()
	size := int64(dtypeSizeOr(m.DType, 2))
	embed, head := p.embedding*size, p.head*size
	if head == 0 {
		head = embed
	}
	body := max(n-p.embedding*size-p.head*size, 0)
	stages := ppPartition(len(m.Layers), pp)
	last := stages[len(stages)-1]
	stage := body*int64(last)/int64(len(m.Layers)) + head
	return stage / int64(tp), detail + fmt.Sprintf(", the last of %d pipeline stages (%d of %d layers and lm_head)", pp, last, len(m.Layers)) +
		func() string {
			if tp > 1 {
				return fmt.Sprintf(", ÷ %d GPUs", tp)
			}
			return ""
		}()
}
