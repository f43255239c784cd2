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
}

// KVWidth is the width of one token's K (or V) row in a layer's cache.
func (p Params) KVWidth() int { return p.KVHeads * p.HeadDim }

// Lowered is a model's graph plus its parameters.
type Lowered struct {
	Graph  *graph.Graph
	Params Params
}

// LowerFunc builds the graph of one architecture.
type LowerFunc func(f *gguf.File) (*Lowered, error)

var lowerings = map[string]LowerFunc{}

// Register adds a lowering for an architecture name.
func Register(arch string, fn LowerFunc) { lowerings[arch] = fn }

// Architectures lists the supported architecture names.
func Architectures() []string {
	names := make([]string, 0, len(lowerings))
	for n := range lowerings {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lower builds the graph of the model in f.
func Lower(f *gguf.File) (*Lowered, error) {
	arch := f.Architecture()
	if arch == "" {
		return nil, fmt.Errorf("model has no general.architecture key")
	}
	fn, ok := lowerings[arch]
	if !ok {
		return nil, fmt.Errorf("unsupported architecture %q (supported: %s)", arch, strings.Join(Architectures(), ", "))
	}
	l, err := fn(f)
	if err != nil {
		return nil, fmt.Errorf("lowering %s: %w", arch, err)
	}
	if err := l.Graph.Verify(); err != nil {
		return nil, fmt.Errorf("lowering %s produced an invalid graph: %w", arch, err)
	}
	return l, nil
}

// weights reads weight tensors from a file, checking shapes as it goes.
type weights struct {
	f *gguf.File
	b *graph.Builder
}

// matrix declares the weight tensor name, which must be [rows, cols] in
// weft order (GGUF dims [cols, rows]).
func (w weights) matrix(name string, rows, cols int) (int, error) {
	t, ok := w.f.Tensor(name)
	if !ok {
		return -1, fmt.Errorf("missing tensor %q", name)
	}
	if len(t.Dims) != 2 || t.Dims[0] != uint64(cols) || t.Dims[1] != uint64(rows) {
		return -1, fmt.Errorf("tensor %q has GGUF dims %v, want [%d %d]", name, t.Dims, cols, rows)
	}
	return w.b.Weight(name, graph.Type{DType: t.Type, Shape: graph.S(rows, cols)}), nil
}

// vector declares a 1-D F32 weight of length n (norm weights, biases).
func (w weights) vector(name string, n int) (int, error) {
	t, ok := w.f.Tensor(name)
	if !ok {
		return -1, fmt.Errorf("missing tensor %q", name)
	}
	if len(t.Dims) != 1 || t.Dims[0] != uint64(n) {
		return -1, fmt.Errorf("tensor %q has GGUF dims %v, want [%d]", name, t.Dims, n)
	}
	if t.Type != gguf.TypeF32 {
		return -1, fmt.Errorf("tensor %q has type %s, want F32", name, t.Type)
	}
	return w.b.Weight(name, graph.Type{DType: graph.F32, Shape: graph.S(n)}), nil
}
