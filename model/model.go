package model

import (
	"fmt"
	"sort"
	"strings"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	_ "github.com/weft-ml/weft/ops" // registers the op catalogue
)

// Params are the hyperparameters a runtime needs besides the graph.
type Params struct {
	Arch          string  `json:"arch"`
	VocabSize     int     `json:"vocab_size"`
	Embd          int     `json:"embd"`
	Layers        int     `json:"layers"`
	Heads         int     `json:"heads"`
	KVHeads       int     `json:"kv_heads"`
	HeadDim       int     `json:"head_dim"`
	FFN           int     `json:"ffn"`
	CtxTrain      int     `json:"ctx_train"`
	NormEps       float32 `json:"norm_eps"`
	RopeBase      float32 `json:"rope_base"`
	RopeFreqScale float32 `json:"rope_freq_scale"`
	RopeDims      int     `json:"rope_dims"`
	// RopeAttnFactor scales RoPE's cos and sin (rope.scaling.attn_factor;
	// 0 when absent or 1). RopeYaRNCtx is the training context a YaRN scaling
	// extends (rope.scaling.original_context_length, else the context
	// length), 0 unless rope.scaling.type is "yarn".
	RopeAttnFactor float32 `json:"rope_attn_factor,omitempty"`
	RopeYaRNCtx    int     `json:"rope_yarn_ctx,omitempty"`
	// LongRoPECtx, when set, is the context past which llama.cpp reads
	// LongRoPE's long frequency factors instead of its short ones (Phi-3
	// 128k: rope.scaling.original_context_length). LongRoPE reports that
	// this lowering, made for a context past it, reads the long ones. A
	// session's context must stay on its plan's side of LongRoPECtx.
	LongRoPECtx int  `json:"long_rope_ctx,omitempty"`
	LongRoPE    bool `json:"long_rope,omitempty"`

	// Read from the file and checked, not needed after lowering.
	valueDim   int
	ropeFactor float32
	// Read for the lowering (phi3): the attention window and
	// rope.scaling.original_context_length (0 when absent).
	slidingWindow, ropeOrigCtx int
	// Gemma 2's soft-capping of the attention scores and of the logits.
	attnSoftCap, finalSoftCap float32
}

// KVWidth is the width of one token's K (or V) row in a layer's cache.
func (p Params) KVWidth() int { return p.KVHeads * p.HeadDim }

// QWidth is the width of the query projection (heads × head dimension;
// not always the embedding length: Gemma 7B has 16 heads of 256 on 3072).
func (p Params) QWidth() int { return p.Heads * p.HeadDim }

// Lowered is a model's graph plus its parameters.
type Lowered struct {
	Graph  *graph.Graph
	Params Params
}

// Arch is one architecture: the hyperparameters it reads, the tensors it
// has and how it lowers itself from the building blocks of Lowering.
// Adding an architecture is a file with one Arch and one Register call.
type Arch struct {
	// Name is the general.architecture value, also the key prefix.
	Name string
	// Keys are read from "<Name>.<key>" (see commonKeys).
	Keys []Key
	// Check, if set, validates the parameters once the keys are read.
	Check func(p *Params) error
	// Refuse, if set, rejects a file with a feature the lowering does not
	// handle (phi2's fused attn_qkv, Llama 3.1's rope_freqs) with an error
	// that says so, before the tensors are checked.
	Refuse func(f *gguf.File, p Params) error
	// Tensors lists every tensor Lower may read, with its shape for p
	// (p.VocabSize is known by then). Lower reads only declared tensors.
	Tensors func(p Params) []Tensor
	// Lower builds the graph.
	Lower func(l *Lowering) error
}

var archs = map[string]*Arch{}

// Register adds an architecture; registering a name twice is an error.
func Register(a Arch) error {
	if a.Name == "" || a.Tensors == nil || a.Lower == nil {
		return fmt.Errorf("architecture %q: name, Tensors and Lower are required", a.Name)
	}
	if _, dup := archs[a.Name]; dup {
		return fmt.Errorf("architecture %q is registered twice", a.Name)
	}
	archs[a.Name] = &a
	return nil
}

// mustRegister registers a built-in architecture from init: a failure is
// a programming error that every test catches.
func mustRegister(a Arch) {
	if err := Register(a); err != nil {
		panic(err)
	}
}

// Architectures lists the supported architecture names.
func Architectures() []string {
	names := make([]string, 0, len(archs))
	for n := range archs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Supported reports whether weft lowers architecture name.
func Supported(name string) bool { _, ok := archs[name]; return ok }

// UnsupportedError is Lower's error for an architecture it does not know.
type UnsupportedError struct{ Arch string }

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("unsupported architecture %q (supported: %s)", e.Arch, strings.Join(Architectures(), ", "))
}

// Lower builds the graph of the model in f.
func Lower(f *gguf.File) (*Lowered, error) { return LowerFor(f, 0) }

// LowerFor is Lower for a context of ctx tokens (0: unknown, taken as
// small), which an architecture may read as llama.cpp's graph builders
// do: Phi-3's LongRoPE picks its short or long factors by it.
func LowerFor(f *gguf.File, ctx int) (*Lowered, error) {
	name := f.Architecture()
	if name == "" {
		return nil, fmt.Errorf("model has no general.architecture key")
	}
	a, ok := archs[name]
	if !ok {
		return nil, &UnsupportedError{Arch: name}
	}
	l, err := lower(f, a, ctx)
	if err != nil {
		return nil, fmt.Errorf("lowering %s: %w", name, err)
	}
	if err := l.Graph.Verify(); err != nil {
		return nil, fmt.Errorf("lowering %s produced an invalid graph: %w", name, err)
	}
	return l, nil
}

func lower(f *gguf.File, a *Arch, ctx int) (*Lowered, error) {
	p, err := readParams(f, a)
	if err != nil {
		return nil, err
	}
	if p.VocabSize, err = vocabSize(f); err != nil {
		return nil, err
	}
	if a.Refuse != nil {
		if err := a.Refuse(f, p); err != nil {
			return nil, err
		}
	}
	decls, err := checkTensors(f, a.Tensors(p))
	if err != nil {
		return nil, err
	}
	l := newLowering(f, p, decls)
	l.ctx = ctx
	if err := a.Lower(l); err != nil {
		return nil, err
	}
	if err := l.Err(); err != nil { // in case Lower did not return it
		return nil, err
	}
	g, err := l.b.Graph()
	if err != nil {
		return nil, err
	}
	// The parameters a lowering may set.
	p.LongRoPECtx, p.LongRoPE = l.P.LongRoPECtx, l.P.LongRoPE
	return &Lowered{Graph: g, Params: p}, nil
}

// vocabSize is the row count of the token embedding, which every
// architecture here has (its shape is checked with the other tensors).
func vocabSize(f *gguf.File) (int, error) {
	emb, ok := f.Tensor("token_embd.weight")
	if !ok {
		return 0, fmt.Errorf("missing tensor %q", "token_embd.weight")
	}
	if len(emb.Dims) != 2 || emb.Dims[1] == 0 || emb.Dims[1] > maxDim*4 {
		return 0, fmt.Errorf("tensor %q has GGUF dims %v, want [embedding_length, vocabulary size]", "token_embd.weight", emb.Dims)
	}
	return int(emb.Dims[1]), nil
}
