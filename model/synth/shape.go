package synth

import (
	"fmt"
	"sort"
	"strings"
)

// Shape is a llama model's size.
type Shape struct {
	Dim     int // embedding length
	FFN     int // feed-forward length
	Layers  int
	Heads   int
	KVHeads int
	Vocab   int
	Ctx     int // context length
}

// Presets are named shapes of well-known llama models.
var Presets = map[string]Shape{
	"tinyllama-1.1b": {Dim: 2048, FFN: 5632, Layers: 22, Heads: 32, KVHeads: 4, Vocab: 32000, Ctx: 2048},
	"15m":            {Dim: 288, FFN: 768, Layers: 6, Heads: 6, KVHeads: 6, Vocab: 32000, Ctx: 2048},
	"260k":           {Dim: 64, FFN: 172, Layers: 5, Heads: 8, KVHeads: 4, Vocab: 512, Ctx: 512},
	"7b":             {Dim: 4096, FFN: 11008, Layers: 32, Heads: 32, KVHeads: 32, Vocab: 32000, Ctx: 4096},
}

// LookupShape returns the preset called name.
func LookupShape(name string) (Shape, error) {
	s, ok := Presets[strings.ToLower(name)]
	if !ok {
		names := make([]string, 0, len(Presets))
		for n := range Presets {
			names = append(names, n)
		}
		sort.Strings(names)
		return Shape{}, fmt.Errorf("unknown shape %q (known: %s)", name, strings.Join(names, ", "))
	}
	return s, nil
}

// maxSide bounds every size so that products of two stay far from overflow.
const maxSide = 1 << 20

// Validate checks that the shape describes a llama model llama.cpp can load.
func (s Shape) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"dim", s.Dim}, {"ffn", s.FFN}, {"layers", s.Layers}, {"heads", s.Heads}, {"kv-heads", s.KVHeads}, {"vocab-size", s.Vocab}, {"ctx", s.Ctx}} {
		if f.v <= 0 || f.v > maxSide {
			return fmt.Errorf("%s %d out of range (1 to %d)", f.name, f.v, maxSide)
		}
	}
	if s.Dim%s.Heads != 0 {
		return fmt.Errorf("dim %d is not a multiple of heads %d", s.Dim, s.Heads)
	}
	if s.Heads%s.KVHeads != 0 {
		return fmt.Errorf("heads %d is not a multiple of kv-heads %d", s.Heads, s.KVHeads)
	}
	if s.HeadDim()%2 != 0 {
		return fmt.Errorf("head dimension %d must be even for rotary embeddings", s.HeadDim())
	}
	return nil
}

// HeadDim is the size of one attention head.
func (s Shape) HeadDim() int { return s.Dim / s.Heads }

// KVDim is the width of the K and V projections.
func (s Shape) KVDim() int { return s.HeadDim() * s.KVHeads }

// tensorShape is one tensor of the model: dims innermost first.
type tensorShape struct {
	name string
	dims []uint64
}

// tensors lists the model's tensors with llama.cpp's names and shapes, in
// llama order.
func (s Shape) tensors() []tensorShape {
	d, f, kv, v := uint64(s.Dim), uint64(s.FFN), uint64(s.KVDim()), uint64(s.Vocab)
	ts := []tensorShape{
		{"token_embd.weight", []uint64{d, v}},
		{"output_norm.weight", []uint64{d}},
		{"output.weight", []uint64{d, v}},
	}
	for i := 0; i < s.Layers; i++ {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			tensorShape{p + "attn_norm.weight", []uint64{d}},
			tensorShape{p + "attn_q.weight", []uint64{d, d}},
			tensorShape{p + "attn_k.weight", []uint64{d, kv}},
			tensorShape{p + "attn_v.weight", []uint64{d, kv}},
			tensorShape{p + "attn_output.weight", []uint64{d, d}},
			tensorShape{p + "ffn_norm.weight", []uint64{d}},
			tensorShape{p + "ffn_gate.weight", []uint64{d, f}},
			tensorShape{p + "ffn_down.weight", []uint64{f, d}},
			tensorShape{p + "ffn_up.weight", []uint64{d, f}},
		)
	}
	sort.SliceStable(ts, func(i, j int) bool { return llamaLess(ts[i].name, ts[j].name) })
	return ts
}
