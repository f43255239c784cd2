package synth

import (
	"fmt"
	"sort"

	"github.com/weft-ml/weft/gguf"
)

// archSpec is how one architecture's synthetic model differs from
// llama's: its hyperparameter keys and its tensors (llama.cpp's names and
// shapes, as llama_model::load_tensors creates them at c392e5094).
type archSpec struct {
	// keys are the "<arch>." keys besides the shape's sizes.
	keys func(s Shape) []gguf.KV
	// layer lists one layer's tensors, prefix "blk.N.".
	layer func(s Shape, p string) []tensorShape
	// global lists the tensors outside the layers.
	global func(s Shape) []tensorShape
	// tiedOK says whether the architecture may leave output.weight out.
	tiedOK bool
}

var archSpecs = map[string]archSpec{
	"llama": {keys: llamaKeys, layer: llamaLayer, global: rmsGlobal, tiedOK: true},
	// Qwen2 / Qwen2.5: llama's layer with q, k, v biases; NeoX RoPE with
	// base 1e6 (the lowering knows the rotation from the architecture).
	"qwen2": {keys: qwen2Keys, layer: qwen2Layer, global: rmsGlobal, tiedOK: true},
	// Phi-2: LayerNorm with bias, biases everywhere, no gate, partial
	// rotary, untied output with bias.
	"phi2": {keys: phi2Keys, layer: phi2Layer, global: phi2Global},
}

// Architectures lists the architectures synth writes.
func Architectures() []string {
	names := make([]string, 0, len(archSpecs))
	for n := range archSpecs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (s Shape) arch() string {
	if s.Arch == "" {
		return "llama"
	}
	return s.Arch
}

func (s Shape) spec() (archSpec, error) {
	a, ok := archSpecs[s.arch()]
	if !ok {
		return archSpec{}, fmt.Errorf("synth writes no %q models (it writes %v)", s.arch(), Architectures())
	}
	return a, nil
}

func u32(k string, v int) gguf.KV { return gguf.KV{Key: k, Value: gguf.ValueOf(uint32(v))} }
func f32(k string, v float32) gguf.KV {
	return gguf.KV{Key: k, Value: gguf.ValueOf(v)}
}

func llamaKeys(s Shape) []gguf.KV {
	return []gguf.KV{
		u32("llama.rope.dimension_count", s.HeadDim()),
		f32("llama.attention.layer_norm_rms_epsilon", 1e-5),
		f32("llama.rope.freq_base", 10000),
	}
}

func qwen2Keys(Shape) []gguf.KV {
	return []gguf.KV{f32("qwen2.rope.freq_base", 1e6), f32("qwen2.attention.layer_norm_rms_epsilon", 1e-6)}
}

func phi2Keys(s Shape) []gguf.KV {
	return []gguf.KV{u32("phi2.rope.dimension_count", s.ropeDims()), f32("phi2.attention.layer_norm_epsilon", 1e-5)}
}

func llamaLayer(s Shape, p string) []tensorShape {
	d, f, kv := uint64(s.Dim), uint64(s.FFN), uint64(s.KVDim())
	return []tensorShape{
		{p + "attn_norm.weight", []uint64{d}},
		{p + "attn_q.weight", []uint64{d, d}},
		{p + "attn_k.weight", []uint64{d, kv}},
		{p + "attn_v.weight", []uint64{d, kv}},
		{p + "attn_output.weight", []uint64{d, d}},
		{p + "ffn_norm.weight", []uint64{d}},
		{p + "ffn_gate.weight", []uint64{d, f}},
		{p + "ffn_down.weight", []uint64{f, d}},
		{p + "ffn_up.weight", []uint64{d, f}},
	}
}

func qwen2Layer(s Shape, p string) []tensorShape {
	d, kv := uint64(s.Dim), uint64(s.KVDim())
	return append(llamaLayer(s, p),
		tensorShape{p + "attn_q.bias", []uint64{d}},
		tensorShape{p + "attn_k.bias", []uint64{kv}},
		tensorShape{p + "attn_v.bias", []uint64{kv}})
}

func phi2Layer(s Shape, p string) []tensorShape {
	d, f, kv := uint64(s.Dim), uint64(s.FFN), uint64(s.KVDim())
	return []tensorShape{
		{p + "attn_norm.weight", []uint64{d}}, {p + "attn_norm.bias", []uint64{d}},
		{p + "attn_q.weight", []uint64{d, d}}, {p + "attn_q.bias", []uint64{d}},
		{p + "attn_k.weight", []uint64{d, kv}}, {p + "attn_k.bias", []uint64{kv}},
		{p + "attn_v.weight", []uint64{d, kv}}, {p + "attn_v.bias", []uint64{kv}},
		{p + "attn_output.weight", []uint64{d, d}}, {p + "attn_output.bias", []uint64{d}},
		{p + "ffn_down.weight", []uint64{f, d}}, {p + "ffn_down.bias", []uint64{d}},
		{p + "ffn_up.weight", []uint64{d, f}}, {p + "ffn_up.bias", []uint64{f}},
	}
}

// rmsGlobal: the embedding, the final norm and, unless tied, the output.
func rmsGlobal(s Shape) []tensorShape {
	d, v := uint64(s.Dim), uint64(s.Vocab)
	ts := []tensorShape{{"token_embd.weight", []uint64{d, v}}, {"output_norm.weight", []uint64{d}}}
	if !s.Tied {
		ts = append(ts, tensorShape{"output.weight", []uint64{d, v}})
	}
	return ts
}

func phi2Global(s Shape) []tensorShape {
	d, v := uint64(s.Dim), uint64(s.Vocab)
	return []tensorShape{
		{"token_embd.weight", []uint64{d, v}},
		{"output_norm.weight", []uint64{d}}, {"output_norm.bias", []uint64{d}},
		{"output.weight", []uint64{d, v}}, {"output.bias", []uint64{v}},
	}
}
