package synth

import (
	"fmt"
	"sort"
	"strings"
)

// Shape is a model's architecture and size.
type Shape struct {
	Arch     string // general.architecture: llama (""), qwen2 or phi2
	Dim      int    // embedding length
	FFN      int    // feed-forward length
	Layers   int
	Heads    int
	KVHeads  int
	Vocab    int
	Ctx      int  // context length
	RopeDims int  // rotated dims of a head (phi2); 0: the whole head
	Tied     bool // no output.weight: the logits use token_embd (llama, qwen2)
}

// Presets are named shapes of well-known models.
var Presets = map[string]Shape{
	"tinyllama-1.1b": {Dim: 2048, FFN: 5632, Layers: 22, Heads: 32, KVHeads: 4, Vocab: 32000, Ctx: 2048},
	"15m":            {Dim: 288, FFN: 768, Layers: 6, Heads: 6, KVHeads: 6, Vocab: 32000, Ctx: 2048},
	"260k":           {Dim: 64, FFN: 172, Layers: 5, Heads: 8, KVHeads: 4, Vocab: 512, Ctx: 512},
	"7b":             {Dim: 4096, FFN: 11008, Layers: 32, Heads: 32, KVHeads: 32, Vocab: 32000, Ctx: 4096},
	// Qwen2.5-0.5B: 14 heads of 64, 2 KV heads, tied output, Qwen's
	// 151,936-row vocabulary.
	"qwen2-0.5b": {Arch: "qwen2", Dim: 896, FFN: 4864, Layers: 24, Heads: 14, KVHeads: 2, Vocab: 151936, Ctx: 32768, Tied: true},
	// Phi-2 (2.7B): 32 heads of 80, 32 of them rotated. GPT-2's 50,257
	// tokens instead of phi-2's 51,200 padded rows, so that a GPT-2
	// vocabulary file (../shared/models-arch/synth-phi2-f32.gguf) fits.
	"phi2": {Arch: "phi2", Dim: 2560, FFN: 10240, Layers: 32, Heads: 32, KVHeads: 32, Vocab: 50257, Ctx: 2048, RopeDims: 32},
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

// Validate checks that the shape describes a model llama.cpp can load.
func (s Shape) Validate() error {
	a, err := s.spec()
	if err != nil {
		return err
	}
	if s.Tied && !a.tiedOK {
		return fmt.Errorf("%s models always have an output.weight: tied is not allowed", s.arch())
	}
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
	if r := s.ropeDims(); r%2 != 0 || r > s.HeadDim() || (r != s.HeadDim() && s.arch() != "phi2") {
		return fmt.Errorf("rotated dims %d: must be even and at most the head dimension %d (and all of it but for phi2)", r, s.HeadDim())
	}
	return nil
}

// ropeDims is the rotated part of a head.
func (s Shape) ropeDims() int {
	if s.RopeDims == 0 {
		return s.HeadDim()
	}
	return s.RopeDims
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
// llama.cpp's loader order. Validate must have accepted s.
func (s Shape) tensors() []tensorShape {
	a, _ := s.spec()
	ts := a.global(s)
	for i := 0; i < s.Layers; i++ {
		ts = append(ts, a.layer(s, fmt.Sprintf("blk.%d.", i))...)
	}
	sort.SliceStable(ts, func(i, j int) bool { return llamaLess(ts[i].name, ts[j].name) })
	return ts
}
